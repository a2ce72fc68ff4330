"""What makes a Django app a recipe: its ``apps.py`` subclasses ``RecipeConfig``.

A recipe is installed by naming its package in ``INSTALLED_APPS`` (one line); ``ready`` imports
its ``recipe.py``, whose ``register(Recipe(...))`` adds its outcome handlers, Celery tasks and
pages. The framework finds the installed recipes by their config (``installed``), never by a list.
"""

from __future__ import annotations

from importlib import import_module

from django.apps import AppConfig, apps


class RecipeConfig(AppConfig):
    """Subclass it in ``<recipe>/apps.py`` with ``name`` (the package) and ``label`` (the key)."""

    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        import_module(f"{self.name}.recipe")


def installed() -> list[RecipeConfig]:
    """The recipe apps in ``INSTALLED_APPS``, in their order there."""
    return [config for config in apps.get_app_configs() if isinstance(config, RecipeConfig)]
