"""VLind-Bench metric rows: S_CK, S_VP, S_CB, S_LP, CB, LP by concept and style (Sec. 4)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evaluation.compute import (
    ItemData,
    Items,
    MetricRow,
    MetricSpec,
    PredictionData,
    Predictions,
    score_rows,
)
from evaluation.metrics import vlind

from .parse import STYLES

SPECS = (
    MetricSpec("s_ck", "S_CK"),
    MetricSpec("s_vp", "S_VP"),
    MetricSpec("s_cb", "S_CB"),
    MetricSpec("s_lp", "S_LP"),
    MetricSpec("cb", "CB"),
    MetricSpec("lp", "LP"),
)
PRIMARY = "s_lp"


def _passes(parsed: Mapping[str, Any], should_true: str, should_false: str) -> bool:
    return vlind.statement_pair_passes(parsed.get(should_true), parsed.get(should_false))


def vlind_instance(
    item: ItemData, prediction: PredictionData | None, images: Sequence[str]
) -> vlind.VLindInstance:
    """Outcomes a (CK), b (VP), c (CB), d per good image in `images` (official score_pipeline)."""
    parsed = (prediction.parsed_answer if prediction else None) or {}
    d1, d2 = parsed.get("d1", {}), parsed.get("d2", {})
    lp = tuple(vlind.statement_pair_passes(d1.get(i), d2.get(i)) for i in images)
    return vlind.VLindInstance(
        ck=_passes(parsed, "a1_image", "a2_image"),
        vp=_passes(parsed, "b1", "b2"),
        cb=_passes(parsed, "c1_image", "c2_image"),
        lp=lp,
        concept=str(item.data.get("concept", "")),
    )


def rows(
    items: Items, predictions: Predictions, *, seed: int, rounds: int, text_metrics: bool = True
) -> list[MetricRow]:
    """The six scores over all instances, by concept and by image style; text metrics do not
    apply here."""
    options = {"seed": seed, "rounds": rounds}
    instances = [
        vlind_instance(item, predictions.get(item.item_id), item.data.get("good_images", []))
        for item in items
    ]
    overall = vlind.vlind_scores(instances, **options)
    by_concept = vlind.vlind_scores_by(instances, lambda i: i.concept, **options)
    styled = []
    for item in items:
        for style in ("photorealistic", "illustration", "cartoon"):
            images = [i for i in item.data.get("good_images", []) if STYLES.get(i) == style]
            inst = vlind_instance(item, predictions.get(item.item_id), images)
            styled.append(
                vlind.VLindInstance(inst.ck, inst.vp, inst.cb, inst.lp, inst.concept, style)
            )
    by_style = vlind.vlind_scores_by(styled, lambda i: i.style, **options)
    return score_rows(
        ("s_ck", "s_vp", "s_cb", "s_lp", "cb", "lp"),
        overall,
        "n_instances",
        {"concept": by_concept, "style": by_style},
    )
