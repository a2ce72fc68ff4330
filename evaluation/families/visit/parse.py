"""VisIT-Bench's published CSVs (METRICS.md Sec. 2) into item and prediction rows, and an item back
into the published dataset layout: single-image instances as ``single_image_full_dataset.csv``
writes them, multi-image instances as ``visit_bench_multi_images.csv`` does (``images``: a JSON
list of URLs; one instruction-conditioned caption and one BLIP-2 caption per image)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from annotator.platform import structured
from annotator.platform.errors import LineErrors
from evaluation.importers import read_csv, read_jsonl, truthy
from evaluation.parsed import ItemRow, PredictionRow

# What the import page shows as an example of each file.
FORMATS = {
    "items": "single_image_full_dataset.csv (instruction_category, image, instruction, "
    "gpt4_prediction, human_ratings_gpt4_correct, human_ratings_problem_in_caption, …) or "
    "visit_bench_multi_images.csv (images as a JSON list, images_dense_captions, …) or the "
    "fully annotated example (image_url, image_dense_caption, instruction_category, "
    "instruction, output_human_annotated)",
    "predictions": "the model output CSV: the dataset columns plus one column with the "
    "response (e.g. llava13b_output)",
}


# The published dataset's columns, in its order (single_image_full_dataset.csv, the file the
# sandbox's make_pairs.py reads: it reads the caption as ``image_dense_captions``).
PUBLISHED_COLUMNS = (
    "instruction_category",
    "image",
    "visual",
    "instruction",
    "gpt4_prediction",
    "image_dense_captions",
    "reference_output",
    "human_ratings_gpt4_correct",
    "human_ratings_problem_in_caption",
    "human_ratings_problem_in_gpt4",
    "public_images_metadata",
)
# The published multi-image dataset's columns, in its order (visit_bench_multi_images.csv).
MULTI_COLUMNS = (
    "instruction_category",
    "images",
    "is_multiple_images",
    "instruction",
    "gpt4_prediction",
    "images_dense_captions",
    "images_blip2_captions",
    "reference_output",
    "human_ratings_gpt4_correct",
    "human_ratings_problem_in_caption",
    "human_ratings_problem_in_gpt4",
    "public_images_metadata",
)
# The fully annotated example layout (the dataset card example, visit_fully_annotated_example.csv):
# one image, its dense caption and a human-written response; the columns it stands for here.
ANNOTATED_COLUMNS = {
    "image_url": "image",
    "image_dense_caption": "image_dense_captions",
    "output_human_annotated": "gpt4_prediction",
}
# Every column a dataset file may hold (Blindspot's older exports wrote the caption as
# ``instruction_conditioned_caption``, the paper's name for it).
DATASET_COLUMNS = {*PUBLISHED_COLUMNS, *MULTI_COLUMNS, "instruction_conditioned_caption"}


def read_records(content: str, errors: LineErrors) -> tuple[list[str], list[tuple[int, dict]]]:
    """A dataset file's header and rows: the published CSV, or Blindspot's JSONL export of the
    same columns (JSON booleans and objects kept as they are)."""
    if content.lstrip("\ufeff \t\r\n").startswith(("{", "[")):
        rows = read_jsonl(content, errors)
        header = list(dict.fromkeys(k for _line, row in rows for k in row))
        return header, rows
    return read_csv(content, errors)


def _text(row: Mapping[str, Any], key: str) -> str:
    value = row.get(key)
    return "" if value is None else value if isinstance(value, str) else json.dumps(value)


def _metadata(value: Any) -> Any:
    """``public_images_metadata`` as JSON when it parses (NaN → null, as jsonb needs), else the
    text as published."""
    if isinstance(value, dict | list):
        return value
    text = str(value or "").strip()
    if not text:
        return {}
    try:
        return structured.loads(text, nonfinite="null")
    except structured.StructuredTextError:
        return text


def images_cell(urls: Sequence[str]) -> str:
    """The published ``images`` cell of a multi-image instance: its URLs as a JSON list (what
    ``json.dumps`` writes, as in visit_bench_multi_images.csv); also the instance's key image."""
    return json.dumps(list(urls), ensure_ascii=False)


def json_strings(value: Any, width: int | None = None) -> list[str] | None:
    """A JSON list of strings (a list, or its text); None when it is not one. With ``width``, a
    longer list may only go on with NaN / null: visit_bench_multi_images.csv pads every
    ``images_dense_captions`` list to ten entries with pandas' NaN, which are dropped."""
    if isinstance(value, str):
        try:
            value = structured.loads(value, nonfinite="null")
        except structured.StructuredTextError:
            return None
    if not isinstance(value, list):
        return None
    if width is not None and len(value) > width and all(v is None for v in value[width:]):
        value = value[:width]
    if not all(isinstance(v, str) for v in value):
        return None
    return value


def combined_caption(captions: Sequence[str]) -> str:
    """The instance's caption as one text: the caption itself for one image, else one line per
    image, "Image k: …" (Fig. 4 numbers the images of a multi-image task)."""
    if len(captions) == 1:
        return captions[0].strip()
    return "\n".join(f"Image {k}: {c.strip()}" for k, c in enumerate(captions, start=1))


def item_images(data: Mapping[str, Any]) -> list[str]:
    """Every image of an instance, in order: its ``images`` list, else its one ``image``."""
    images = data.get("images")
    if isinstance(images, list) and images:
        return [str(u) for u in images]
    image = data.get("image") or ""
    return [image] if image else []


def item_captions(data: Mapping[str, Any]) -> list[str]:
    """One instruction-conditioned caption per image (the one caption of a single image)."""
    captions = data.get("captions")
    if isinstance(captions, list) and captions:
        return [str(c) for c in captions]
    return [str(data.get("caption") or "")]


def _row_image(row: Mapping[str, Any]) -> str:
    """The key image of a dataset or model-file row: ``image``, else the ``images`` list in its
    published spelling (a cell that is not a JSON list is kept as written)."""
    image = row.get("image") or ""
    if image or not row.get("images"):
        return image
    urls = json_strings(row["images"])
    return images_cell(urls) if urls is not None else str(row["images"])


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
        key = visit_key(_row_image(row), row.get("instruction", ""))
        seen[key] += 1
        ids.append(key if seen[key] == 1 else f"{key}~{seen[key]}")
    return ids


def parse_items(content: str, filename: str = "") -> list[ItemRow]:
    """The dataset CSV (or Blindspot's JSONL export of it). An instance is kept for leaderboards
    when human_ratings_gpt4_correct is true and human_ratings_problem_in_caption is false (529 of
    578 in the published file; make_pairs.py's filter)."""
    errors = LineErrors()
    header, rows = read_records(content, errors)
    annotated = set(ANNOTATED_COLUMNS) <= set(header) and "gpt4_prediction" not in header
    if annotated:
        header, rows = _annotated(rows)
    missing = {"instruction", "gpt4_prediction", "human_ratings_gpt4_correct"} - set(header)
    if "image" not in header and "images" not in header:
        missing.add("image (or images)")
    if header and missing:
        errors.add(1, f"missing columns: {', '.join(sorted(missing))}")
    errors.raise_if_any("The VisIT-Bench CSV has errors; nothing was imported.")
    rows = [
        (line, {k: _text(row, k) if k != "public_images_metadata" else row[k] for k in row})
        for line, row in rows
    ]
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
        images = _images_of(row, line, errors)
        if images is None:
            continue
        data = {
            "category": row.get("instruction_category", ""),
            "image": row.get("image", ""),
            "instruction": row.get("instruction", ""),
            "caption": row.get("image_dense_captions")
            or row.get("instruction_conditioned_caption", ""),
            "reference": row.get("gpt4_prediction", ""),
            "reference_output": row.get("reference_output", ""),
            "gpt4_correct": correct,
            "problem_in_caption": problem,
            "problem_in_gpt4": truthy(row.get("human_ratings_problem_in_gpt4", "")),
            "visual": row.get("visual", ""),
            "public_images_metadata": _metadata(row.get("public_images_metadata")),
            **images,
        }
        if annotated:
            data["reference_source"] = "human"
        items.append(ItemRow(item_id=item_id, data=data, line=line, kept=correct and not problem))
    errors.raise_if_any("The VisIT-Bench CSV has errors; nothing was imported.")
    return items


def _annotated(rows: list[tuple[int, dict]]) -> tuple[list[str], list[tuple[int, dict]]]:
    """Rows of the fully annotated layout in the published columns: the human-written response
    is the reference, correct by construction (nobody rated it, so it is not a GPT-4 output:
    ``reference_source`` "human" says so and Table 2 leaves it out)."""
    out = []
    for line, row in rows:
        mapped = {ANNOTATED_COLUMNS.get(k, k): v for k, v in row.items()}
        mapped["human_ratings_gpt4_correct"] = "TRUE"
        mapped["human_ratings_problem_in_caption"] = "FALSE"
        mapped["human_ratings_problem_in_gpt4"] = "FALSE"
        out.append((line, mapped))
    header = list(dict.fromkeys(k for _line, row in out for k in row))
    return header, out


def _images_of(row: Mapping[str, str], line: int, errors: LineErrors) -> dict | None:
    """A multi-image row's fields (``images`` and its captions, one per image); {} for a
    single-image row; None after adding the row's problem."""
    if row.get("image") or not row.get("images"):
        return {}
    urls = json_strings(row["images"])
    if not urls:
        return errors.add(line, 'images must be a JSON list of image URLs, e.g. ["https://…"]')
    fields = {}
    for column, key in (("images_dense_captions", "captions"), ("images_blip2_captions", "blip2")):
        value = json_strings(row.get(column) or "[]", len(urls))
        if value is None or (value and len(value) != len(urls)):
            return errors.add(
                line, f"{column} must be a JSON list of {len(urls)} texts, one per image"
            )
        fields[key] = value
    if not any(c.strip() for c in fields["captions"]):
        fields["captions"] = []
    return {
        "image": images_cell(urls),
        "images": urls,
        "captions": fields["captions"],
        "caption": combined_caption(fields["captions"]) if fields["captions"] else "",
        "blip2_captions": fields["blip2"],
        "multi_image": True,
    }


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
        # The published multi-image dataset's own columns (visit_bench_multi_images.csv; the
        # sandbox's list predates it): a multi-image model file carries them too.
        "images",
        "is_multiple_images",
        "images_dense_captions",
        "images_blip2_captions",
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


def _flag(value: bool, fmt: str, multi: bool = False):
    # The published single-image CSV writes TRUE / FALSE, the multi-image one True / False;
    # JSONL gets JSON booleans.
    if fmt == "jsonl":
        return bool(value)
    if multi:
        return "True" if value else "False"
    return "TRUE" if value else "FALSE"


def _listed(values: Sequence[str], fmt: str):
    return list(values) if fmt == "jsonl" else images_cell(values)


def multi_record(data: Mapping[str, Any], *, fmt: str = "csv") -> dict:
    """A multi-image item in visit_bench_multi_images.csv's columns and order (``MULTI_COLUMNS``):
    what ``parse_items`` reads back unchanged."""
    urls = item_images(data)
    captions = list(data.get("captions") or [])
    metadata = data.get("public_images_metadata") or {}
    if fmt != "jsonl" and not isinstance(metadata, str):
        metadata = json.dumps(metadata, ensure_ascii=False)
    return {
        "instruction_category": data.get("category", ""),
        "images": _listed(urls, fmt),
        "is_multiple_images": _flag(True, fmt, multi=True),
        "instruction": data.get("instruction", ""),
        "gpt4_prediction": data.get("reference", ""),
        "images_dense_captions": _listed(captions, fmt),
        "images_blip2_captions": _listed(data.get("blip2_captions") or [], fmt),
        "reference_output": data.get("reference_output", ""),
        "human_ratings_gpt4_correct": _flag(data.get("gpt4_correct", False), fmt, True),
        "human_ratings_problem_in_caption": _flag(data.get("problem_in_caption", False), fmt, True),
        "human_ratings_problem_in_gpt4": _flag(data.get("problem_in_gpt4", False), fmt, True),
        "public_images_metadata": metadata,
    }


def published_record(data: Mapping[str, Any], *, fmt: str = "csv") -> dict:
    """An item's data in the published columns and order (``PUBLISHED_COLUMNS``, as
    make_pairs.py reads them; a multi-image item in ``MULTI_COLUMNS``, see ``multi_record``):
    what ``parse_items`` reads back unchanged."""
    if data.get("multi_image"):
        return multi_record(data, fmt=fmt)
    metadata = data.get("public_images_metadata") or {}
    if fmt != "jsonl" and not isinstance(metadata, str):
        metadata = json.dumps(metadata, ensure_ascii=False) if metadata else ""
    return {
        "instruction_category": data.get("category", ""),
        "image": data.get("image", ""),
        "visual": data.get("visual", ""),
        "instruction": data.get("instruction", ""),
        "gpt4_prediction": data.get("reference", ""),
        "image_dense_captions": data.get("caption", ""),
        "reference_output": data.get("reference_output", ""),
        "human_ratings_gpt4_correct": _flag(data.get("gpt4_correct", False), fmt),
        "human_ratings_problem_in_caption": _flag(data.get("problem_in_caption", False), fmt),
        "human_ratings_problem_in_gpt4": _flag(data.get("problem_in_gpt4", False), fmt),
        "public_images_metadata": metadata,
    }
