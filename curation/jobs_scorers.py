"""Celery jobs of the curation scorers area (thin, id-taking, idempotent)."""

__all__: list[str] = []
