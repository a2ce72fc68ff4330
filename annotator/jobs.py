"""Celery jobs of the annotation engine: thin, id-taking, idempotent, retried with backoff
(``annotator.platform.worker.run_job`` runs each). Importing ``sweep_lost_jobs``,
``deliver_webhook`` and ``sweep_webhooks`` here lets the worker's autodiscovery of
``<app>.jobs`` register the platform's tasks."""

from __future__ import annotations

import dataclasses
from functools import partial

from celery import shared_task
from django.contrib.auth import get_user_model
from django.utils.translation import gettext as _

from . import services
from .models import Task, TaskQueue
from .platform.jobs import job_progress
from .platform.models import Job
from .platform.webhooks import deliver_webhook, sweep_webhooks  # noqa: F401
from .platform.worker import JOB_OPTIONS, commit_once, run_job, sweep_lost_jobs  # noqa: F401


@shared_task(name="annotator.expire_leases", acks_late=True, ignore_result=True)
def expire_leases() -> int:
    """Celery beat: return every expired lease to the pool, whatever page is (not) open."""
    return services.leases_expire()


def import_tasks_work(job: Job) -> dict:
    """Validate the rows stored on the Job, then write them all with the job's result in one
    transaction (``commit_once``): all or nothing, and a re-run never imports twice."""
    queue = TaskQueue.objects.get(pk=job.params["queue_id"])
    rows = services.parse_task_rows(job.params["rows"])
    job_progress(job_id=job.pk, done=0, total=len(rows), message="Validating")
    services.validate_task_rows(queue=queue, rows=rows)
    job_progress(job_id=job.pk, done=0, message="Writing")
    result = commit_once(
        job.pk,
        lambda: {
            "created": services.tasks_bulk_create(queue=queue, rows=rows),
            "queue_id": queue.pk,
        },
    )
    job_progress(
        job_id=job.pk, done=result["created"], message=f"Imported {result['created']} tasks"
    )
    return result


@shared_task(name="annotator.import_tasks", rerun_safe=True, **JOB_OPTIONS)
def import_tasks(self, job_id: int) -> None:
    run_job(self, job_id, import_tasks_work)


def _settled(job_id: int, done: int, total: int) -> None:
    """A settle job's progress, once bound to its job's id."""
    job_progress(
        job_id=job_id,
        done=done,
        total=total,
        message=_("%(done)d of %(total)d tasks settled") % {"done": done, "total": total},
    )


def settle_tasks_work(job: Job) -> dict:
    """Decide the tasks a lowered redundancy left complete (``services.tasks_settle``).

    Enqueued by ``services.queue_update`` when there are many; batches commit one by one and
    each task is decided under its row lock, so a redelivered, retried or re-run job continues
    with the tasks still open.
    """
    queue = TaskQueue.objects.filter(pk=job.params["queue_id"]).first()
    if queue is None:  # deleted meanwhile: nothing left to decide
        return {"queue_id": job.params["queue_id"], "decided": 0, "undecided": 0}
    counts = services.tasks_settle(queue=queue, progress=partial(_settled, job.pk))
    return {"queue_id": queue.pk, **counts}


def settle_selection_work(job: Job) -> dict:
    """Settle the tasks a curator selected in the task browser (``services.
    tasks_curator_settle``). Batches commit one by one, each task under its row lock; a
    redelivered or re-run job passes over the tasks settled since the job was created, so no
    task is settled (and no outcome handler run) twice."""
    queue = TaskQueue.objects.filter(pk=job.params["queue_id"]).first()
    by = get_user_model().objects.filter(pk=job.params["by"]).first()
    if queue is None or by is None:  # deleted meanwhile: nothing to settle
        return {"queue_id": job.params["queue_id"], "settled": 0}
    ids = Task.objects.filter(pk__in=job.params["task_ids"], queue=queue).exclude(
        settled_at__gte=job.created_at
    )
    result = services.tasks_curator_settle(
        queue=queue,
        task_ids=list(ids.values_list("id", flat=True)),
        by=by,
        method=job.params["method"],
        reason=job.params["reason"],
        response=job.params["response"],
        progress=partial(_settled, job.pk),
    )
    return {"queue_id": queue.pk, **dataclasses.asdict(result)}


@shared_task(name="annotator.settle_tasks", rerun_safe=True, **JOB_OPTIONS)
def settle_tasks(self, job_id: int) -> None:
    run_job(self, job_id, settle_tasks_work)


@shared_task(name="annotator.settle_selection", rerun_safe=True, **JOB_OPTIONS)
def settle_selection(self, job_id: int) -> None:
    run_job(self, job_id, settle_selection_work)
