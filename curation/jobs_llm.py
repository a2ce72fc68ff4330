"""Celery jobs of the curation llm area (thin, id-taking, idempotent)."""

from celery import shared_task

from annotator.platform.worker import JOB_OPTIONS, run_job

from .gateway.batch import batch_run

__all__ = ["generate_batch"]


@shared_task(name="curation.generate_batch", rerun_safe=True, **JOB_OPTIONS)
def generate_batch(self, job_id: int) -> None:
    """Run a batch of generations (``curation.gateway.batch``); items already done are skipped."""
    run_job(self, job_id, lambda job: batch_run(job=job))
