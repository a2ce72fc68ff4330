"""The job worker: every Celery job runs through ``run_job``: thin, id-taking, idempotent,
retried with backoff.

Every job that a person starts has a ``Job`` row; ``run_job`` moves it through its states so the
jobs page can show live progress and errors.

Lost workers. A worker killed as a whole (``kill -9``, an out-of-memory kill, a lost machine)
acknowledges nothing and marks nothing: its jobs would stay "Running" until the broker hands
their messages out again (on Redis, after the visibility timeout). So ``run_job`` beats on the
Job row while the work runs (``heartbeat_at``, from a thread: work can go a long time without a
progress update), and the beat task ``sweep_lost_jobs`` takes the jobs that fell silent: a kind
declared ``rerun_safe=True`` (``@shared_task(..., rerun_safe=True, **JOB_OPTIONS)``: running it
again never writes anything twice) is sent again while attempts remain; any other fails with
"The worker stopped", and the jobs page offers a retry. One run at a time: each message carries
the Job's ``attempt_token`` as its Celery id, and a delivery with another id (an old message
coming back), or one for a job whose worker still beats (a second copy), is dropped under the
row lock.
"""

from __future__ import annotations

import functools
import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from celery import shared_task
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import InterfaceError, OperationalError, connection, connections, transaction
from django.db.models import Case, F, Q, TextField, Value, When
from django.db.models.functions import Greatest
from django.utils import timezone

from .chunks import FanOut, chunk_ended, chunks_park, job_work_delete_later, jobs_work_sweep
from .errors import Invalid
from .jobs import job_failed_notify, job_send, job_task, jobs_send_pending, progress_final
from .models import Job
from .sql_rows import Shape
from .webhooks import job_event_emit

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
WORKER_STOPPED = "The worker stopped"
FINISHED = "Finished"


def run_job(celery_task, job_id: int, work: Callable[[Job], Any]) -> None:
    """Run ``work`` for a Job row once: finished jobs, stale deliveries and second copies of a
    running job are left alone (idempotent redelivery)."""
    claim = _claim(celery_task, job_id)
    if claim is None:
        return
    token, job = claim
    if job is None:
        # The row as claimed, with who started it (every stage reads ``created_by``): one query.
        job = Job.objects.select_related("created_by").get(pk=job_id)
    # Only this run's writes land: a run the sweeper gave up on cannot overwrite its successor.
    mine = Job.objects.filter(pk=job_id, attempt_token=token)
    heartbeats.hold(job_id, token)
    try:
        try:
            result = work(job)
        finally:
            heartbeats.release(job_id, token)
    except TRANSIENT as exc:
        retries = getattr(celery_task.request, "retries", 0)
        if retries >= JOB_OPTIONS["max_retries"]:
            _fail(mine, f"Gave up after {retries + 1} attempts: {exc}")
            return
        # Queued for a retry held by this worker: the sweeper allows for the retry countdown.
        mine.update(
            status=Job.Status.QUEUED,
            message=f"Temporary failure, retrying: {exc}",
            heartbeat_at=timezone.now(),
        )
        raise
    except Invalid as exc:
        detail = "\n".join(f"line {e['line']}: {e['error']}" for e in exc.errors[:50])
        _fail(mine, f"{exc.message}\n{detail}".strip())
        return
    except Exception as exc:  # noqa: BLE001 - a job records every failure for the jobs page
        log.exception("job %s failed", job_id)
        _fail(mine, f"{type(exc).__name__}: {exc}")
        return
    if isinstance(result, FanOut):  # the work goes on in chunk jobs; this run ends here
        chunks_park(job_id=job_id, token=token, fan_out=result)
        return
    with transaction.atomic():
        if _succeed(job_id, token, result):
            progress_final(job_id=job_id)
            job_event_emit(job_id=job_id)
            if job.parent_id is None:  # a job's parent is set at its creation, never later
                job_work_delete_later(job_id=job_id)
            else:
                chunk_ended(job_id=job_id)


def _finished_counts() -> dict[str, Any]:
    """What a succeeded job's row shows, whatever its work last reported: its final count
    (done = total; a job that counted past its estimate, or had none, shows what it did) and,
    unless its work's last report was a final one (a count that reached its total, e.g.
    "Imported 12 tasks"), ``FINISHED`` instead of a message about a step in progress
    ("Writing the records", "Rating") or one the platform wrote ("Waiting to be sent")."""
    final = Greatest(F("done"), F("total"))
    still_working = Q(total=0) | Q(done__lt=F("total")) | Q(message="")
    return {
        "finished_at": timezone.now(),
        "heartbeat_at": None,
        "done": final,
        "total": final,
        "message": Case(
            When(still_working, then=Value(FINISHED)),
            default=F("message"),
            output_field=TextField(),
        ),
    }


def _succeed(job_id: int, token: str, result: Any) -> bool:
    """This run's row (the job's, under ``token``) succeeded with ``result`` and its final
    counts: on PostgreSQL one fixed statement, as written by the ORM update below (every job's
    end; the ORM spent ~1.3 ms of CPU building it, beside the steps of other hunts). False when
    the row is no longer this run's."""
    if connection.vendor != "postgresql":
        mine = Job.objects.filter(pk=job_id, attempt_token=token)
        return bool(mine.update(status=Job.Status.SUCCEEDED, result=result, **_finished_counts()))
    field = Job._meta.get_field("result")
    with connection.cursor() as cursor:
        cursor.execute(
            _succeed_sql(),
            [
                Job.Status.SUCCEEDED.value,
                field.get_db_prep_save(result, connection),
                timezone.now(),
                FINISHED,
                job_id,
                token,
            ],
        )
        return cursor.rowcount > 0


@functools.cache
def _succeed_sql() -> str:
    # In an UPDATE every column on the right is the row's old value, as in the ORM's statement.
    return (
        f"UPDATE {Job._meta.db_table} SET status = %s, result = %s, finished_at = %s,"
        " heartbeat_at = NULL, done = GREATEST(done, total), total = GREATEST(done, total),"
        " message = CASE WHEN (total = 0 OR done < total OR message = '') THEN %s"
        " ELSE message END"
        " WHERE id = %s AND attempt_token = %s"
    )


def _fail(jobs, error: str) -> None:
    with transaction.atomic():
        ids = list(jobs.values_list("pk", "kind"))
        if jobs.update(
            status=Job.Status.FAILED, finished_at=timezone.now(), error=error, heartbeat_at=None
        ):
            for job_id, kind in ids:
                job_failed_notify(job_id=job_id, kind=kind, error=error)
                job_event_emit(job_id=job_id)
                chunk_ended(job_id=job_id)
                job_work_delete_later(job_id=job_id)  # a chunk's parent owns no folder: none


def commit_once(job_id: int, write: Callable[[], dict]) -> dict:
    """Run ``write`` and store its result on the Job in the same transaction, unless an earlier
    run of this job already did: then return what it stored. A re-run of a job whose worker
    died after the commit (before "succeeded" was written) writes nothing twice."""
    with transaction.atomic():
        stored = Job.objects.select_for_update().values_list("result", flat=True).get(pk=job_id)
        if stored is not None:
            return stored
        result = write()
        Job.objects.filter(pk=job_id).update(result=result)
    return result


# --------------------------------------------------------------------------------------------
# Heartbeats, stale deliveries and the sweeper
# --------------------------------------------------------------------------------------------
def _worker_name() -> str:
    return f"{socket.gethostname()} {os.getpid()}"


def _holder_alive(job: Job, now: datetime) -> bool:
    """Whether the worker recorded on a running job may still be running it: it beat recently
    and, when it ran on this machine, its process still exists (a pool child killed a moment
    ago has a fresh heartbeat but no process)."""
    lost_after = timedelta(seconds=settings.BLINDSPOT_JOB_LOST_AFTER_S)
    if job.heartbeat_at is None or job.heartbeat_at < now - lost_after:
        return False
    host, _sep, pid = job.worker.rpartition(" ")
    if host == socket.gethostname() and pid.isdigit() and int(pid) != os.getpid():
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # exists, owned by someone else
            pass
    return True


def _may_run_again(job: Job, rerun_safe: bool) -> bool:
    return rerun_safe and job.attempts < settings.BLINDSPOT_JOB_MAX_ATTEMPTS


def _claim(celery_task, job_id: int) -> tuple[str, Job | None] | None:
    """Take the Job row for this delivery and return its attempt token with the row as claimed
    when that came with the claim (else None: read it), or None when the job must not run
    here: finished, superseded (a stale delivery) or running elsewhere."""
    request = celery_task.request
    delivery = request.id or ""
    # Only broker deliveries can be stale; an in-process ``apply`` (CLI, demo, eager mode) or a
    # direct call is a deliberate run of the job as it is.
    from_broker = bool(delivery) and not request.is_eager
    now = timezone.now()
    claimed = {
        "status": Job.Status.RUNNING,
        "started_at": now,
        "attempts": F("attempts") + 1,
        "error": "",
        "worker": _worker_name()[:200],
        "heartbeat_at": now,
    }
    # The usual delivery: a queued job's message carrying its attempt token. Claimed in one
    # statement (the row lock of the UPDATE decides between two copies); anything else (a
    # stale or second delivery, a lost run, a job without a token) takes the locked path below.
    if delivery and connection.vendor == "postgresql":
        job = _claim_queued(job_id, delivery, now)
        if job is not None:
            return delivery, job
    elif delivery and Job.objects.filter(
        pk=job_id, status=Job.Status.QUEUED, attempt_token=delivery
    ).update(**claimed):
        return delivery, None
    with transaction.atomic():
        job = Job.objects.select_for_update().filter(pk=job_id).first()
        if job is None or job.is_finished:
            return None
        if from_broker and job.attempt_token and delivery != job.attempt_token:
            log.warning("job %s: dropped a stale delivery %s", job_id, delivery)
            return None
        if job.status == Job.Status.RUNNING:
            if _holder_alive(job, now):
                log.warning("job %s: dropped a second delivery; it runs on %s", job_id, job.worker)
                return None
            if not _may_run_again(job, getattr(celery_task, "rerun_safe", False)):
                _fail_lost(job, now)
                return None
            log.warning("job %s: its worker %s stopped; running it again here", job_id, job.worker)
        token = job.attempt_token or delivery or str(uuid.uuid4())
        Job.objects.filter(pk=job_id).update(attempt_token=token, **claimed)
    return token, None


@functools.cache
def _claim_sql() -> str:
    job, user = _claim_shapes()
    return (
        f"WITH j AS (UPDATE {Job._meta.db_table} SET status = %s, started_at = %s,"
        " attempts = attempts + 1, error = '', worker = %s, heartbeat_at = %s"
        " WHERE id = %s AND status = %s AND attempt_token = %s RETURNING *)"
        f" SELECT {job.columns}, {user.columns} FROM j"
        f' LEFT JOIN {get_user_model()._meta.db_table} u ON u."{user.model._meta.pk.column}"'
        " = j.created_by_id"
    )


def _claim_queued(job_id: int, delivery: str, now: datetime) -> Job | None:
    """The usual claim on PostgreSQL: the queued job whose message this is, taken and read with
    who started it in one statement (a hunt step waits on every job's way to its work); None
    when it is not queued with that token. As ``_claim``'s update and ``run_job``'s read."""
    with connection.cursor() as cursor:
        cursor.execute(
            _claim_sql(),
            [
                Job.Status.RUNNING.value,
                now,
                _worker_name()[:200],
                now,
                job_id,
                Job.Status.QUEUED.value,
                delivery,
            ],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    job_shape, user_shape = _claim_shapes()
    job = job_shape.build(row)
    job.created_by = user_shape.build(row, job_shape.width)
    return job


@functools.cache
def _claim_shapes() -> tuple[Shape, Shape]:
    return Shape(Job, "j"), Shape(get_user_model(), "u")


class _Heartbeats:
    """One thread per process refreshes ``heartbeat_at`` every BLINDSPOT_JOB_HEARTBEAT_S
    seconds for each job a run of this process holds, until the run ends or loses the job
    (finished, failed or given to another run). One thread for them all: a thread started and
    joined per run put that on every job's path, a hunt step's a quarter of a second long."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[int, str] = {}  # job id -> the run's attempt token
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        self._wake = threading.Event()
        self._sleeping_for = 0.0

    def hold(self, job_id: int, token: str) -> None:
        with self._lock:
            if self._pid != os.getpid():  # a forked child: the parent's thread is not here
                self._held, self._thread, self._pid = {}, None, os.getpid()
            self._held[job_id] = token
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="job-heartbeats", daemon=True
                )
                self._thread.start()
            elif settings.BLINDSPOT_JOB_HEARTBEAT_S < self._sleeping_for:
                self._wake.set()  # the setting was shortened (tests): not a long sleep first

    def release(self, job_id: int, token: str) -> None:
        with self._lock:
            if self._held.get(job_id) == token:
                del self._held[job_id]

    def held(self) -> dict[int, str]:
        with self._lock:
            return dict(self._held)

    def _run(self) -> None:
        try:
            while True:
                self._sleeping_for = settings.BLINDSPOT_JOB_HEARTBEAT_S
                self._wake.wait(self._sleeping_for)
                self._wake.clear()
                with self._lock:  # ends while nothing is held; the next ``hold`` starts one
                    if not self._held:
                        self._thread = None
                        return
                for job_id, token in self.held().items():
                    self._beat(job_id, token)
        finally:
            connections.close_all()  # this thread's own connection

    def _beat(self, job_id: int, token: str) -> None:
        try:
            kept = Job.objects.filter(
                pk=job_id, attempt_token=token, status=Job.Status.RUNNING
            ).update(heartbeat_at=timezone.now())
        except Exception:  # noqa: BLE001 - a missed beat is retried at the next one
            log.warning("job %s: heartbeat failed", job_id, exc_info=True)
            return
        if not kept:
            self.release(job_id, token)


heartbeats = _Heartbeats()


def _fail_lost(job: Job, now: datetime) -> None:
    """Fail a job whose worker stopped (the row is locked by the caller)."""
    since = job.heartbeat_at or job.started_at or now
    why = (
        f"It was not run again after {job.attempts} attempts."
        if job.attempts >= settings.BLINDSPOT_JOB_MAX_ATTEMPTS
        else "This kind of job is not run again automatically."
    )
    error = (
        f"{WORKER_STOPPED}: no sign of life from {job.worker or 'its worker'} since "
        f"{since:%Y-%m-%d %H:%M:%S} UTC. {why} Retry it to run it again."
    )
    _fail(Job.objects.filter(pk=job.pk), error)


def _rerun_safe(kind: str) -> bool:
    return bool(getattr(job_task(kind), "rerun_safe", False))


def jobs_sweep_lost(*, now: datetime | None = None, limit: int = 500) -> dict[str, int]:
    """Re-run or fail the jobs whose worker fell silent for BLINDSPOT_JOB_LOST_AFTER_S: running
    ones, and queued ones waiting for a retry that never came (the countdown allowed for)."""
    now = now or timezone.now()
    lost_after = timedelta(seconds=settings.BLINDSPOT_JOB_LOST_AFTER_S)
    countdown = timedelta(seconds=JOB_OPTIONS["retry_backoff_max"])
    # A parked job (waiting for its chunk jobs) is held by no worker: its chunks are swept.
    silent = Q(status=Job.Status.RUNNING, waiting_for=0) & (
        Q(heartbeat_at__lt=now - lost_after)
        | Q(heartbeat_at=None, started_at__lt=now - lost_after)  # rows older than heartbeats
    ) | Q(
        status=Job.Status.QUEUED,
        started_at__isnull=False,
        heartbeat_at__lt=now - lost_after - countdown,
    )
    counts = {"rerun": 0, "failed": 0}
    for job_id in Job.objects.filter(silent).order_by("pk").values_list("pk", flat=True)[:limit]:
        with transaction.atomic():
            # Re-checked under the lock; a row held by a running write is not lost.
            job = Job.objects.select_for_update(skip_locked=True).filter(silent, pk=job_id).first()
            if job is None:
                continue
            if _may_run_again(job, _rerun_safe(job.kind)):
                _send_again(job)
                counts["rerun"] += 1
            else:
                _fail_lost(job, now)
                counts["failed"] += 1
    return counts


def _send_again(job: Job) -> None:
    """Queue a lost job again under a new attempt token: the old message is stale from now on."""
    job.attempt_token = str(uuid.uuid4())
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.QUEUED,
        attempt_token=job.attempt_token,
        heartbeat_at=None,
        sent_at=None,  # in the outbox again until the broker takes the new message
        message=f"{WORKER_STOPPED} ({job.worker or '?'}); "
        f"running it again (attempt {job.attempts + 1} of {settings.BLINDSPOT_JOB_MAX_ATTEMPTS}).",
    )
    log.warning("job %s: its worker %s stopped; sent again", job.pk, job.worker)
    job_send(job=job)


@shared_task(name="annotator.sweep_lost_jobs", acks_late=True, ignore_result=True)
def sweep_lost_jobs() -> dict[str, int]:
    """Celery beat: recover the jobs whose worker stopped (re-run them or fail them), send the
    jobs waiting to be sent (started while the broker was down), and delete the work files of
    jobs that have ended."""
    return {
        **jobs_sweep_lost(),
        "sent": jobs_send_pending(),
        "work_files_deleted": jobs_work_sweep(),
    }
