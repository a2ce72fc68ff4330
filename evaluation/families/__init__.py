"""The benchmark families: one subpackage each, registered in ``evaluation.registry``.

``EvaluationConfig.ready`` calls ``load()``; nothing else imports a family by name except the
family's own tests and the recipes that publish to it (they sit above evaluation).
"""

import importlib
import pkgutil


def load() -> None:
    """Import every family subpackage once; each registers its ``Family`` on import."""
    for module in pkgutil.iter_modules(__path__):
        if module.ispkg:
            importlib.import_module(f"{__name__}.{module.name}")
