"""Exports in the published VisIT-Bench layouts (METRICS.md Sec. 2): a dataset version as CSV or
JSONL with the published columns, and the crowd's forced choices in the columns of
``visit_bench_human_preferences.csv`` (one row per vote). Both read back through the evaluation
app's importers unchanged."""

from __future__ import annotations

import csv
import io
import json
from typing import IO

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from annotator.models import Annotation
from annotator.platform.errors import Invalid

from ...export_files import Progress, export_store, progress_for
from .models import VisitPair, VisitPipeline
from .publish import version_of

DATASET_COLUMNS = (
    "instruction_category",
    "image",
    "instruction",
    "instruction_conditioned_caption",
    "gpt4_prediction",
    "reference_output",
    "human_ratings_gpt4_correct",
    "human_ratings_problem_in_caption",
    "human_ratings_problem_in_gpt4",
    "public_images_metadata",
)
PREFERENCE_COLUMNS = (
    "image_url",
    "instruction",
    "A",
    "B",
    "A_model",
    "B_model",
    "model_selection.A",
    "model_selection.B",
)
FORMATS = ("csv", "jsonl")
PROGRESS_ROWS = 500  # records between two progress reports


def _flag(value: bool, fmt: str):
    # The published CSV writes TRUE / FALSE; JSONL gets JSON booleans.
    if fmt == "jsonl":
        return bool(value)
    return "TRUE" if value else "FALSE"


def dataset_records(version, *, fmt: str = "csv") -> list[dict]:
    """Every item of the version, in position order, with the published columns."""
    records = []
    for data in version.items.order_by("position").values_list("data", flat=True):
        metadata = data.get("public_images_metadata") or {}
        records.append(
            {
                "instruction_category": data.get("category", ""),
                "image": data.get("image", ""),
                "instruction": data.get("instruction", ""),
                "instruction_conditioned_caption": data.get("caption", ""),
                "gpt4_prediction": data.get("reference", ""),
                "reference_output": data.get("reference_output", ""),
                "human_ratings_gpt4_correct": _flag(data.get("gpt4_correct", False), fmt),
                "human_ratings_problem_in_caption": _flag(
                    data.get("problem_in_caption", False), fmt
                ),
                "human_ratings_problem_in_gpt4": _flag(data.get("problem_in_gpt4", False), fmt),
                "public_images_metadata": json.dumps(metadata, ensure_ascii=False)
                if metadata
                else "",
            }
        )
    return records


def write_records(
    fh: IO[bytes],
    records: list[dict],
    *,
    columns=DATASET_COLUMNS,
    fmt: str = "csv",
    progress: Progress | None = None,
) -> None:
    """Write the records as CSV (header, then one line per record) or JSONL into ``fh`` (UTF-8);
    ``progress(done, total)`` counts the records. The one writer behind every export."""
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


def _text(records: list[dict], *, columns=DATASET_COLUMNS, fmt: str = "csv") -> str:
    buffer = io.BytesIO()
    write_records(buffer, records, columns=columns, fmt=fmt)
    return buffer.getvalue().decode("utf-8")


def _check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise Invalid(f"Unknown format {fmt!r}: use csv or jsonl.")


def dataset_export(*, pipeline: VisitPipeline, fmt: str) -> str:
    """The pipeline's current version in the published layout."""
    _check_format(fmt)
    version = version_of(pipeline)
    return _text(dataset_records(version, fmt=fmt), fmt=fmt)


def preference_records(pipeline: VisitPipeline) -> list[dict]:
    """One row per crowd vote on the current version's tuples, the model chosen flagged TRUE
    (the kind recorded the winner with the sides un-swapped)."""
    version = version_of(pipeline)
    pairs = {
        p.task_id: p
        for p in VisitPair.objects.filter(
            pipeline=pipeline, version_id=version.pk, task__isnull=False
        )
    }
    items = dict(
        version.items.filter(item_id__in={p.item_id for p in pairs.values()}).values_list(
            "item_id", "data"
        )
    )
    records = []
    votes = (
        Annotation.objects.filter(task_id__in=list(pairs), is_gold=False)
        .order_by("task_id", "id")
        .values_list("task_id", "response")
    )
    for task_id, response in votes:
        pair = pairs[task_id]
        data = items.get(pair.item_id, {})
        winner = (response or {}).get("winner")
        records.append(
            {
                "image_url": data.get("image", ""),
                "instruction": data.get("instruction", ""),
                "A": pair.response_a,
                "B": pair.response_b,
                "A_model": pair.model_a,
                "B_model": pair.model_b,
                "model_selection.A": "TRUE" if winner == pair.model_a else "FALSE",
                "model_selection.B": "TRUE" if winner == pair.model_b else "FALSE",
            }
        )
    return records


def preferences_export(*, pipeline: VisitPipeline) -> str:
    return _text(preference_records(pipeline), columns=PREFERENCE_COLUMNS)


# --------------------------------------------------------------------------------------------
# Export jobs: the file is written by a job and stored (curation/export_files.py)
# --------------------------------------------------------------------------------------------
EXPORTS = (("dataset", "csv"), ("dataset", "jsonl"), ("preferences", "csv"))
EXPORT_LABELS = {
    ("dataset", "csv"): gettext_lazy("Dataset (CSV)"),
    ("dataset", "jsonl"): gettext_lazy("Dataset (JSONL)"),
    ("preferences", "csv"): gettext_lazy("Human preferences (CSV)"),
}
CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson; charset=utf-8"}


def export_filename(pipeline: VisitPipeline, what: str, fmt: str) -> str:
    return f"visit-{pipeline.pk}-{what}.{fmt}"


def _check_export(pipeline: VisitPipeline, what: str, fmt: str):
    if (what, fmt) not in EXPORTS:
        raise Invalid("Unknown export: choose the dataset as CSV or JSONL, or the preferences CSV.")
    return version_of(pipeline)


def export_check(pipeline: VisitPipeline, params: dict) -> int:
    """Before the export job: a known export of a published version."""
    _check_export(pipeline, params["what"], params["fmt"])
    return 0


def export_unknown(params: dict) -> str:
    return "" if (params.get("what"), params.get("fmt")) in EXPORTS else _("Unknown export.")


def export_what(params: dict) -> str:
    return str(EXPORT_LABELS.get((params.get("what"), params.get("fmt")), "?"))


def export_label(params: dict) -> str:
    return _("Export: %(what)s") % {"what": export_what(params)}


def export_run(pipeline: VisitPipeline, *, what: str, fmt: str, job_id: int, **_kw) -> dict:
    """The body of the export job: write the records (counted) and store the file."""
    version = _check_export(pipeline, what, fmt)
    if what == "dataset":
        records, columns = dataset_records(version, fmt=fmt), DATASET_COLUMNS
    else:
        records, columns = preference_records(pipeline), PREFERENCE_COLUMNS
    stored = export_store(
        job_id=job_id,
        recipe="visit",
        object_id=pipeline.pk,
        filename=export_filename(pipeline, what, fmt),
        content_type=CONTENT_TYPES[fmt],
        write=lambda fh: write_records(
            fh,
            records,
            columns=columns,
            fmt=fmt,
            progress=progress_for(job_id, unit="records"),
        ),
    )
    return {
        **stored,
        "pipeline_id": pipeline.pk,
        "what": what,
        "fmt": fmt,
        "version_id": version.pk,
        "records": len(records),
    }
