"""Export files written by jobs: each recipe's export job builds its archive (or table) through
the recipe's own builder into a temporary file, then stores it once under
``exports/<recipe>/<object id>/<job id>/<filename>`` with its size and SHA-256 in ``Job.result``.

The web tier only starts the job and later serves the stored file; nothing is built in a request.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from collections.abc import Callable
from typing import IO, Any

from django.core.files import File
from django.core.files.storage import default_storage
from django.utils.translation import gettext as _

from annotator.models import Job
from annotator.services import job_progress

Progress = Callable[[int, int], None]
PROGRESS_EVERY_S = 0.5  # at most two progress writes a second, plus the last one


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
    return {
        "path": stored,
        "size": size,
        "sha256": digest.hexdigest(),
        "filename": filename,
        "content_type": content_type,
    }


def export_file_problem(job: Job | None) -> str:
    """Why a job's file cannot be served ("" when it can): missing, still running, failed, or
    its file gone from storage."""
    if job is None:
        return _("There is no such export here.")
    if job.status == Job.Status.FAILED:
        return _("This export failed: %(error)s") % {"error": (job.error.splitlines() or ["—"])[0]}
    if job.status != Job.Status.SUCCEEDED:
        return _("This export is not finished yet (%(percent)d%%); its card shows progress.") % {
            "percent": job.percent
        }
    path = (job.result or {}).get("path")
    if not path or not default_storage.exists(path):
        return _("The file of this export is no longer stored; start a new export.")
    return ""
