"""NaturalBench files (METRICS.md Sec. 1) into item and prediction rows, and answer parsing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from annotator.platform.errors import LineErrors
from evaluation import importers
from evaluation.compute import ItemData
from evaluation.importers import float_list, parse_indexed, text_field
from evaluation.metrics import naturalbench as nb
from evaluation.parsed import ItemRow, PredictionRow

from . import layout

# What the import page shows as an example of each file.
FORMATS = {
    "items": '{"Index": 1, "Image_0": "img/1a.jpg", "Image_1": "img/1b.jpg", '
    '"Question_0": "Is the dog asleep?", "Image_0_Question_0": "Yes", '
    '"Image_1_Question_0": "No", "Question_1": "Is the dog awake?", '
    '"Image_0_Question_1": "No", "Image_1_Question_1": "Yes", "Question_Type": "yes_no", '
    '"Source": "DOCCI", "Skills": [["State"], ["State"]]}',
    "predictions": '{"Index": 1, "outputs": ["Yes", "No.", "no", "Yes, it is."], '
    '"scores": {"p_a0": [0.9, 0.2, 0.3, 0.8], "p_a1": [0.1, 0.8, 0.7, 0.2]}}',
}


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


def _item(line: int, obj: dict, index: str, errors: LineErrors) -> ItemRow | None:
    qtype = _question_type(obj.get("Question_Type", obj.get("Question Type")))
    if qtype is None:
        errors.add(line, "Question_Type must be 'yes_no' or 'multiple_choice'")
        return None
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
        return None
    skills = obj.get("Skills", obj.get("skills"))
    if skills is not None:
        if not _skills_ok(skills):
            errors.add(line, "Skills must be two lists of tag strings: [[q0 tags], [q1 tags]]")
            return None
        data["skills"] = skills
    return ItemRow(item_id=index, data=data, line=line)


def parse_items(content: str, filename: str = "") -> list[ItemRow]:
    """NaturalBench records (Index, Image_0, …, Question_Type, Source); ground truth must follow
    the published layout q0_i0 = a0, q0_i1 = a1, q1_i0 = a1, q1_i1 = a0 (``layout``)."""
    return parse_indexed(content, filename, _item, file="NaturalBench", id_field="Index")


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


def _prediction(line: int, obj: dict, index: str, errors: LineErrors) -> PredictionRow | None:
    outputs = obj.get("outputs")
    if outputs is None and all(k in obj for k in nb.SAMPLE_KEYS):
        outputs = [obj[k] for k in nb.SAMPLE_KEYS]
    if not isinstance(outputs, list) or len(outputs) != 4:
        errors.add(line, "expected 'outputs' with four answers (or fields q0_i0 … q1_i1)")
        return None
    if not all(isinstance(o, str) for o in outputs):
        errors.add(line, "every answer in 'outputs' must be a string")
        return None
    scores = obj.get("scores")
    if scores is not None:
        scores = _scores(scores)
        if scores is None:
            errors.add(line, "'scores' must hold p_a0 and p_a1 as four numbers each")
            return None
    raw = dict(zip(nb.SAMPLE_KEYS, outputs, strict=True))
    return PredictionRow(item_id=index, raw_output=raw, line=line, scores=scores)


def parse_predictions(content: str, filename: str = "", option: str = "") -> list[PredictionRow]:
    """Per sample: "outputs" (four strings in q0_i0, q0_i1, q1_i0, q1_i1 order) or one field per
    key; optional "scores" {p_a0: [4], p_a1: [4], p_a0_blind: [2], p_a1_blind: [2]} (App. D)."""
    return importers.parse_indexed_predictions(content, filename, _prediction, "Index")


def parse_answer(item: ItemData, raw: Mapping[str, str]) -> list[str | None]:
    """Official answer parsing of the four outputs of one sample (naturalbench.txt Sec. 4)."""
    return [nb.parse_answer(raw.get(key, ""), item.data["question_type"]) for key in nb.SAMPLE_KEYS]
