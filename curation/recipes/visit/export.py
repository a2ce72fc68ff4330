"""Exports in the published VisIT-Bench layouts (METRICS.md Sec. 2): a dataset version as CSV or
JSONL with the published columns, and the crowd's forced choices in the columns of
``visit_bench_human_preferences.csv`` (one row per vote). Both read back through the evaluation
app's importers unchanged."""

from __future__ import annotations

import csv
import io
import json

from annotator.models import Annotation
from annotator.services import Invalid

from ...models.visit import VisitPair, VisitPipeline
from . import services

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


def _csv(columns, records) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    return out.getvalue()


def dataset_export(*, pipeline: VisitPipeline, fmt: str) -> str:
    """The pipeline's current version in the published layout."""
    if fmt not in FORMATS:
        raise Invalid(f"Unknown format {fmt!r}: use csv or jsonl.")
    version = services.version_of(pipeline)
    records = dataset_records(version, fmt=fmt)
    if fmt == "csv":
        return _csv(DATASET_COLUMNS, records)
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def preference_records(pipeline: VisitPipeline) -> list[dict]:
    """One row per crowd vote on the current version's tuples, the model chosen flagged TRUE
    (the kind recorded the winner with the sides un-swapped)."""
    version = services.version_of(pipeline)
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
    return _csv(PREFERENCE_COLUMNS, preference_records(pipeline))
