"""NaturalBench-Retrieval metric rows: Winoground text, image and group scores (App. B)."""

from __future__ import annotations

from evaluation.compute import Items, MetricRow, MetricSpec, Predictions, ReferenceRow, score_rows
from evaluation.metrics import retrieval

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
    items: Items, predictions: Predictions, *, seed: int, rounds: int, text_metrics: bool = True
) -> list[MetricRow]:
    """Winoground scores of the pairs the run scored; text metrics do not apply here."""
    pairs = [predictions[i.item_id].scores for i in items if i.kept and i.item_id in predictions]
    scores = retrieval.winoground_scores(pairs, seed=seed, rounds=rounds)
    missing = sum(1 for i in items if i.kept and i.item_id not in predictions)
    return score_rows(
        ("text", "image", "group"), scores, "n_pairs", details={"missing_predictions": missing}
    )
