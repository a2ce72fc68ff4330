"""Recipes: the published methods as pipelines over the annotation engine, one folder each.

A recipe folder holds ``models.py`` (models only: ``CurationConfig.import_models`` imports it while
apps load, so its models belong to the ``curation`` app) and ``recipe.py``
(``RECIPE = register(Recipe(...))``; ``load``, called by ``CurationConfig.ready``, imports it).
``framework`` is what every recipe stands on. This module imports no app code: it is read while
the app registry is still loading.
"""

import importlib
import pkgutil
from importlib.util import find_spec

FRAMEWORK = "framework"


def folders() -> list[str]:
    """The recipe folders as packages (``curation.recipes.<name>``), the framework aside."""
    return [
        f"{__name__}.{module.name}"
        for module in pkgutil.iter_modules(__path__)
        if module.ispkg and module.name != FRAMEWORK
    ]


def has_module(package: str, name: str) -> bool:
    return find_spec(f"{package}.{name}") is not None


def import_models() -> None:
    """Each recipe's ``models.py`` (app loading, phase 2: no app is ready yet)."""
    for package in folders():
        if has_module(package, "models"):
            importlib.import_module(f"{package}.models")


def load() -> None:
    """Each recipe folder and its ``recipe.py``, which registers the recipe (``ready``)."""
    for package in folders():
        importlib.import_module(package)
        if has_module(package, "recipe"):
            importlib.import_module(f"{package}.recipe")
