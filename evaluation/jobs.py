"""Celery jobs of the evaluation app: thin, id-taking, idempotent (run by
``annotator.platform.worker.run_job``)."""

from __future__ import annotations

from celery import shared_task

from annotator.platform.jobs import job_progress
from annotator.platform.models import Job
from annotator.platform.worker import JOB_OPTIONS, run_job

from . import runners, services
from .models import BenchmarkVersion, JudgmentSet, ModelRun
from .registry import family_of


@shared_task(name=services.IMPORT_JOB, **JOB_OPTIONS)
def import_file(self, job_id: int) -> None:
    """Import a validated upload stored on the Job: a version's items or a run's predictions."""

    def work(job: Job) -> dict:
        job_progress(job_id=job.pk, done=0, total=2, message="Validating and writing")
        result = services.import_run(job.params, created_by=job.created_by, job=job)
        job_progress(job_id=job.pk, done=2, message="Imported")
        return result

    run_job(self, job_id, work)


@shared_task(name=services.COMPUTE_JOB, rerun_safe=True, **JOB_OPTIONS)
def compute_metrics(self, job_id: int) -> None:
    """Compute and store every metric of one run (seeded bootstrap intervals)."""

    def work(job: Job) -> dict:
        run = ModelRun.objects.select_related("version__benchmark").get(pk=job.params["run_id"])

        def progress(done: int, total: int, message: str) -> None:
            job_progress(job_id=job.pk, done=done, total=total, message=message)

        values = services.metrics_compute(run=run, progress=progress)
        return {"run_id": run.pk, "metrics": values}

    run_job(self, job_id, work)


@shared_task(name=services.JUDGMENTS_JOB, **JOB_OPTIONS)
def compute_judgments(self, job_id: int) -> None:
    """Rate every judgment set of one version and measure agreement with the crowd."""

    def work(job: Job) -> dict:
        version = BenchmarkVersion.objects.select_related("benchmark").get(
            pk=job.params["version_id"]
        )

        def progress(done: int, total: int, message: str) -> None:
            job_progress(job_id=job.pk, done=done, total=total, message=message)

        results = services.judgments_compute(version=version, progress=progress)
        return {"version_id": version.pk, "sets": len(results)}

    run_job(self, job_id, work)


@shared_task(name=runners.RUN_JOB, rerun_safe=True, **JOB_OPTIONS)
def run_model(self, job_id: int) -> None:
    """Answer a version's items with a VLM (or a scorer) through the gateway; resumable."""

    def work(job: Job) -> dict:
        params = job.params or {}
        return runners.run_model(
            run_id=params["run_id"],
            job_id=job.pk,
            limit=params.get("limit"),
            rounds=int(params.get("rounds", 1000)),
            text_metrics=bool(params.get("text_metrics", True)),
        )

    run_job(self, job_id, work)


@shared_task(name=runners.JUDGE_JOB, **JOB_OPTIONS)
def judge(self, job_id: int) -> None:
    """Judge pairs in both orders with the version's family judge and rate the version."""

    def work(job: Job) -> dict:
        params = job.params or {}
        judgment_set = JudgmentSet.objects.select_related("version__benchmark").get(
            pk=params["judgment_set_id"]
        )
        judge = family_of(judgment_set.version.benchmark.family).pairwise.judge
        return judge.run(
            judgment_set_id=params["judgment_set_id"],
            pairs=params["pairs"],
            provider_id=params["provider_id"],
            seed=int(params.get("seed", 0)),
            with_reference=bool(params.get("with_reference", False)),
            job_id=job.pk,
            rounds=int(params.get("rounds", 1000)),
            text_metrics=bool(params.get("text_metrics", True)),
        )

    run_job(self, job_id, work)
