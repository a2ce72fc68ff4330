"""NaturalBench files (METRICS.md Sec. 1) into item and prediction rows, and answer parsing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from annotator.platform.errors import LineErrors
from evaluation.compute import ItemData
from evaluation.importers import (
    ItemRow,
    PredictionRow,
    check_unique,
    float_list,
    index_of,
    read_table,
    text_field,
)
from evaluation.metrics import naturalbench as nb

from . import layout


def _question_type(value: Any) -> str | None:
    text = str(value or "").strip().lower().replace(" ", "_").replace("-", "_").replace("/", "_")
    aliases = {
        "yes_no": nb.YES_NO,
        "multiple_choice": nb.MULTIPLE_CHOICE,
        "mcq": nb.MULTIPLE_CHOICE,
    }
    return aliases.get(text)


def _skills_ok(skills: Any) -> bool:
    return (
        isinstance(skills, list)
        and len(skills) == 2
        and all(isinstance(s, list) and all(isinstance(t, str) for t in s) for s in skills)
    )


def parse_items(content: str, filename: str = "") -> list[ItemRow]:
    """NaturalBench records (Index, Image_0, …, Question_Type, Source); ground truth must follow
    the published layout q0_i0 = a0, q0_i1 = a1, q1_i0 = a1, q1_i1 = a0 (``layout``)."""
    errors = LineErrors()
    rows = []
    for line, obj in read_table(content, errors, filename):
        index = index_of(obj)
        if index is None:
            errors.add(line, "missing field 'Index'")
            continue
        qtype = _question_type(obj.get("Question_Type", obj.get("Question Type")))
        if qtype is None:
            errors.add(line, "Question_Type must be 'yes_no' or 'multiple_choice'")
            continue
        data: dict[str, Any] = {"question_type": qtype}
        for key in ("Question_0", "Question_1", "Image_0", "Image_1", "Source"):
            data[key.lower()] = text_field(obj, key, line, errors, required=key != "Source")
        data["language"] = str(obj.get("Language") or obj.get("language") or "en")
        expected = [a.lower() for a in layout.expected_answers(qtype)]
        answers = [str(obj.get(key, "")).strip().lower() for key in layout.ANSWER_FIELDS]
        if answers != expected:
            errors.add(
                line,
                "ground truth does not follow the NaturalBench layout "
                f"(expected {', '.join(expected)} for {', '.join(layout.ANSWER_FIELDS)})",
            )
            continue
        skills = obj.get("Skills", obj.get("skills"))
        if skills is not None:
            if not _skills_ok(skills):
                errors.add(line, "Skills must be two lists of tag strings: [[q0 tags], [q1 tags]]")
                continue
            data["skills"] = skills
        rows.append(ItemRow(item_id=index, data=data, line=line))
    check_unique(rows, errors, "Index")
    errors.raise_if_any("The NaturalBench file has errors; nothing was imported.")
    return rows


def _scores(scores: Any) -> dict | None:
    """The likelihoods of one sample, or None when they are malformed (App. D)."""
    clean = {}
    ok = isinstance(scores, dict)
    for key, width in (("p_a0", 4), ("p_a1", 4), ("p_a0_blind", 2), ("p_a1_blind", 2)):
        if ok and key in scores:
            values = float_list(scores[key], width)
            if values is None:
                ok = False
            else:
                clean[key] = values
    if not ok or ("p_a0" in clean) != ("p_a1" in clean):
        return None
    return clean


def parse_predictions(content: str, filename: str = "", option: str = "") -> list[PredictionRow]:
    """Per sample: "outputs" (four strings in q0_i0, q0_i1, q1_i0, q1_i1 order) or one field per
    key; optional "scores" {p_a0: [4], p_a1: [4], p_a0_blind: [2], p_a1_blind: [2]} (App. D)."""
    errors = LineErrors()
    rows = []
    for line, obj in read_table(content, errors, filename):
        index = index_of(obj)
        if index is None:
            errors.add(line, "missing field 'Index'")
            continue
        outputs = obj.get("outputs")
        if outputs is None and all(k in obj for k in nb.SAMPLE_KEYS):
            outputs = [obj[k] for k in nb.SAMPLE_KEYS]
        if not isinstance(outputs, list) or len(outputs) != 4:
            errors.add(line, "expected 'outputs' with four answers (or fields q0_i0 … q1_i1)")
            continue
        if not all(isinstance(o, str) for o in outputs):
            errors.add(line, "every answer in 'outputs' must be a string")
            continue
        scores = obj.get("scores")
        if scores is not None:
            scores = _scores(scores)
            if scores is None:
                errors.add(line, "'scores' must hold p_a0 and p_a1 as four numbers each")
                continue
        rows.append(
            PredictionRow(
                item_id=index,
                raw_output=dict(zip(nb.SAMPLE_KEYS, outputs, strict=True)),
                line=line,
                scores=scores,
            )
        )
    check_unique(rows, errors, "prediction for Index")
    errors.raise_if_any("The predictions file has errors; nothing was imported.")
    return rows


def parse_answer(item: ItemData, raw: Mapping[str, str]) -> list[str | None]:
    """Official answer parsing of the four outputs of one sample (naturalbench.txt Sec. 4)."""
    return [nb.parse_answer(raw.get(key, ""), item.data["question_type"]) for key in nb.SAMPLE_KEYS]
