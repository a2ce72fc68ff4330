"""Starting background jobs: a Job row, and its Celery message sent once the transaction
commits; retrying a failed one; progress a running job reports on its row."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction
from django.utils.translation import gettext as _

from .errors import Conflict
from .models import Job, Project


def job_enqueue(
    *, kind: str, params: dict, created_by=None, project: Project | None = None, total: int = 0
) -> Job:
    """Create the Job row and send it to Celery once the transaction commits."""
    job = Job.objects.create(
        kind=kind,
        params=params,
        created_by=created_by,
        project=project,
        total=total,
        attempt_token=str(uuid.uuid4()),
    )
    job_send(job=job)
    return job


def job_send(*, job: Job) -> None:
    """Send the job's message once the transaction commits. Its Celery id is the job's attempt
    token: ``annotator.platform.worker.run_job`` drops any delivery carrying another (a stale
    one)."""
    kind, job_id, token = job.kind, job.pk, job.attempt_token

    def send() -> None:
        task = job_task(kind)
        if task is None:
            raise LookupError(f"No job kind {kind!r} is registered.")
        task.apply_async(args=[job_id], task_id=token or None)

    transaction.on_commit(send)


def job_task(kind: str):
    """The Celery task of a job kind, or None for a kind no app declares."""
    from celery import current_app

    if kind not in current_app.tasks and not current_app.loader.worker_initialized:
        # Web processes never run the worker's start-up autodiscovery: import every app's
        # jobs.py so the name is registered. Never in a worker (it imported them at start):
        # there the import signal runs django.setup() and Django's checks again, which leaves
        # the pool child silent and the worker handing out no more tasks.
        current_app.loader.import_default_modules()
    return current_app.tasks.get(kind)


def job_retry(*, job: Job, created_by) -> Job:
    """Run a failed job again as a new job with the same parameters (the failed one is kept)."""
    if job.status != Job.Status.FAILED:
        raise Conflict(
            _(
                "Only a failed job can be retried. A job whose worker stopped fails (or runs "
                "again) within two minutes."
            )
        )
    return job_enqueue(
        kind=job.kind,
        params=job.params,
        created_by=created_by,
        project=job.project,
        total=job.total,
    )


def job_progress(
    *, job_id: int | None, done: int, total: int | None = None, message: str = ""
) -> None:
    """Record a running job's progress on its row; nothing when there is no job (``job_id``
    None: the work was called directly, from a test or the CLI)."""
    if not job_id:
        return
    fields: dict[str, Any] = {"done": done}
    if total is not None:
        fields["total"] = total
    if message:
        fields["message"] = message
    Job.objects.filter(pk=job_id).update(**fields)
