"""Celery jobs of the curation assets area (thin, id-taking, idempotent)."""

from __future__ import annotations

from celery import shared_task

from annotator.platform.models import Job
from annotator.platform.worker import JOB_OPTIONS, run_job

from . import assets, corpora

__all__ = ["import_corpus", "make_thumbnails"]


@shared_task(name=corpora.IMPORT_JOB, **JOB_OPTIONS)
def import_corpus(self, job_id: int) -> None:
    """Import a stored archive (+ manifest) as a corpus, all or nothing."""

    def work(job: Job) -> dict:
        return corpora.corpus_import_run(
            params=job.params, created_by=job.created_by, job_id=job.pk
        )

    run_job(self, job_id, work)


@shared_task(name=assets.THUMBNAIL_JOB, rerun_safe=True, **JOB_OPTIONS)
def make_thumbnails(self, job_id: int) -> None:
    """256 px WEBP thumbnails for ``params["image_ids"]``; images that have one are skipped."""

    def work(job: Job) -> dict:
        return assets.thumbnails_make(image_ids=job.params.get("image_ids", []), job_id=job.pk)

    run_job(self, job_id, work)
