from django.apps import AppConfig


class AnnotatorConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "annotator"

    def ready(self) -> None:
        # Register the built-in task kinds, outcome handlers and the answer uploads' media reader
        # (explicit registries, no signals).
        from . import kinds, media, outcomes  # noqa: F401
