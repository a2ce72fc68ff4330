"""NaturalBench-Retrieval files (naturalbench.txt App. B) into item and prediction rows."""

from __future__ import annotations

from annotator.platform.errors import LineErrors
from evaluation.importers import (
    ItemRow,
    PredictionRow,
    check_unique,
    float_list,
    index_of,
    read_table,
    text_field,
)


def parse_items(content: str, filename: str = "") -> list[ItemRow]:
    errors = LineErrors()
    rows = []
    for line, obj in read_table(content, errors, filename):
        index = index_of(obj)
        if index is None:
            errors.add(line, "missing field 'id'")
            continue
        data = {
            k: text_field(obj, k, line, errors)
            for k in ("image_0", "image_1", "caption_0", "caption_1")
        }
        rows.append(ItemRow(item_id=index, data=data, line=line))
    check_unique(rows, errors, "id")
    errors.raise_if_any("The retrieval file has errors; nothing was imported.")
    return rows


def parse_predictions(content: str, filename: str = "", option: str = "") -> list[PredictionRow]:
    """Per pair: "scores" = [[s(c0,i0), s(c0,i1)], [s(c1,i0), s(c1,i1)]] (App. B)."""
    errors = LineErrors()
    rows = []
    for line, obj in read_table(content, errors, filename):
        index = index_of(obj)
        if index is None:
            errors.add(line, "missing field 'id'")
            continue
        scores = obj.get("scores")
        matrix = (
            [float_list(r, 2) for r in scores]
            if isinstance(scores, list) and len(scores) == 2
            else None
        )
        if not matrix or any(r is None for r in matrix):
            errors.add(line, "'scores' must be a 2 × 2 list of numbers indexed [caption][image]")
            continue
        rows.append(PredictionRow(item_id=index, raw_output="", line=line, scores=matrix))
    check_unique(rows, errors, "prediction for id")
    errors.raise_if_any("The predictions file has errors; nothing was imported.")
    return rows
