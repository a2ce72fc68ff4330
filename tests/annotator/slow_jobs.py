"""Test-only job kinds: an import that first works quietly for ``params["sleep_s"]`` seconds
(no progress update, so only the heartbeat thread shows it is alive). A worker loads them with
``-I tests.annotator.slow_jobs``; one kind is declared safe to run again, its twin is not."""

from __future__ import annotations

import time

from celery import shared_task

from annotator.jobs import import_tasks_work
from annotator.platform.models import Job
from annotator.platform.worker import JOB_OPTIONS, run_job

SAFE = "tests.slow_import"
UNSAFE = "tests.slow_import_unsafe"


def _slow_import(job: Job) -> dict:
    deadline = time.monotonic() + float(job.params["sleep_s"])
    while time.monotonic() < deadline:
        time.sleep(0.1)
    return import_tasks_work(job)


@shared_task(name=SAFE, rerun_safe=True, **JOB_OPTIONS)
def slow_import(self, job_id: int) -> None:
    run_job(self, job_id, _slow_import)


@shared_task(name=UNSAFE, **JOB_OPTIONS)
def slow_import_unsafe(self, job_id: int) -> None:
    run_job(self, job_id, _slow_import)
