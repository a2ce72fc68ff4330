"""Celery jobs of the VHExpansion recipe: thin, id-taking, idempotent (re-runs skip done work)."""

from __future__ import annotations

from celery import shared_task

from annotator.platform.models import Job
from annotator.platform.worker import JOB_OPTIONS, run_job

from . import services

__all__ = [
    "vhx_adversarial",
    "vhx_draft_negations",
    "vhx_export",
    "vhx_import_cases",
    "vhx_perturb",
]


def _case_set(job: Job):
    from ...models.vhexpansion import VHCaseSet

    return VHCaseSet.objects.select_related("project").get(pk=job.params["case_set_id"])


@shared_task(name=services.IMPORT_JOB, **JOB_OPTIONS)
def vhx_import_cases(self, job_id: int) -> None:
    """Import a stored test-case table (+ image archive) as a set, all or nothing."""

    def work(job: Job) -> dict:
        return services.case_set_import_run(
            params=job.params, created_by=job.created_by, job_id=job.pk
        )

    run_job(self, job_id, work)


@shared_task(name=services.NEGATE_JOB, **JOB_OPTIONS)
def vhx_draft_negations(self, job_id: int) -> None:
    """Draft negations (Fig. 3 prompt) for the cases that need one and send them to review."""

    def work(job: Job) -> dict:
        return services.negations_draft(
            case_set=_case_set(job), job_id=job.pk, created_by=job.created_by
        )

    run_job(self, job_id, work)


@shared_task(name=services.PERTURB_JOB, **JOB_OPTIONS)
def vhx_perturb(self, job_id: int) -> None:
    """Common perturbations (App. C) of the set's images."""

    def work(job: Job) -> dict:
        return services.variants_perturb(
            case_set=_case_set(job),
            perturbations=job.params["perturbations"],
            params=job.params.get("params") or {},
            seed=int(job.params.get("seed", 0)),
            job_id=job.pk,
            created_by=job.created_by,
        )

    run_job(self, job_id, work)


@shared_task(name=services.ADVERSARIAL_JOB, **JOB_OPTIONS)
def vhx_adversarial(self, job_id: int) -> None:
    """I-FGSM or PGD (Eq. 1) against a scorer's vision tower; batches commit as they finish."""

    def work(job: Job) -> dict:
        from ...models import Scorer

        params = job.params
        return services.variants_adversarial(
            case_set=_case_set(job),
            scorer=Scorer.objects.get(pk=params["scorer_id"]),
            method=params["method"],
            branch=params.get("branch", services.BRANCH_CASE),
            run_id=params.get("run_id"),
            steps=params.get("steps"),
            seed=int(params.get("seed", 0)),
            job_id=job.pk,
            created_by=job.created_by,
        )

    run_job(self, job_id, work)


@shared_task(name=services.EXPORT_JOB, **JOB_OPTIONS)
def vhx_export(self, job_id: int) -> None:
    """Write the expanded set's zip (Sec. 3, Sec. 5.4 layouts) with its images and store it."""

    def work(job: Job) -> dict:
        from .export import export_run

        return export_run(case_set=_case_set(job), fmt=job.params["fmt"], job_id=job.pk)

    run_job(self, job_id, work)
