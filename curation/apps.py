from django.apps import AppConfig


class CurationConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "curation"

    def ready(self) -> None:
        # Registers the recipes' outcome handlers and offline rules (explicit registries).
        from . import recipes  # noqa: F401
