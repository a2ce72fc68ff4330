"""Celery jobs of the VisIT-Bench recipe: thin, id-taking, idempotent (re-runs skip done work)."""

from __future__ import annotations

from celery import shared_task

from annotator.platform.models import Job
from annotator.platform.worker import JOB_OPTIONS, run_job

from . import services

__all__ = [
    "visit_draft_references",
    "visit_export",
    "visit_fetch_images",
    "visit_import",
    "visit_sync_votes",
]


def _pipeline(job: Job):
    from ...models.visit import VisitPipeline

    return VisitPipeline.objects.select_related("project", "provider").get(
        pk=job.params["pipeline_id"]
    )


@shared_task(name=services.IMPORT_JOB, **JOB_OPTIONS)
def visit_import(self, job_id: int) -> None:
    """Import a checked dataset CSV (categories → families, rows → instances), all or nothing."""

    def work(job: Job) -> dict:
        return services.dataset_import_run(
            params=job.params, created_by=job.created_by, job_id=job.pk
        )

    run_job(self, job_id, work)


@shared_task(name=services.FETCH_JOB, **JOB_OPTIONS)
def visit_fetch_images(self, job_id: int) -> None:
    """Fetch remote images when reachable (short timeout); the rest stay links."""

    def work(job: Job) -> dict:
        return services.images_fetch(
            pipeline=_pipeline(job),
            job_id=job.pk,
            retry_failed=bool(job.params.get("retry_failed")),
        )

    run_job(self, job_id, work)


@shared_task(name=services.DRAFT_JOB, **JOB_OPTIONS)
def visit_draft_references(self, job_id: int) -> None:
    """Draft references (Sec. 2.1 prompt) for captioned instances and send them to review."""

    def work(job: Job) -> dict:
        return services.references_draft(
            pipeline=_pipeline(job), job_id=job.pk, created_by=job.created_by
        )

    run_job(self, job_id, work)


@shared_task(name=services.SYNC_JOB, **JOB_OPTIONS)
def visit_sync_votes(self, job_id: int) -> None:
    """Give the evaluation app the rated tuples as crowd votes and rate the version again."""

    def work(job: Job) -> dict:
        return services.human_votes_sync(pipeline=_pipeline(job), job_id=job.pk)

    run_job(self, job_id, work)


@shared_task(name=services.EXPORT_JOB, **JOB_OPTIONS)
def visit_export(self, job_id: int) -> None:
    """Write the version (or the crowd's votes) in the published layout and store the file."""

    def work(job: Job) -> dict:
        from .export import export_run

        return export_run(
            pipeline=_pipeline(job),
            what=job.params["what"],
            fmt=job.params["fmt"],
            job_id=job.pk,
        )

    run_job(self, job_id, work)
