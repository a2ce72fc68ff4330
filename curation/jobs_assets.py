"""Celery jobs of the curation assets area (thin, id-taking, idempotent)."""

__all__: list[str] = []
