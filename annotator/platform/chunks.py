"""Chunk jobs: a job fans its work out into chunk jobs that any number of workers take, and goes
on once they have all ended (a Celery chord made of Job rows, so that every chunk has what every
job has: progress, a heartbeat, retries, and a re-run when its worker dies).

A job's work (``run_job``'s ``work(job)``) returns ``FanOut(kind, params, totals)`` instead of a
result. ``chunks_park`` then, in one transaction, creates one chunk Job per params (kind ``kind``,
``parent`` the job, ``part`` its number, the job's project and author) and parks the job: still
running, held by no worker, ``waiting_for`` its chunks, its total the chunks' totals. The chunks
are sent once that commits. Chunk kinds are declared ``rerun_safe``: a chunk whose worker was
killed is run again (the lost-job sweep, or the broker's redelivery when only the pool child
died), so its work must write its output under a name only its successful run records.

While they run, each chunk's progress is summed on the parent (``chunk_progress``). When a chunk
ends (``chunk_ended``, inside the transaction that ends it): a failed chunk fails the parent;
the last one to succeed sends the parent again, and its work runs again from the top, now
finding every chunk's result (``chunk_results``): it reduces them, or fans out again with
another kind (a later step, e.g. mining after embedding).

Intermediate files (a chunk's answer, an input converted once for all chunks) go to the
configured storage under the job's own folder (``job_work_dir``), where workers on other
machines read them. The folder is deleted when the job ends (succeeded or failed), and the
lost-job sweep deletes what is left of ended jobs (a chunk that finished after its parent
failed, a worker killed mid-delete): ``jobs_work_sweep``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import Count, OuterRef, Q, Subquery, Sum
from django.utils import timezone

from .errors import clip
from .jobs import job_deliver, job_progress, job_send, jobs_inline_active
from .models import Job
from .webhooks import job_event_emit

log = logging.getLogger(__name__)
WORK_DIR = "work/jobs"  # storage folder of the jobs' intermediate files, one folder per job


@dataclass(frozen=True)
class FanOut:
    """What a job's work returns to have ``params`` run as chunk jobs of ``kind``. ``totals``:
    each chunk's amount of work (its progress total), summed as the parent's total."""

    kind: str
    params: Sequence[dict]
    totals: Sequence[int] = field(default_factory=tuple)
    message: str = ""

    def __post_init__(self) -> None:
        if not self.params:
            raise ValueError("a fan-out needs at least one chunk")
        if self.totals and len(self.totals) != len(self.params):
            raise ValueError("one total per chunk")


class ChunksUnfinished(RuntimeError):
    """The job's chunks of a kind have not all ended (its work ran before they did)."""


def chunks_park(*, job_id: int, token: str, fan_out: FanOut) -> bool:
    """Create the chunk jobs and park their parent (the run holding ``token``); the chunks are
    sent once this commits. False when this run no longer holds the job (nothing created)."""
    totals = list(fan_out.totals) or [0] * len(fan_out.params)
    with transaction.atomic():
        job = (
            Job.objects.select_for_update()
            .filter(pk=job_id, attempt_token=token, status=Job.Status.RUNNING)
            .first()
        )
        if job is None:
            return False
        chunks = [
            Job(
                kind=fan_out.kind,
                params=dict(params),
                created_by_id=job.created_by_id,
                project_id=job.project_id,
                total=total,
                attempt_token=str(uuid.uuid4()),
                parent=job,
                part=part,
            )
            for part, (params, total) in enumerate(zip(fan_out.params, totals, strict=True))
        ]
        Job.objects.bulk_create(chunks)
        n = len(chunks)
        Job.objects.filter(pk=job_id).update(
            waiting_for=n,
            total=sum(totals),
            done=0,
            heartbeat_at=None,
            message=fan_out.message or f"Waiting for {n} chunk jobs ({fan_out.kind})",
        )
        for chunk in Job.objects.filter(parent_id=job_id, kind=fan_out.kind).order_by("part"):
            _send(chunk)
    return True


def _send(job: Job) -> None:
    """Send a chunk, or its parent going on: after commit, or at once when a command runs the
    job in its process (``jobs_inline``), whose transaction may commit only at its very end."""
    if jobs_inline_active():
        job_deliver(job_id=job.pk, kind=job.kind, token=job.attempt_token)
    else:
        job_send(job=job)


def chunk_results(*, job: Job, kind: str) -> list[dict] | None:
    """The results of ``job``'s chunks of ``kind`` in part order, or None when it has none (it
    has not fanned out this step yet). Raises ``ChunksUnfinished`` while any has not ended."""
    rows = list(
        Job.objects.filter(parent=job, kind=kind).order_by("part").values_list("status", "result")
    )
    if not rows:
        return None
    if any(status != Job.Status.SUCCEEDED for status, _result in rows):
        raise ChunksUnfinished(f"{kind}: not every chunk has succeeded yet")
    return [result for _status, result in rows]


def chunk_progress(*, chunk: Job, done: int, total: int | None = None, message: str = "") -> None:
    """A chunk's progress on its own row, and the sum of its fan-out's progress on its parent."""
    job_progress(job_id=chunk.pk, done=done, total=total, message=message)
    if chunk.parent_id is None:
        return
    summed = (
        Job.objects.filter(parent_id=OuterRef("pk"), kind=chunk.kind)
        .order_by()
        .values("parent_id")
        .annotate(s=Sum("done"))
        .values("s")[:1]
    )
    Job.objects.filter(pk=chunk.parent_id, waiting_for__gt=0).update(done=Subquery(summed))


def chunk_ended(*, job_id: int) -> None:
    """Tell a chunk's parent that the chunk ended (call it in the transaction that wrote the
    chunk's final status): a failed chunk fails the parent; when every chunk of the fan-out has
    succeeded, the parent is sent again to go on. Nothing for a job that is no chunk."""
    chunk = Job.objects.filter(pk=job_id).values("parent_id", "kind", "part", "status").first()
    if chunk is None or chunk["parent_id"] is None:
        return
    parent = (
        Job.objects.select_for_update()
        .filter(pk=chunk["parent_id"], status=Job.Status.RUNNING, waiting_for__gt=0)
        .first()
    )
    if parent is None:  # already failed by another chunk, or going on
        return
    counts = Job.objects.filter(parent=parent, kind=chunk["kind"]).aggregate(
        n=Count("pk"),
        ok=Count("pk", filter=Q(status=Job.Status.SUCCEEDED)),
        failed=Count("pk", filter=Q(status=Job.Status.FAILED)),
    )
    if chunk["status"] == Job.Status.FAILED or counts["failed"]:
        failed = (
            Job.objects.filter(parent=parent, kind=chunk["kind"], status=Job.Status.FAILED)
            .order_by("part")
            .values_list("part", "error")
            .first()
        )
        part, error = failed or (chunk["part"], "")
        Job.objects.filter(pk=parent.pk).update(
            status=Job.Status.FAILED,
            waiting_for=0,
            finished_at=timezone.now(),
            error=clip(f"Chunk {part + 1} of {counts['n']} ({chunk['kind']}) failed: {error}"),
        )
        job_event_emit(job_id=parent.pk)
        job_work_delete_later(job_id=parent.pk)
        return
    if counts["ok"] < counts["n"]:
        Job.objects.filter(pk=parent.pk).update(
            message=f"{counts['ok']} of {counts['n']} chunk jobs done ({chunk['kind']})"
        )
        return
    parent.attempt_token = str(uuid.uuid4())
    Job.objects.filter(pk=parent.pk).update(
        status=Job.Status.QUEUED,
        waiting_for=0,
        attempts=0,  # attempts count the runs of one step: this is the next step's first
        done=parent.total,
        attempt_token=parent.attempt_token,
        sent_at=None,
        message=f"All {counts['n']} chunk jobs done ({chunk['kind']}); going on",
    )
    _send(parent)


def job_work_dir(job_id: int) -> str:
    """The storage folder of a job's intermediate files (its chunks write there too)."""
    return f"{WORK_DIR}/{int(job_id)}"


def _delete_tree(folder: str) -> int:
    try:
        dirs, files = default_storage.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return 0
    deleted = sum(_delete_tree(f"{folder}/{d}") for d in dirs)
    for name in files:
        default_storage.delete(f"{folder}/{name}")
        deleted += 1
    try:  # a local disk keeps empty folders; object stores have none
        Path(default_storage.path(folder)).rmdir()
    except (NotImplementedError, OSError):
        pass
    return deleted


def job_work_delete(*, job_id: int) -> int:
    """Delete a job's intermediate files; returns how many there were."""
    return _delete_tree(job_work_dir(job_id))


def job_work_delete_later(*, job_id: int) -> None:
    """``job_work_delete`` once the transaction that ended the job commits (never raises: the
    sweep deletes what a failure here leaves)."""

    def delete() -> None:
        try:
            job_work_delete(job_id=job_id)
        except Exception:  # noqa: BLE001 - the files stay for the sweep; the job's end stands
            log.warning("job %s: its work files were not deleted", job_id, exc_info=True)

    transaction.on_commit(delete)


def jobs_work_sweep(*, limit: int = 200) -> int:
    """Delete the work folders of jobs that have ended (or no longer exist); returns the number
    of files deleted."""
    try:
        folders, _files = default_storage.listdir(WORK_DIR)
    except (FileNotFoundError, NotADirectoryError):
        return 0
    ids = sorted({int(f) for f in folders if f.isdigit()})[:limit]
    active = set(
        Job.objects.filter(
            pk__in=ids, status__in=[Job.Status.QUEUED, Job.Status.RUNNING]
        ).values_list("pk", flat=True)
    )
    return sum(job_work_delete(job_id=pk) for pk in ids if pk not in active)
