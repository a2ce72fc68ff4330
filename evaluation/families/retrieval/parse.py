"""NaturalBench-Retrieval files (naturalbench.txt App. B) into item and prediction rows."""

from __future__ import annotations

from annotator.platform.errors import LineErrors
from evaluation import importers
from evaluation.importers import ItemRow, PredictionRow, float_list, parse_indexed, text_field

# What the import page shows as an example of each file.
FORMATS = {
    "items": '{"id": "p1", "image_0": "a.jpg", "image_1": "b.jpg", '
    '"caption_0": "a dog on a sofa", "caption_1": "a sofa on a dog"}',
    "predictions": '{"id": "p1", "scores": [[0.31, 0.22], [0.25, 0.29]]}',
}


def _item(line: int, obj: dict, index: str, errors: LineErrors) -> ItemRow:
    keys = ("image_0", "image_1", "caption_0", "caption_1")
    data = {k: text_field(obj, k, line, errors) for k in keys}
    return ItemRow(item_id=index, data=data, line=line)


def parse_items(content: str, filename: str = "") -> list[ItemRow]:
    return parse_indexed(content, filename, _item, file="retrieval")


def _prediction(line: int, obj: dict, index: str, errors: LineErrors) -> PredictionRow | None:
    scores = obj.get("scores")
    matrix = (
        [float_list(r, 2) for r in scores]
        if isinstance(scores, list) and len(scores) == 2
        else None
    )
    if not matrix or any(r is None for r in matrix):
        errors.add(line, "'scores' must be a 2 × 2 list of numbers indexed [caption][image]")
        return None
    return PredictionRow(item_id=index, raw_output="", line=line, scores=matrix)


def parse_predictions(content: str, filename: str = "", option: str = "") -> list[PredictionRow]:
    """Per pair: "scores" = [[s(c0,i0), s(c0,i1)], [s(c1,i0), s(c1,i1)]] (App. B)."""
    return importers.parse_indexed_predictions(content, filename, _prediction, "id")
