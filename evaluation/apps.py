from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "evaluation"

    def ready(self) -> None:
        # Registers the official evaluation prompts' offline rules in every process.
        from . import prompts  # noqa: F401
