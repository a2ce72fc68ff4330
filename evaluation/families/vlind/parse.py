"""VLind-Bench's official data.json (METRICS.md Sec. 4) into item and prediction rows."""

from __future__ import annotations

import json
from typing import Any

from annotator.platform import structured
from annotator.platform.errors import Invalid, LineErrors
from evaluation.compute import Items, Predictions
from evaluation.importers import check_unique, read_jsonl, text_field
from evaluation.metrics import vlind
from evaluation.parsed import ItemRow, PredictionRow

# What the import page shows as an example of each file.
FORMATS = {
    "items": "data.json (official layout: concept, context_id, context, true_statement, "
    "false_statement, existent_noun, non-existent_noun, best_img_id, "
    "aggregated_human_label_good_images)",
    "predictions": "data.json with '<model>_pred_a1_image' … '<model>_pred_d2' keys, "
    "each {response, answer}",
}

STYLES = {
    **{str(i): "photorealistic" for i in range(0, 4)},
    **{str(i): "illustration" for i in range(4, 8)},
    **{str(i): "cartoon" for i in range(8, 12)},
}
VOTE_THRESHOLD = 2
SINGLE_KEYS = ("a1_image", "a2_image", "b1", "b2", "c1_image", "c2_image")
GOOD_IMAGES = "aggregated_human_label_good_images"
# The published data.json's fields, in its order.
DATA_FIELDS = (
    "concept",
    "context_id",
    "context",
    "factual_context",
    "true_statement",
    "false_statement",
    "existent_noun",
    "non-existent_noun",
    GOOD_IMAGES,
    "best_img_id",
)
_ITEM_KEYS = tuple(key for key in DATA_FIELDS if key != GOOD_IMAGES)  # the votes are read apart


def item_id(obj: dict) -> str:
    if obj.get("id") not in (None, ""):
        return str(obj["id"])
    return f"{obj.get('concept', '')}/{obj.get('context_id', '')}"


def parse_items(content: str, filename: str = "") -> list[ItemRow]:
    """Instances of the official data.json; good images are those with ≥ 2 of 3 votes."""
    errors = LineErrors()
    rows = []
    for line, obj in read_jsonl(content, errors):
        for key in ("concept", "context", "true_statement", "false_statement"):
            text_field(obj, key, line, errors)
        votes = obj.get(GOOD_IMAGES, {})
        if not isinstance(votes, dict) or not all(
            isinstance(v, int | float) for v in votes.values()
        ):
            errors.add(line, "'aggregated_human_label_good_images' must map image ids to votes")
            continue
        good = [str(k) for k, v in votes.items() if v >= VOTE_THRESHOLD]
        data = {key: obj.get(key, "") for key in _ITEM_KEYS}
        data["good_images"] = good
        data[GOOD_IMAGES] = {str(k): v for k, v in votes.items()}  # the file's votes, as read
        rows.append(ItemRow(item_id=item_id(obj), data=data, line=line, kept=bool(good)))
    check_unique(rows, errors, "instance")
    errors.raise_if_any("The VLind-Bench file has errors; nothing was imported.")
    return rows


def model_identifiers(content: str) -> list[str]:
    """Model identifiers that have predictions in a data.json ("{mid}_pred_a1_image" keys)."""
    try:
        data = structured.loads(content)
    except structured.StructuredTextError:
        return []
    found: set[str] = set()
    for obj in data if isinstance(data, list) else []:
        if isinstance(obj, dict):
            found.update(k[: -len("_pred_a1_image")] for k in obj if k.endswith("_pred_a1_image"))
    return sorted(found)


def _answer(entry: Any) -> tuple[str | None, bool | None, bool]:
    """(response, parsed answer, ok). The official scorer reads the stored 'answer' field."""
    if not isinstance(entry, dict):
        return None, None, False
    response = entry.get("response")
    if response is not None and not isinstance(response, str):
        return None, None, False
    answer = entry.get("answer")
    if answer is not None:
        if answer not in ("True", "False", "NA"):
            return None, None, False
        return response, {"True": True, "False": False}.get(answer), True
    if response is None:
        return None, None, False
    return response, vlind.parse_true_false(response), True


def _model_identifier(content: str, given: str) -> str:
    if given:
        return given
    found = model_identifiers(content)
    if len(found) != 1:
        raise Invalid(
            "Name the model identifier: the file holds predictions for "
            + (", ".join(found) if found else "no model"),
            [{"line": 0, "error": "model identifier needed"}],
        )
    return found[0]


def _instance(obj: dict, prefix: str, line: int, errors: LineErrors) -> PredictionRow | None:
    """One instance's answers under ``prefix`` ("{mid}_pred_"), or None after a line error."""
    raw: dict[str, Any] = {}
    parsed: dict[str, Any] = {}
    for key in SINGLE_KEYS:
        response, answer, good = _answer(obj.get(prefix + key))
        if not good:
            errors.add(line, f"'{prefix + key}' must be {{response, answer: True/False/NA}}")
            return None
        raw[key], parsed[key] = response, answer
    for key in ("d1", "d2"):
        per_image = obj.get(prefix + key)
        if not isinstance(per_image, dict):
            errors.add(line, f"'{prefix + key}' must map good image ids to answers")
            return None
        raw[key], parsed[key] = {}, {}
        for image_id, entry in per_image.items():
            response, answer, good = _answer(entry)
            if not good:
                errors.add(line, f"'{prefix + key}'[{image_id!r}] has no valid answer")
                return None
            raw[key][str(image_id)], parsed[key][str(image_id)] = response, answer
    return PredictionRow(item_id=item_id(obj), raw_output=raw, line=line, parsed_answer=parsed)


def parse_predictions(content: str, filename: str = "", option: str = "") -> list[PredictionRow]:
    """Predictions stored in data.json under "{mid}_pred_*" keys (official gpt4o_eval.py);
    ``option`` is the model identifier {mid}, found in the file when it holds one model."""
    errors = LineErrors()
    prefix = f"{_model_identifier(content, option)}_pred_"
    rows = []
    for line, obj in read_jsonl(content, errors):
        if not any(k.startswith(prefix) for k in obj):
            continue  # the official runner skips instances without good images
        row = _instance(obj, prefix, line, errors)
        if row is not None:
            rows.append(row)
    check_unique(rows, errors, "prediction for instance")
    errors.raise_if_any("The predictions in the data.json have errors; nothing was imported.")
    return rows


# The model identifier of an exported predictions file: score_pipeline.py -mid blindspot.
EXPORT_IDENTIFIER = "blindspot"


def _entry(response: Any, answer: Any) -> dict:
    """One test's {response, answer} as gpt4o_eval.py stores it ("NA" when none parsed)."""
    return {"response": response, "answer": {True: "True", False: "False"}.get(answer, "NA")}


def predictions_file(items: Items, predictions: Predictions) -> tuple[str, str]:
    """The run as the official ``gpt4o_eval.py`` writes its output and ``score_pipeline.py``
    reads it (vlind-bench.txt Sec. 3): the data.json rows, in order, each kept instance with
    '{mid}_pred_a1_image' … '{mid}_pred_d2' ({mid} = "blindspot"). Refuses a run missing a kept
    instance (score_pipeline.py would stop at it) or items without their votes."""
    kept = [item for item in items if item.kept]
    missing = [item.item_id for item in kept if item.item_id not in predictions]
    if missing:
        raise Invalid(
            f"The run has no answers for {len(missing)} of {len(kept)} instances (first: "
            f"{missing[0]!r}); score_pipeline.py reads every instance with a good image.",
            [{"line": 0, "error": f"no answers for instance {missing[0]!r}"}],
        )
    no_votes = [item.item_id for item in items if GOOD_IMAGES not in item.data]
    if no_votes:
        raise Invalid(
            f"{len(no_votes)} items were imported without their votes (first: {no_votes[0]!r});"
            " import the version's data.json again to export predictions.",
            [{"line": 0, "error": f"no votes for instance {no_votes[0]!r}"}],
        )
    prefix = f"{EXPORT_IDENTIFIER}_pred_"
    out = []
    for item in items:
        row = {key: item.data.get(key, "") for key in DATA_FIELDS}
        if item.kept:
            p = predictions[item.item_id]
            raw, parsed = p.raw_output or {}, p.parsed_answer or {}
            for key in SINGLE_KEYS:
                row[prefix + key] = _entry(raw.get(key), parsed.get(key))
            for key in ("d1", "d2"):
                answers, responses = parsed.get(key) or {}, raw.get(key) or {}
                row[prefix + key] = {
                    i: _entry(responses.get(i), answers.get(i)) for i in item.data["good_images"]
                }
        out.append(row)
    return f"data_{EXPORT_IDENTIFIER}.json", json.dumps(out, ensure_ascii=False, indent=4) + "\n"
