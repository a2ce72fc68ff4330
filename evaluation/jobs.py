"""Celery jobs of the evaluation app: thin, id-taking, idempotent. Each task is the one style
every job has here and in the recipes' dispatcher (``curation/recipes/framework/jobs.py``):
``run_job(self, job_id, <work>)``, where ``<work>(job) -> dict`` is a module-level function that
loads what the job's params name and calls one service (run by
``annotator.platform.worker.run_job``: claimed once, heartbeat, progress, errors on the row)."""

from __future__ import annotations

from functools import partial

from celery import shared_task

from annotator.platform.jobs import job_progress
from annotator.platform.models import Job
from annotator.platform.worker import JOB_OPTIONS, run_job

from . import runners, services
from .models import BenchmarkVersion, JudgmentSet, ModelRun
from .registry import family_of


def _progress(job_id: int, done: int, total: int, message: str) -> None:
    """A service's ``progress(done, total, message)``, once bound to its job's id."""
    job_progress(job_id=job_id, done=done, total=total, message=message)


def import_work(job: Job) -> dict:
    """A validated upload stored on the Job: a version's items or a run's predictions."""
    job_progress(job_id=job.pk, done=0, total=2, message="Validating and writing")
    result = services.import_run(job.params, created_by=job.created_by, job=job)
    job_progress(job_id=job.pk, done=2, message="Imported")
    return result


def compute_work(job: Job) -> dict:
    """Every metric of one run (seeded bootstrap intervals)."""
    run = ModelRun.objects.select_related("version__benchmark").get(pk=job.params["run_id"])
    values = services.metrics_compute(run=run, progress=partial(_progress, job.pk))
    return {"run_id": run.pk, "metrics": values}


def judgments_work(job: Job) -> dict:
    """Every judgment set of one version rated, and its agreement with the crowd measured."""
    version = BenchmarkVersion.objects.select_related("benchmark").get(pk=job.params["version_id"])
    results = services.judgments_compute(version=version, progress=partial(_progress, job.pk))
    return {"version_id": version.pk, "sets": len(results)}


def run_model_work(job: Job) -> dict:
    """A version's items answered by a VLM (or a scorer) through the gateway; resumable."""
    params = job.params or {}
    return runners.run_model(
        run_id=params["run_id"],
        job_id=job.pk,
        limit=params.get("limit"),
        rounds=int(params.get("rounds", 1000)),
        text_metrics=bool(params.get("text_metrics", True)),
    )


def judge_work(job: Job) -> dict:
    """Pairs judged in both orders by the version's family judge, and the version rated."""
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


@shared_task(name=services.IMPORT_JOB, **JOB_OPTIONS)
def import_file(self, job_id: int) -> None:
    run_job(self, job_id, import_work)


@shared_task(name=services.COMPUTE_JOB, rerun_safe=True, **JOB_OPTIONS)
def compute_metrics(self, job_id: int) -> None:
    run_job(self, job_id, compute_work)


@shared_task(name=services.JUDGMENTS_JOB, **JOB_OPTIONS)
def compute_judgments(self, job_id: int) -> None:
    run_job(self, job_id, judgments_work)


@shared_task(name=runners.RUN_JOB, rerun_safe=True, **JOB_OPTIONS)
def run_model(self, job_id: int) -> None:
    run_job(self, job_id, run_model_work)


@shared_task(name=runners.JUDGE_JOB, **JOB_OPTIONS)
def judge(self, job_id: int) -> None:
    run_job(self, job_id, judge_work)
