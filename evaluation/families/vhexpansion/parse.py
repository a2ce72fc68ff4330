"""VHExpansion files (METRICS.md Sec. 3) into item and prediction rows."""

from __future__ import annotations

from annotator.platform.errors import LineErrors
from evaluation import importers
from evaluation.importers import parse_indexed, text_field, truthy
from evaluation.metrics import naturalbench as nb
from evaluation.parsed import ItemRow, PredictionRow

# What the import page shows as an example of each file.
FORMATS = {
    "items": '{"id": "c1", "pair_id": "p1", "image": "x.jpg", "question": "Is there a cat?", '
    '"answer": "yes", "negated": false, "perturbation": "original", "source": "POPE"}',
    "predictions": '{"id": "c1", "output": "Yes, there is a cat."}',
}


def answer_of(output: str) -> str | None:
    """The answer "yes" or "no", else None: NaturalBench's official whole-word search (the
    earlier word wins)."""
    parsed = nb.parse_answer(output, nb.YES_NO)
    return None if parsed is None else ("yes" if parsed == nb.A0 else "no")


def _check_pairs(rows: list[ItemRow], errors: LineErrors) -> None:
    by_pair: dict[str, list[ItemRow]] = {}
    for row in rows:
        by_pair.setdefault(row.data["pair_id"], []).append(row)
    for pair_id, members in by_pair.items():
        flags = sorted(m.data["negated"] for m in members)
        if flags != [False, True]:
            errors.add(
                members[0].line,
                f"pair {pair_id!r} needs exactly one original and one negated case",
            )
        elif members[0].data["perturbation"] != members[1].data["perturbation"]:
            errors.add(
                members[1].line, f"both cases of pair {pair_id!r} need the same perturbation"
            )


def _item(line: int, obj: dict, index: str, errors: LineErrors) -> ItemRow | None:
    answer = str(obj.get("answer", "")).strip().lower()
    if answer not in ("yes", "no"):
        errors.add(line, "'answer' must be 'yes' or 'no'")
        return None
    negated = truthy(obj.get("negated", False))
    if negated is None:
        errors.add(line, "'negated' must be true or false")
        return None
    data = {
        "pair_id": str(obj.get("pair_id") or ""),
        "image": text_field(obj, "image", line, errors, required=False),
        "question": text_field(obj, "question", line, errors),
        "answer": answer,
        "negated": negated,
        "perturbation": str(obj.get("perturbation") or "original"),
        "source": str(obj.get("source") or ""),
    }
    if not data["pair_id"]:
        errors.add(line, "missing field 'pair_id'")
        return None
    return ItemRow(item_id=index, data=data, line=line)


def parse_items(content: str, filename: str = "") -> list[ItemRow]:
    """VH test cases: id, pair_id, image, question, answer (yes/no), negated, perturbation,
    source. Each pair_id needs exactly one original and one negated case (vhexpansion Def. 3)."""
    return parse_indexed(content, filename, _item, file="VH test-case", check=_check_pairs)


def _prediction(line: int, obj: dict, index: str, errors: LineErrors) -> PredictionRow | None:
    output = obj.get("output")
    if not isinstance(output, str):
        errors.add(line, "'output' must be a string")
        return None
    return PredictionRow(
        item_id=index, raw_output=output, line=line, parsed_answer=answer_of(output)
    )


def parse_predictions(content: str, filename: str = "", option: str = "") -> list[PredictionRow]:
    """Per test case: id and the model's output text, parsed as yes/no (``answer_of``)."""
    return importers.parse_indexed_predictions(content, filename, _prediction, "id")
