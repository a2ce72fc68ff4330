from importlib import import_module

from django.apps import AppConfig


class CurationConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "curation"

    def ready(self) -> None:
        # The researcher's home card (the recipes' datasets), registered once the apps are
        # loaded, as each recipe's RecipeConfig imports its recipe.py.
        import_module("curation.recipes.framework.home")
