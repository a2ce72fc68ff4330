"""Starting background jobs: a Job row, and its Celery message sent once the transaction
commits; retrying a failed one; progress a running job reports on its row."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from . import background
from .errors import Conflict, clip
from .models import Job, Project

log = logging.getLogger(__name__)


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
    """Send the job's message once the transaction commits (the outbox: the row is there first,
    whatever happens to the send). Its Celery id is the job's attempt token:
    ``annotator.platform.worker.run_job`` drops any delivery carrying another (a stale one)."""
    job_id, kind, token = job.pk, job.kind, job.attempt_token
    transaction.on_commit(lambda: job_deliver(job_id=job_id, kind=kind, token=token))


def job_deliver(*, job_id: int, kind: str, token: str) -> bool:
    """Hand a committed job's message to the broker now. When the broker cannot take it (Redis
    down), the job stays queued and "waiting to be sent" (``send_error``): the lost-job sweep
    sends it as soon as the broker answers, and the request that started it is told (an API
    call answers 503, a page says so). True when the broker took it."""
    task = job_task(kind)
    if task is None:
        raise LookupError(f"No job kind {kind!r} is registered.")
    if task.app.conf.task_always_eager:
        # Run in-process (the demo, tests): nothing to send, errors are the job's own. The demo's
        # server runs it in its embedded worker (``background``), anything else right here.
        Job.objects.filter(pk=job_id, sent_at=None).update(sent_at=timezone.now())
        if background.enabled():
            background.submit(task, job_id, token)
        else:
            task.apply_async(args=[job_id], task_id=token or None)
        return True
    if _INLINE.get():  # a job a command runs in its own process, its chunk jobs with it
        Job.objects.filter(pk=job_id, sent_at=None).update(sent_at=timezone.now())
        task.apply(args=[job_id], task_id=token or None)
        return True
    try:
        task.apply_async(args=[job_id], task_id=token or None)
    except Exception as exc:  # noqa: BLE001 - whatever the broker's failure, the job waits
        log.warning("job %s: not sent (%s); it waits for the broker", job_id, exc)
        Job.objects.filter(pk=job_id, status=Job.Status.QUEUED).update(
            send_error=clip(f"{type(exc).__name__}: {exc}"),
            message=str(WAITING),
        )
        unsent = _UNSENT.get()
        if unsent is not None:
            unsent.append(job_id)
        return False
    Job.objects.filter(pk=job_id).update(sent_at=timezone.now(), send_error="")
    return True


WAITING = gettext_lazy(
    "Waiting to be sent: the task queue (Redis) did not answer. The job is kept and starts as "
    "soon as the queue answers again; nothing needs to be done."
)
# The jobs a request started that could not be sent (``collect_unsent``), for its answer.
_UNSENT: ContextVar[list[int] | None] = ContextVar("blindspot_unsent_jobs", default=None)


# Jobs sent within ``jobs_inline()`` run at once in this process instead of going to the broker.
_INLINE: ContextVar[bool] = ContextVar("blindspot_jobs_inline", default=False)


@contextmanager
def jobs_inline() -> Iterator[None]:
    """Within the block, every job sent (a job's chunk jobs, the job going on after them) runs
    in this process, as a command or the demo runs a job without a broker."""
    token = _INLINE.set(True)
    try:
        yield
    finally:
        _INLINE.reset(token)


def jobs_inline_active() -> bool:
    return _INLINE.get()


@contextmanager
def collect_unsent() -> Iterator[list[int]]:
    """Within the block, the ids of the jobs whose send failed are gathered in the yielded list
    (the edge answers a request that started one with 503)."""
    unsent: list[int] = []
    token = _UNSENT.set(unsent)
    try:
        yield unsent
    finally:
        _UNSENT.reset(token)


def job_resend(*, job: Job) -> bool:
    """A person's retry of a job waiting to be sent: try the broker again now."""
    if not job.waiting_to_send:
        raise Conflict(_("Only a job waiting to be sent can be sent again."))
    return job_deliver(job_id=job.pk, kind=job.kind, token=job.attempt_token)


def jobs_send_pending(*, now=None, limit: int = 500) -> int:
    """Send the jobs waiting to be sent: those whose send failed, and queued jobs never sent
    a while after their creation (a process that died between the commit and the send). Each
    keeps its attempt token, so a message that did reach the broker after all runs it once."""
    now = now or timezone.now()
    grace = timedelta(seconds=settings.BLINDSPOT_JOB_LOST_AFTER_S)
    pending = Job.objects.filter(status=Job.Status.QUEUED, sent_at=None).filter(
        ~Q(send_error="") | Q(created_at__lt=now - grace)
    )
    sent = 0
    for job_id, kind, token in pending.order_by("pk").values_list("pk", "kind", "attempt_token")[
        :limit
    ]:
        if not job_deliver(job_id=job_id, kind=kind, token=token):
            break  # the broker is still down: the next sweep tries again
        sent += 1
    return sent


# What a job kind does when the platform fails one of its jobs (an error the job did not
# handle, or its worker stopped and the lost-job sweep gave up on it): ``handler(job_id=,
# error=)``, in the transaction that fails it. A hunt item waiting for its models says it
# failed, wherever it is counted, without its page having to be read.
FailedHandler = Callable[..., None]
_FAILED: dict[str, FailedHandler] = {}


def job_failed_handler(kind: str, handler: FailedHandler | None) -> None:
    """Call ``handler(job_id=, error=)`` whenever the platform fails a job of ``kind`` (None:
    no longer)."""
    if handler is None:
        _FAILED.pop(kind, None)
    else:
        _FAILED[kind] = handler


def job_failed_notify(*, job_id: int, kind: str, error: str) -> None:
    handler = _FAILED.get(kind)
    if handler is not None:
        handler(job_id=job_id, error=error)


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


# Work that reports its progress to a callable rather than a job's row: (done, total, message).
ProgressFn = Callable[[int, int, str], None]
ProgressListener = Callable[[int, int, "int | None", str], None]
# Who else hears of progress in this process (a command's terminal bars, ``terminal.job_bars``).
_LISTENERS: list[ProgressListener] = []


def job_progress(
    *, job_id: int | None, done: int, total: int | None = None, message: str = ""
) -> None:
    """Record a running job's progress on its row, and tell this process's listeners; nothing
    when there is no job (``job_id`` None: the work was called directly, from a test or the
    CLI)."""
    if not job_id:
        return
    fields: dict[str, Any] = {"done": done}
    if total is not None:
        fields["total"] = total
    if message:
        fields["message"] = message
    Job.objects.filter(pk=job_id).update(**fields)
    for listener in list(_LISTENERS):
        listener(job_id, done, total, message)


def progress_final(*, job_id: int) -> None:
    """Tell this process's listeners the count and message a job ended with (a job that
    reported nothing on the way still ends its bar)."""
    if not _LISTENERS:
        return
    row = Job.objects.filter(pk=job_id).values_list("done", "total", "message").first()
    if row is not None:
        for listener in list(_LISTENERS):
            listener(job_id, *row)


@contextmanager
def progress_listening(listener: ProgressListener) -> Iterator[None]:
    """Within the block, ``listener(job_id, done, total, message)`` hears every progress report
    of the jobs this process runs (``total`` None: unchanged)."""
    _LISTENERS.append(listener)
    try:
        yield
    finally:
        _LISTENERS.remove(listener)
