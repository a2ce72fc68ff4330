from django.apps import AppConfig

from . import recipes


class CurationConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "curation"

    def import_models(self) -> None:
        """curation/models plus each recipe folder's models.py: models of this app by
        containment (label ``curation``, tables unchanged)."""
        super().import_models()
        recipes.import_models()

    def ready(self) -> None:
        # Registers every recipe: its outcome handlers, Celery tasks and pages (registries).
        recipes.load()
