"""NaturalBench-Retrieval metric rows: Winoground text, image and group scores (App. B)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evaluation.compute import (
    ItemData,
    MetricRow,
    MetricSpec,
    PredictionData,
    ReferenceRow,
    score_rows,
)
from evaluation.metrics import retrieval
from evaluation.metrics.bootstrap import DEFAULT_ROUNDS

SPECS = (
    MetricSpec("text", "Text score"),
    MetricSpec("image", "Image score"),
    MetricSpec("group", "Group score"),
)
PRIMARY = "group"
REFERENCE_ROWS = (
    ReferenceRow(
        "Random chance",
        dict(retrieval.RANDOM_CHANCE),
        "random scores: Winoground chance (NaturalBench paper, App. B)",
    ),
)


def rows(
    items: Sequence[ItemData],
    predictions: Mapping[str, PredictionData],
    *,
    seed: int,
    rounds: int = DEFAULT_ROUNDS,
    text_metrics: bool = True,  # no text metrics in this family
) -> list[MetricRow]:
    pairs = [predictions[i.item_id].scores for i in items if i.kept and i.item_id in predictions]
    scores = retrieval.winoground_scores(pairs, seed=seed, rounds=rounds)
    missing = sum(1 for i in items if i.kept and i.item_id not in predictions)
    return score_rows(
        ("text", "image", "group"), scores, "n_pairs", details={"missing_predictions": missing}
    )
