"""Celery jobs of the curation llm area (thin, id-taking, idempotent)."""

__all__: list[str] = []
