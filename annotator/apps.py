from django.apps import AppConfig


class AnnotatorConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "annotator"

    def ready(self) -> None:
        # Register the built-in task kinds and outcome handlers (explicit registries, no signals).
        from . import kinds, outcomes  # noqa: F401
