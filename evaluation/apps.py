from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "evaluation"

    def ready(self) -> None:
        # Registers every benchmark family (and with it the official evaluation prompts and
        # their offline rules) in every process.
        from . import families

        families.load()
