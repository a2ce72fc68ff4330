"""Exports in the published VisIT-Bench layouts (METRICS.md Sec. 2): a dataset version as CSV or
JSONL with the published columns, and the crowd's forced choices in the columns of
``visit_bench_human_preferences.csv`` (one row per vote). Both read back through the evaluation
app's importers unchanged."""

from __future__ import annotations

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from annotator.models import Annotation
from annotator.platform.errors import Invalid
from curation.export_files import export_store, progress_for
from curation.recipes.framework.exports import records_write
from evaluation.families.visit import judgments as visit_judgments
from evaluation.families.visit import parse as visit_parse

from .models import VisitPair, VisitPipeline
from .publish import version_of

# visit_bench_human_preferences.csv: one row per crowd vote.
PREFERENCE_COLUMNS = (*visit_judgments.HUMAN_COLUMNS, *visit_judgments.SELECTION_COLUMNS)


def dataset_records(version, *, fmt: str = "csv") -> list[dict]:
    """Every item of the version, in position order, in the published columns."""
    items = version.items.order_by("position").values_list("data", flat=True)
    return [visit_parse.published_record(data, fmt=fmt) for data in items]


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
        item = items.get(pair.item_id, {})
        records.append(
            visit_judgments.human_vote_record(item, pair, (response or {}).get("winner"))
        )
    return records


# --------------------------------------------------------------------------------------------
# Export jobs: the file is written by a job and stored (curation/export_files.py)
# --------------------------------------------------------------------------------------------
EXPORT_LABELS = {
    ("dataset", "csv"): gettext_lazy("Dataset (CSV)"),
    ("dataset", "jsonl"): gettext_lazy("Dataset (JSONL)"),
    ("preferences", "csv"): gettext_lazy("Human preferences (CSV)"),
}
EXPORTS = tuple(EXPORT_LABELS)  # (what, fmt) of each export, in card order
CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson; charset=utf-8"}


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


EXPORT_LAYOUTS = {
    "dataset": gettext_lazy(
        "One row per instance in the published VisIT-Bench columns (instruction_category, image, "
        "visual, instruction, gpt4_prediction, image_dense_captions, reference_output, …), in "
        "the version's order."
    ),
    "preferences": gettext_lazy(
        "One row per crowd vote, in the columns of visit_bench_human_preferences.csv: image_url, "
        "instruction, A, B, A_model, B_model, model_selection.A, model_selection.B."
    ),
}
EXPORT_READERS = {
    "dataset": gettext_lazy(
        "Hritikbansal/visit_bench_sandbox (its dataset CSV); Blindspot's VisIT-Bench importer."
    ),
    "preferences": gettext_lazy(
        "Hritikbansal/visit_bench_sandbox's Elo and win-rate analysis of human preferences."
    ),
}


def export_layout(params: dict) -> str:
    return str(EXPORT_LAYOUTS.get(params.get("what"), ""))


def export_reads(params: dict) -> str:
    return str(EXPORT_READERS.get(params.get("what"), ""))


def export_what(params: dict) -> str:
    return str(EXPORT_LABELS.get((params.get("what"), params.get("fmt")), "?"))


def export_label(params: dict) -> str:
    return _("Export: %(what)s") % {"what": export_what(params)}


def export_run(pipeline: VisitPipeline, *, what: str, fmt: str, job_id: int, **_kw) -> dict:
    """The body of the export job: write the records (counted) and store the file."""
    version = _check_export(pipeline, what, fmt)
    if what == "dataset":
        records, columns = dataset_records(version, fmt=fmt), visit_parse.PUBLISHED_COLUMNS
    else:
        records, columns = preference_records(pipeline), PREFERENCE_COLUMNS
    stored = export_store(
        job_id=job_id,
        recipe="visit",
        object_id=pipeline.pk,
        filename=f"visit-{pipeline.pk}-{what}.{fmt}",
        content_type=CONTENT_TYPES[fmt],
        write=lambda fh: records_write(
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
