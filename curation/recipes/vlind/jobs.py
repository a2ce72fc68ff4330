"""Celery jobs of the VLind-Bench recipe: thin, id-taking, idempotent (re-runs skip done work)."""

from __future__ import annotations

from celery import shared_task

from annotator.platform.models import Job
from annotator.platform.worker import JOB_OPTIONS, run_job

from . import services

__all__ = [
    "vlind_draft_nouns",
    "vlind_draft_triples",
    "vlind_export",
    "vlind_generate_images",
]


def _bench(job: Job):
    from ...models.vlind import VLindBench

    return VLindBench.objects.select_related("project", "image_provider").get(
        pk=job.params["bench_id"]
    )


@shared_task(name=services.DRAFT_JOB, **JOB_OPTIONS)
def vlind_draft_triples(self, job_id: int) -> None:
    """Draft instance triples per concept (App. A prompt) and send them to review."""

    def work(job: Job) -> dict:
        return services.triples_draft(
            bench=_bench(job),
            concept_ids=job.params.get("concept_ids") or None,
            count=job.params.get("count"),
            job_id=job.pk,
            created_by=job.created_by,
        )

    run_job(self, job_id, work)


@shared_task(name=services.IMAGES_JOB, **JOB_OPTIONS)
def vlind_generate_images(self, job_id: int) -> None:
    """Counterfactual images in three styles (and missing factual images) from the endpoint."""

    def work(job: Job) -> dict:
        return services.images_generate(bench=_bench(job), job_id=job.pk, created_by=job.created_by)

    run_job(self, job_id, work)


@shared_task(name=services.NOUNS_JOB, **JOB_OPTIONS)
def vlind_draft_nouns(self, job_id: int) -> None:
    """Key and absent nouns for the VP statements (App. A prompt)."""

    def work(job: Job) -> dict:
        return services.nouns_draft(bench=_bench(job), job_id=job.pk, created_by=job.created_by)

    run_job(self, job_id, work)


@shared_task(name=services.EXPORT_JOB, **JOB_OPTIONS)
def vlind_export(self, job_id: int) -> None:
    """Write the data.json archive (Sec. 3-4, App. B) with its images and store it."""

    def work(job: Job) -> dict:
        from .export import export_run

        return export_run(
            bench=_bench(job),
            version_id=job.params.get("version_id"),
            appendix_b=bool(job.params.get("appendix_b")),
            job_id=job.pk,
        )

    run_job(self, job_id, work)
