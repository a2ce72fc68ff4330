"""VisIT-Bench's published CSVs (METRICS.md Sec. 2) into item and prediction rows, and an item back
into the published dataset layout."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping
from typing import Any

from annotator.platform.errors import LineErrors
from evaluation.importers import ItemRow, PredictionRow, read_csv, truthy

# What the import page shows as an example of each file.
FORMATS = {
    "items": "single_image_full_dataset.csv (instruction_category, image, instruction, "
    "gpt4_prediction, human_ratings_gpt4_correct, human_ratings_problem_in_caption, …)",
    "predictions": "the model output CSV: the dataset columns plus one column with the "
    "response (e.g. llava13b_output)",
}


# The published dataset's columns, in its order (what an item's data writes back).
PUBLISHED_COLUMNS = (
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
# Every column a dataset file may hold (some also have ``visual``, ``image_dense_captions``).
DATASET_COLUMNS = {*PUBLISHED_COLUMNS, "visual", "image_dense_captions"}


def visit_key(image: str, instruction: str) -> str:
    """An instance's key: its image and instruction (the official files name nothing else)."""
    return hashlib.sha1(f"{image}\n{instruction}".encode()).hexdigest()[:12]


def item_key(data: Mapping[str, Any]) -> str:
    return visit_key(data.get("image", ""), data.get("instruction", ""))


def _ids(rows: list[tuple[int, dict]]) -> list[str]:
    """Stable ids from (image, instruction); a repeated pair gets "~2", "~3" in file order (the
    published dataset repeats one instance, and model files repeat or omit it)."""
    seen: Counter[str] = Counter()
    ids = []
    for _, row in rows:
        key = visit_key(row.get("image", ""), row.get("instruction", ""))
        seen[key] += 1
        ids.append(key if seen[key] == 1 else f"{key}~{seen[key]}")
    return ids


def parse_items(content: str, filename: str = "") -> list[ItemRow]:
    """The dataset CSV. An instance is kept for leaderboards when human_ratings_gpt4_correct is
    true and human_ratings_problem_in_caption is false (529 of 578 in the published file)."""
    errors = LineErrors()
    header, rows = read_csv(content, errors)
    missing = {"image", "instruction", "gpt4_prediction", "human_ratings_gpt4_correct"} - set(
        header
    )
    if header and missing:
        errors.add(1, f"missing columns: {', '.join(sorted(missing))}")
    errors.raise_if_any("The VisIT-Bench CSV has errors; nothing was imported.")
    items = []
    for (line, row), item_id in zip(rows, _ids(rows), strict=True):
        correct = truthy(row.get("human_ratings_gpt4_correct", ""))
        problem = truthy(row.get("human_ratings_problem_in_caption", "false"))
        if correct is None or problem is None:
            errors.add(line, "human rating flags must be TRUE or FALSE")
            continue
        if not row.get("instruction", "").strip():
            errors.add(line, "empty instruction")
            continue
        caption = row.get("instruction_conditioned_caption") or row.get("image_dense_captions", "")
        data = {
            "category": row.get("instruction_category", ""),
            "image": row.get("image", ""),
            "instruction": row.get("instruction", ""),
            "caption": caption,
            "reference": row.get("gpt4_prediction", ""),
            "reference_output": row.get("reference_output", ""),
            "gpt4_correct": correct,
            "problem_in_caption": problem,
            "problem_in_gpt4": truthy(row.get("human_ratings_problem_in_gpt4", "")),
        }
        items.append(ItemRow(item_id=item_id, data=data, line=line, kept=correct and not problem))
    errors.raise_if_any("The VisIT-Bench CSV has errors; nothing was imported.")
    return items


# The sandbox's known non-output columns (make_pairs.py): a model file's output column is the one
# column outside this list. ``human_ratings_*`` are matched by prefix; pandas names a blank
# header "Unnamed: 0" (openflamingo_single_fixed.csv has one).
NON_OUTPUT_COLUMNS = frozenset(
    {
        "image_url",
        "image_dense_caption",
        "instruction_category",
        "instruction",
        "output_human_annotated",
        "image",
        "gpt4_prediction",
        "image_dense_captions",
        "reference_output",
        "public_images_metadata",
        "Unnamed",
        "Unnamed: 0",
        "visual",
        "idx",
        "question",
        "image_id",
        # Blindspot's own export names the caption column as the paper does.
        "instruction_conditioned_caption",
    }
)


def _known(column: str) -> bool:
    return (
        not column
        or column in NON_OUTPUT_COLUMNS
        or column.startswith("human_ratings_")
        or column.startswith("Unnamed: ")
    )


def output_column(header: list[str]) -> str | None:
    """The model output column by the sandbox's rule: the one column outside its known
    non-output columns (make_pairs.py); None when there are none or several."""
    extra = [h for h in header if not _known(h)]
    return extra[0] if len(extra) == 1 else None


def parse_predictions(content: str, filename: str = "", option: str = "") -> list[PredictionRow]:
    """A model output CSV: the dataset columns plus one column with the model's response
    (``option`` names it; else the one extra column)."""
    errors = LineErrors()
    header, rows = read_csv(content, errors)
    column = option or (output_column(header) or "")
    if header and (not column or column not in header):
        extra = [h for h in header if not _known(h)]
        why = (
            f"the columns outside the known dataset columns are {', '.join(extra)}"
            if extra
            else "every column is a known dataset column"
        )
        errors.add(
            1,
            "cannot tell which column holds the model output: " + why + "; name it "
            f"(columns: {', '.join(header)})",
        )
    errors.raise_if_any("The model output CSV has errors; nothing was imported.")
    predictions = []
    for (line, row), item_id in zip(rows, _ids(rows), strict=True):
        if not row.get("instruction", "").strip():
            errors.add(line, "empty instruction")
            continue
        predictions.append(PredictionRow(item_id=item_id, raw_output=row[column], line=line))
    errors.raise_if_any("The model output CSV has errors; nothing was imported.")
    return predictions


def prediction_column(content: str) -> str:
    """The response column a model output CSV holds, detected: the model's name in the official
    judgment files (make_pairs.py)."""
    header, _ = read_csv(content.split("\n", 1)[0] + "\n", LineErrors())
    return output_column(header) or ""


def _flag(value: bool, fmt: str):
    # The published CSV writes TRUE / FALSE; JSONL gets JSON booleans.
    if fmt == "jsonl":
        return bool(value)
    return "TRUE" if value else "FALSE"


def published_record(data: Mapping[str, Any], *, fmt: str = "csv") -> dict:
    """An item's data in the published columns (``PUBLISHED_COLUMNS``): what ``parse_items``
    reads back unchanged."""
    metadata = data.get("public_images_metadata") or {}
    return {
        "instruction_category": data.get("category", ""),
        "image": data.get("image", ""),
        "instruction": data.get("instruction", ""),
        "instruction_conditioned_caption": data.get("caption", ""),
        "gpt4_prediction": data.get("reference", ""),
        "reference_output": data.get("reference_output", ""),
        "human_ratings_gpt4_correct": _flag(data.get("gpt4_correct", False), fmt),
        "human_ratings_problem_in_caption": _flag(data.get("problem_in_caption", False), fmt),
        "human_ratings_problem_in_gpt4": _flag(data.get("problem_in_gpt4", False), fmt),
        "public_images_metadata": json.dumps(metadata, ensure_ascii=False) if metadata else "",
    }
