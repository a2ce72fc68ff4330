"""Export files written by jobs: each recipe's export job builds its archive (or table) through
the recipe's own builder into a temporary file, then stores it once under
``exports/<recipe>/<object id>/<job id>/<filename>`` with its size and SHA-256 in ``Job.result``.

The web tier only starts the job and later serves the stored file; nothing is built in a request.

Retention: once a job has stored its file, only the newest ``BLINDSPOT_EXPORTS_KEEP`` (default 3)
exports of the same variant are kept (same job kind and params: recipe, object, and format /
what / version / appendix flag); older ones lose their file and their ``Job.result`` records
``deleted_at`` and ``replaced_by``, so their download page says which job replaced them.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import time
from collections.abc import Callable, Iterable
from typing import IO, Any

from django.conf import settings
from django.contrib import messages
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _

from annotator.platform.files import file_response
from annotator.platform.jobs import job_progress
from annotator.platform.models import Job

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
PROGRESS_EVERY_S = 0.5  # at most two progress writes a second, plus the last one
EXPORTS_KEEP = 3  # default of settings.BLINDSPOT_EXPORTS_KEEP


def export_path(*, recipe: str, object_id: int, job_id: int, filename: str) -> str:
    return f"exports/{recipe}/{object_id}/{job_id}/{filename}"


def progress_for(job_id: int | None, *, unit: str = "images") -> Progress | None:
    """A ``(done, total)`` callback that writes the job's progress ("12 of 40 images"),
    throttled so a large archive does not update the row for every file."""
    if not job_id:
        return None
    last = [0.0]

    def report(done: int, total: int) -> None:
        now = time.monotonic()
        if done not in (0, total) and now - last[0] < PROGRESS_EVERY_S:
            return
        last[0] = now
        message = _("%(done)d of %(total)d %(unit)s written") % {
            "done": done,
            "total": total,
            "unit": unit,
        }
        job_progress(job_id=job_id, done=done, total=total, message=message)

    return report


def export_store(
    *,
    job_id: int,
    recipe: str,
    object_id: int,
    filename: str,
    write: Callable[[IO[bytes]], Any],
    content_type: str,
) -> dict:
    """Run ``write(fh)`` into a temporary file, then store it at the job's export path; returns
    what ``Job.result`` records (path, size, SHA-256, file name, content type). A re-run of the
    same job replaces its own file, so a redelivered job stays idempotent."""
    name = export_path(recipe=recipe, object_id=object_id, job_id=job_id, filename=filename)
    with tempfile.TemporaryFile() as tmp:
        write(tmp)
        tmp.flush()
        size = tmp.tell()
        tmp.seek(0)
        digest = hashlib.sha256()
        for block in iter(lambda: tmp.read(1 << 20), b""):
            digest.update(block)
        tmp.seek(0)
        if default_storage.exists(name):
            default_storage.delete(name)
        stored = default_storage.save(name, File(tmp, name=os.path.basename(name)))
    try:
        exports_prune(job_id=job_id, recipe=recipe, object_id=object_id)
    except Exception:  # noqa: BLE001 - housekeeping must never fail the export that just worked
        log.exception("export retention after job %s failed; older files kept", job_id)
    return {
        "path": stored,
        "size": size,
        "sha256": digest.hexdigest(),
        "filename": filename,
        "content_type": content_type,
    }


def exports_keep() -> int:
    """How many finished exports of one variant keep their file (at least the newest one)."""
    return max(1, int(getattr(settings, "BLINDSPOT_EXPORTS_KEEP", EXPORTS_KEEP)))


def exports_prune(*, job_id: int, recipe: str, object_id: int) -> list[int]:
    """After job ``job_id`` stored its file: delete the files of all but the newest
    ``exports_keep()`` finished exports of the same variant (this job counts as the newest) and
    mark their results with ``deleted_at`` and ``replaced_by``. Returns the ids marked.

    The variant is the job's kind and params (each recipe's ``export_start`` enqueues exactly
    the object id and what distinguishes the contents: format, what, version, appendix flag).
    Jobs already marked are skipped, so a re-run changes nothing more. A storage error on a
    delete is logged and that job keeps its file and its result."""
    job = Job.objects.filter(pk=job_id).only("kind", "params").first()
    if job is None:
        return []
    prefix = f"exports/{recipe}/{object_id}/"  # export_path without the job's part
    older = [
        other
        for other in Job.objects.filter(
            kind=job.kind, status=Job.Status.SUCCEEDED, result__path__startswith=prefix
        )
        .exclude(pk=job_id)
        .order_by("-finished_at", "-id")
        .only("id", "params", "result")
        if other.params == job.params and not other.result.get("deleted_at")
    ][exports_keep() - 1 :]
    marked = []
    for other in older:
        with transaction.atomic():
            row = Job.objects.select_for_update().filter(pk=other.pk).only("result").first()
            result = dict(row.result or {}) if row is not None else {}
            if result.get("deleted_at") or not result.get("path"):
                continue
            try:
                default_storage.delete(result["path"])
            except Exception:  # noqa: BLE001 - any storage backend's error: keep the file
                log.exception("could not delete export file %s of job %s", result["path"], row.pk)
                continue
            result.update(deleted_at=timezone.now().isoformat(), replaced_by=job_id)
            Job.objects.filter(pk=row.pk).update(result=result)
            marked.append(row.pk)
    return marked


def export_deleted(job: Job) -> bool:
    """Whether retention removed this finished export's file (``exports_prune``)."""
    return bool((job.result or {}).get("deleted_at"))


def export_file_problem(job: Job | None) -> str:
    """Why a job's file cannot be served ("" when it can): missing, still running, failed,
    replaced by a newer export (its file removed), or its file gone from storage."""
    if job is None:
        return _("There is no such export here.")
    if job.status == Job.Status.FAILED:
        return _("This export failed: %(error)s") % {"error": (job.error.splitlines() or ["—"])[0]}
    if job.status != Job.Status.SUCCEEDED:
        return _("This export is not finished yet (%(percent)d%%); its card shows progress.") % {
            "percent": job.percent
        }
    if export_deleted(job):
        return _(
            "This export was replaced by a newer one (job %(job)s) and its file removed; "
            "download the newer one."
        ) % {"job": job.result.get("replaced_by", "—")}
    path = (job.result or {}).get("path")
    if not path or not default_storage.exists(path):
        return _("The file of this export is no longer stored; start a new export.")
    return ""


# --------------------------------------------------------------------------------------------
# Serving export files: the job grid's cards, the polled card, the download
# --------------------------------------------------------------------------------------------
def export_cards(
    jobs: Iterable[Job],
    *,
    label: Callable[[Job], str],
    card_url: Callable[[Job], str],
    file_url: Callable[[Job], str],
) -> list[tuple[str, Job]]:
    """(label, job) for export jobs in the job grid: the card polls ``card_url`` while the job
    runs (so the download link appears when it ends) and links ``file_url`` once it succeeded,
    unless a newer export replaced it and its file was removed (the card then says so)."""
    cards = []
    for job in jobs:
        job.card_url = card_url(job)
        succeeded = job.status == Job.Status.SUCCEEDED
        job.file_deleted = succeeded and export_deleted(job)
        job.download_url = file_url(job) if succeeded and not job.file_deleted else ""
        cards.append((label(job), job))
    return cards


def export_card(request: HttpRequest, label: str, job: Job) -> HttpResponse:
    """The polled fragment of one export card (the job grid's entry alone)."""
    return render(request, "curation/_job_grid.html", {"jobs": [(label, job)], "entry_only": True})


def serve_export(request: HttpRequest, job: Job | None, *, back: str) -> HttpResponse:
    """The stored file of a finished export job, or a 404 page that says why not (not
    finished, failed, not this object's, file gone)."""
    problem = export_file_problem(job)
    if problem:
        return render(
            request, "curation/export_missing.html", {"problem": problem, "back": back}, status=404
        )
    result = job.result
    return file_response(
        request,
        result["path"],
        filename=result["filename"],
        content_type=result.get("content_type") or "application/octet-stream",
    )


def newest_export(
    request: HttpRequest, job: Job | None, *, page: str, what: str = ""
) -> HttpResponse:
    """A GET on an export's old address: the newest finished export of that format, or back to
    the page with "start an export" when there is none yet."""
    if job is None:
        messages.info(
            request,
            _("No finished %(what)s export yet: start an export, then download it from its card.")
            % {"what": what}
            if what
            else _("No finished export yet: start an export, then download it from its card."),
        )
        return redirect(page)
    return serve_export(request, job, back=page)
