"""Celery jobs of the NaturalBench recipe: one per stage, thin, id-taking and idempotent (each
stage skips the work that is already done)."""

from __future__ import annotations

from celery import shared_task

from annotator.platform.models import Job
from annotator.platform.worker import JOB_OPTIONS, run_job

from . import services

__all__ = [
    "nb_assemble",
    "nb_draft",
    "nb_export",
    "nb_mine",
    "nb_tag",
    "nb_verify",
]


def _run(celery_task, job_id: int, stage: str) -> None:
    def work(job: Job) -> dict:
        from ...models import NaturalBenchPipeline

        pipeline = NaturalBenchPipeline.objects.select_related("project", "corpus").get(
            pk=job.params["pipeline_id"]
        )
        extra = {k: v for k, v in job.params.items() if k == "label"}
        return services.stage_run(
            pipeline=pipeline, stage=stage, job_id=job.pk, created_by=job.created_by, **extra
        )

    run_job(celery_task, job_id, work)


@shared_task(name=services.MINE_JOB, **JOB_OPTIONS)
def nb_mine(self, job_id: int) -> None:
    """Shorten long captions, embed, mine confounding pairs (Eq. 1) or random pairs."""
    _run(self, job_id, "mine")


@shared_task(name=services.VERIFY_JOB, **JOB_OPTIONS)
def nb_verify(self, job_id: int) -> None:
    """Send the mined pairs to the pair verification queue."""
    _run(self, job_id, "verify")


@shared_task(name=services.DRAFT_JOB, **JOB_OPTIONS)
def nb_draft(self, job_id: int) -> None:
    """Draft (or draft again) the questions of verified pairs and send them to be answered."""
    _run(self, job_id, "draft")


@shared_task(name=services.ASSEMBLE_JOB, **JOB_OPTIONS)
def nb_assemble(self, job_id: int) -> None:
    """Assemble kept questions into checked 2 × 2 samples."""
    _run(self, job_id, "assemble")


@shared_task(name=services.TAG_JOB, **JOB_OPTIONS)
def nb_tag(self, job_id: int) -> None:
    """Send the assembled samples' questions to skill tagging."""
    _run(self, job_id, "tag")


@shared_task(name=services.EXPORT_JOB, **JOB_OPTIONS)
def nb_export(self, job_id: int) -> None:
    """Freeze a content-hashed dataset version and its evaluation benchmark version."""
    _run(self, job_id, "export")
