"""Celery jobs of the annotation engine: thin, id-taking, idempotent, retried with backoff.

Every job that a person starts has a ``Job`` row; ``run_job`` moves it through its states so the
jobs page can show live progress and errors.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from celery import shared_task
from django.db import InterfaceError, OperationalError
from django.utils import timezone
from django.utils.translation import gettext as _

from . import services
from .models import Job, TaskQueue

log = logging.getLogger(__name__)
TRANSIENT = (OperationalError, InterfaceError, ConnectionError, TimeoutError)
JOB_OPTIONS: dict[str, Any] = {
    "bind": True,
    "acks_late": True,
    "autoretry_for": TRANSIENT,
    "retry_backoff": True,
    "retry_backoff_max": 300,
    "retry_jitter": True,
    "max_retries": 5,
}


def run_job(celery_task, job_id: int, work: Callable[[Job], Any]) -> None:
    """Run ``work`` for a Job row once: finished jobs are left alone (idempotent redelivery)."""
    job = Job.objects.filter(pk=job_id).first()
    if job is None or job.is_finished:
        return
    Job.objects.filter(pk=job_id).update(
        status=Job.Status.RUNNING, started_at=timezone.now(), attempts=job.attempts + 1, error=""
    )
    try:
        result = work(job)
    except TRANSIENT as exc:
        retries = getattr(celery_task.request, "retries", 0)
        if retries >= JOB_OPTIONS["max_retries"]:
            _fail(job_id, f"Gave up after {retries + 1} attempts: {exc}")
            return
        Job.objects.filter(pk=job_id).update(
            status=Job.Status.QUEUED, message=f"Temporary failure, retrying: {exc}"
        )
        raise
    except services.Invalid as exc:
        detail = "\n".join(f"line {e['line']}: {e['error']}" for e in exc.errors[:50])
        _fail(job_id, f"{exc.message}\n{detail}".strip())
        return
    except Exception as exc:  # noqa: BLE001 - a job records every failure for the jobs page
        log.exception("job %s failed", job_id)
        _fail(job_id, f"{type(exc).__name__}: {exc}")
        return
    Job.objects.filter(pk=job_id).update(
        status=Job.Status.SUCCEEDED, finished_at=timezone.now(), result=result
    )


def _fail(job_id: int, error: str) -> None:
    Job.objects.filter(pk=job_id).update(
        status=Job.Status.FAILED, finished_at=timezone.now(), error=error
    )


@shared_task(name="annotator.expire_leases", acks_late=True, ignore_result=True)
def expire_leases() -> int:
    """Celery beat: return every expired lease to the pool, whatever page is (not) open."""
    return services.leases_expire()


@shared_task(name="annotator.import_tasks", **JOB_OPTIONS)
def import_tasks(self, job_id: int) -> None:
    """Import a validated JSONL upload stored on the Job (all or nothing)."""

    def work(job: Job) -> dict:
        queue = TaskQueue.objects.get(pk=job.params["queue_id"])
        rows = services.parse_task_rows(job.params["rows"])
        services.job_progress(job_id=job.pk, done=0, total=len(rows), message="Validating")
        services.validate_task_rows(queue=queue, rows=rows)
        services.job_progress(job_id=job.pk, done=0, message="Writing")
        created = services.tasks_bulk_create(queue=queue, rows=rows)
        services.job_progress(job_id=job.pk, done=created, message=f"Imported {created} tasks")
        return {"created": created, "queue_id": queue.pk}

    run_job(self, job_id, work)


@shared_task(name="annotator.settle_tasks", **JOB_OPTIONS)
def settle_tasks(self, job_id: int) -> None:
    """Decide the tasks a lowered redundancy left complete (``services.tasks_settle``).

    Enqueued by ``services.queue_update`` when there are many; batches commit one by one, so
    a redelivered or retried job continues with the tasks still open.
    """

    def work(job: Job) -> dict:
        queue = TaskQueue.objects.filter(pk=job.params["queue_id"]).first()
        if queue is None:  # deleted meanwhile: nothing left to decide
            return {"queue_id": job.params["queue_id"], "decided": 0, "undecided": 0}

        def report(done: int, total: int) -> None:
            services.job_progress(
                job_id=job.pk,
                done=done,
                total=total,
                message=_("%(done)d of %(total)d tasks settled") % {"done": done, "total": total},
            )

        counts = services.tasks_settle(queue=queue, progress=report)
        return {"queue_id": queue.pk, **counts}

    run_job(self, job_id, work)
