"""A recipe's exports: each an export job writing one file (``curation.export_files``), one
variant per distinct ``Job.params`` (format, what, version, appendix flag …). The web tier only
starts the job and later serves the stored file."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable, Sequence
from typing import IO, Any

from django.db.models import QuerySet

from annotator.platform.jobs import job_enqueue, job_task
from annotator.platform.models import Job

from .declare import Export, Params, Recipe

SCAN = 20  # newest export jobs of an object read for its cards
PROGRESS_ROWS = 500  # records between two progress reports of ``records_write``


def export_start(
    recipe: Recipe, export: Export, obj: Any, params: Params, *, created_by=None
) -> Job:
    """Check that ``obj`` has something to export in this variant, then enqueue the job."""
    params = dict(params)
    total = export.check(obj, params) if export.check is not None else 0
    return job_enqueue(
        kind=export.job_kind,
        params={recipe.job_param: obj.pk, **params},
        created_by=created_by,
        project=obj.project,
        total=int(total or 0),
    )


def export_run_now(
    recipe: Recipe, export: Export, obj: Any, params: Params, *, created_by=None
) -> Job:
    """The export's real job, checked as ``export_start`` checks it, run in this process
    (demos need no broker); its error, if any, is on the row."""
    params = dict(params)
    total = export.check(obj, params) if export.check is not None else 0
    job = Job.objects.create(
        kind=export.job_kind,
        params={recipe.job_param: obj.pk, **params},
        project=obj.project,
        created_by=created_by,
        total=int(total or 0),
        message="Running in this process",
    )
    job_task(export.job_kind).apply(args=[job.pk])
    job.refresh_from_db()
    return job


def export_jobs(recipe: Recipe, obj: Any, export: Export | None = None) -> QuerySet[Job]:
    """Export jobs of ``obj`` (of one export, or all of the recipe's), newest first."""
    kinds = [export.job_kind] if export is not None else [e.job_kind for e in recipe.exports]
    return (
        Job.objects.select_related("created_by")
        .filter(kind__in=kinds, **{f"params__{recipe.job_param}": obj.pk})
        .order_by("-created_at", "-id")
    )


def job_variant(recipe: Recipe, job: Job) -> Params:
    """A job's export params without the object id (what ``Export.params`` returned)."""
    return {k: v for k, v in (job.params or {}).items() if k != recipe.job_param}


def newest_finished(recipe: Recipe, export: Export, obj: Any, params: Params) -> Job | None:
    """The newest succeeded export of exactly this variant."""
    wanted = {recipe.job_param: obj.pk, **params}
    jobs = export_jobs(recipe, obj, export).filter(status=Job.Status.SUCCEEDED)
    for job in jobs.order_by("-finished_at", "-id").iterator(chunk_size=50):
        if job.params == wanted:
            return job
    return None


def latest_exports(recipe: Recipe, obj: Any) -> list[tuple[Export, Job]]:
    """The newest job of each variant of each export (one query per export), in each export's
    ``variants`` order (or newest first), at most ``cards`` of each."""
    out: list[tuple[Export, Job]] = []
    for export in recipe.exports:
        newest: dict[Any, Job] = {}
        for job in export_jobs(recipe, obj, export)[:SCAN]:
            newest.setdefault(export.variant(job_variant(recipe, job)), job)
        if export.variants:
            jobs = [newest[key] for key in export.variants if key in newest]
        else:
            jobs = list(newest.values())
        out += [(export, job) for job in jobs[: export.cards or None]]
    return out


def export_of(recipe: Recipe, job: Job) -> Export | None:
    return next((e for e in recipe.exports if e.job_kind == job.kind), None)


def records_write(
    fh: IO[bytes],
    records: Sequence[dict],
    *,
    columns: Iterable[str],
    fmt: str = "csv",
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """Write ``records`` into ``fh`` (UTF-8) as CSV (a header of ``columns``, then one line per
    record) or, with ``fmt="jsonl"``, as JSON lines; ``progress(done, total)`` counts the records
    every ``PROGRESS_ROWS`` and at the end. ``fh`` stays open."""
    text = io.TextIOWrapper(fh, encoding="utf-8", newline="", write_through=True)
    try:
        writer = csv.DictWriter(text, fieldnames=list(columns), lineterminator="\n")
        if fmt == "csv":
            writer.writeheader()
        total = len(records)
        if progress:
            progress(0, total)
        for done, record in enumerate(records, start=1):
            if fmt == "csv":
                writer.writerow(record)
            else:
                text.write(json.dumps(record, ensure_ascii=False) + "\n")
            if progress and (done % PROGRESS_ROWS == 0 or done == total):
                progress(done, total)
        text.flush()
    finally:
        text.detach()  # leave ``fh`` open for the caller
