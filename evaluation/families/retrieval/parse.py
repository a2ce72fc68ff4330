"""NaturalBench-Retrieval files (naturalbench.txt App. B) into item and prediction rows.

Items: NaturalBench-Retrieval's published ``metadata.json`` (a JSON array whose item i has
``index`` = i, ``image_0``, ``image_1``, ``caption_0``, ``caption_1``) or the same fields as JSONL
/ CSV rows with an ``id``.

Scores: the official orientation is ``scores[i][image][caption]`` (naturalbench_retrieval.py,
``get_retrieval_scores``: ``c0_i1 = scores[i][1][0]``), i.e. s(c_j, i_k) = scores[i][k][j]. A file
is read in that orientation unless the prediction option says ``caption-image``. Stored scores are
``[caption][image]`` (``evaluation.metrics.retrieval`` and the scorer runner), so an official file
is transposed on the way in.
"""

from __future__ import annotations

import json
from typing import Any

from annotator.platform import structured
from annotator.platform.errors import Invalid, LineErrors
from evaluation import importers
from evaluation.compute import Items, Predictions
from evaluation.importers import float_list, parse_indexed, text_field
from evaluation.parsed import ItemRow, PredictionRow

IMAGE_CAPTION = "image-caption"  # official: scores[i][image][caption]
CAPTION_IMAGE = "caption-image"  # the other orientation: scores[i][caption][image]
ORIENTATIONS = (IMAGE_CAPTION, CAPTION_IMAGE)
OPTION_HELP = (
    f"score orientation: {IMAGE_CAPTION} (default, the official scores[i][image][caption]) or "
    f"{CAPTION_IMAGE} (scores[i][caption][image])"
)
# get_retrieval_scores' records name every cell: orientation-free.
NAMED_CELLS = ("c0_i0", "c0_i1", "c1_i0", "c1_i1")

# What the import page shows as an example of each file.
FORMATS = {
    "items": '[{"index": 0, "image_0": "a.jpg", "image_1": "b.jpg", '
    '"caption_0": "a dog on a sofa", "caption_1": "a sofa on a dog"}] '
    "(NaturalBench-Retrieval/metadata.json; JSONL rows with an id work too)",
    "predictions": '{"id": 0, "scores": [[0.31, 0.25], [0.22, 0.29]]} — scores[image][caption] '
    "as the official code reads them; or the official tensor as one JSON array "
    "[[[s(c0,i0), s(c1,i0)], [s(c0,i1), s(c1,i1)]], …] in metadata order; or "
    '{"id": 0, "c0_i0": …, "c0_i1": …, "c1_i0": …, "c1_i1": …}',
}


def _item(line: int, obj: dict, index: str, errors: LineErrors) -> ItemRow:
    keys = ("image_0", "image_1", "caption_0", "caption_1")
    data = {k: text_field(obj, k, line, errors) for k in keys}
    return ItemRow(item_id=index, data=data, line=line)


def parse_items(content: str, filename: str = "") -> list[ItemRow]:
    return parse_indexed(content, filename, _item, file="retrieval")


def _matrix(value: Any) -> list[list[float]] | None:
    if not isinstance(value, list) or len(value) != 2:
        return None
    rows = [float_list(r, 2) for r in value]
    return None if any(r is None for r in rows) else rows


def caption_image(matrix: list[list[float]], orientation: str) -> list[list[float]]:
    """[caption][image] scores (what is stored) from a matrix in ``orientation``."""
    if orientation == CAPTION_IMAGE:
        return matrix
    return [[matrix[0][0], matrix[1][0]], [matrix[0][1], matrix[1][1]]]


def _orientation(option: str) -> str:
    value = (option or "").strip().lower() or IMAGE_CAPTION
    if value not in ORIENTATIONS:
        raise Invalid(
            f"Unknown score orientation {option!r}: use {IMAGE_CAPTION} (the official "
            f"scores[i][image][caption], the default) or {CAPTION_IMAGE}.",
            [{"line": 0, "error": f"option must be one of {', '.join(ORIENTATIONS)}"}],
        )
    return value


def _row_builder(orientation: str):
    def build(line: int, obj: dict, index: str, errors: LineErrors) -> PredictionRow | None:
        if all(k in obj for k in NAMED_CELLS):
            cells = float_list([obj[k] for k in NAMED_CELLS], 4)
            if cells is None:
                errors.add(line, f"{', '.join(NAMED_CELLS)} must be numbers")
                return None
            c0_i0, c0_i1, c1_i0, c1_i1 = cells
            scores = [[c0_i0, c0_i1], [c1_i0, c1_i1]]
            return PredictionRow(item_id=index, raw_output="", line=line, scores=scores)
        declared = obj.get("orientation")
        if declared is not None and declared != orientation:
            errors.add(
                line,
                f"'orientation' says {declared!r} but the file is read as {orientation!r}: "
                f"import it with the option {declared!r} (CLI --option {declared})"
                if declared in ORIENTATIONS
                else f"'orientation' must be {IMAGE_CAPTION} or {CAPTION_IMAGE}",
            )
            return None
        matrix = _matrix(obj.get("scores"))
        if matrix is None:
            errors.add(
                line,
                "'scores' must be a 2 × 2 list of numbers indexed "
                + (
                    "[image][caption] (the official orientation; a file indexed "
                    f"[caption][image] imports with the option {CAPTION_IMAGE})"
                    if orientation == IMAGE_CAPTION
                    else "[caption][image] (option caption-image)"
                ),
            )
            return None
        scores = caption_image(matrix, orientation)
        return PredictionRow(item_id=index, raw_output="", line=line, scores=scores)

    return build


def _tensor(content: str) -> list | None:
    """The official score tensor saved as one JSON array of N 2 × 2 matrices, else None."""
    stripped = content.lstrip()
    if not stripped.startswith("[") or stripped[1:].lstrip()[:1] != "[":
        return None
    try:
        value = structured.loads(content)
    except structured.StructuredTextError:
        return None  # read again as rows, which names the line and the problem
    return value if isinstance(value, list) else None


def _tensor_rows(tensor: list, orientation: str) -> list[PredictionRow]:
    """Entry i scores metadata item i (index = i); the line number is the entry's position + 1."""
    errors = LineErrors()
    rows = []
    for i, entry in enumerate(tensor):
        matrix = _matrix(entry)
        if matrix is None:
            errors.add(i + 1, f"entry {i} of the score tensor must be a 2 × 2 list of numbers")
            continue
        rows.append(
            PredictionRow(
                item_id=str(i), raw_output="", line=i + 1, scores=caption_image(matrix, orientation)
            )
        )
    errors.raise_if_any("The predictions file has errors; nothing was imported.")
    return rows


def parse_predictions(content: str, filename: str = "", option: str = "") -> list[PredictionRow]:
    """Per pair, the 2 × 2 scores in the official [image][caption] orientation (``option``
    ``caption-image`` reads [caption][image]); stored as [caption][image]."""
    orientation = _orientation(option)
    tensor = _tensor(content)
    if tensor is not None:
        return _tensor_rows(tensor, orientation)
    return importers.parse_indexed_predictions(content, filename, _row_builder(orientation), "id")


def predictions_file(items: Items, predictions: Predictions) -> tuple[str, str]:
    """The run's scores as the official tensor, one JSON array in the version's order:
    entry i = scores[i][image][caption] of the i-th kept pair (metadata.json's index i), what
    ``NaturalBench_Retrieval.evaluate_scores`` reads. Refuses a run without scores for every
    pair: the tensor has no holes."""
    kept = [item for item in items if item.kept]
    missing = [item.item_id for item in kept if item.item_id not in predictions]
    if missing:
        raise Invalid(
            f"The run has no scores for {len(missing)} of {len(kept)} pairs (first: "
            f"{missing[0]!r}); the official tensor needs every pair.",
            [{"line": 0, "error": f"no scores for pair {missing[0]!r}"}],
        )
    tensor = []
    for item in kept:
        s = predictions[item.item_id].scores  # [caption][image]
        tensor.append([[s[0][0], s[1][0]], [s[0][1], s[1][1]]])
    return "scores.json", json.dumps(tensor) + "\n"
