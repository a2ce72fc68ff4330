"""The toy benchmark family the toy recipe publishes to: items ``{"id", "text", "label"}``,
predictions ``{"id", "answer"}``, one metric (accuracy). Tests register it (``FAMILY``) while
they need it and take it away again."""

from __future__ import annotations

import json

from evaluation.compute import MetricRow, MetricSpec
from evaluation.parsed import ItemRow, PredictionRow
from evaluation.registry import Family, FamilyTemplates

ITEM_TEMPLATE = "toy/_item.html"  # this app's templates/


def parse_items(content: str, filename: str = "") -> list[ItemRow]:
    rows = []
    for line, text in enumerate(content.splitlines(), 1):
        obj = json.loads(text)
        rows.append(ItemRow(obj["id"], {"text": obj["text"], "label": obj["label"]}, line))
    return rows


def parse_predictions(content: str, filename: str = "", option: str = "") -> list[PredictionRow]:
    rows = []
    for line, text in enumerate(content.splitlines(), 1):
        obj = json.loads(text)
        rows.append(PredictionRow(obj["id"], obj["answer"], line, parsed_answer=obj["answer"]))
    return rows


def rows(items, predictions, *, seed: int, rounds: int, text_metrics: bool = True):
    kept = [item for item in items if item.kept]
    right = sum(
        1
        for item in kept
        if item.item_id in predictions
        and predictions[item.item_id].parsed_answer == item.data["label"]
    )
    return [MetricRow("accuracy", right / len(kept) if kept else None, n=len(kept))]


FAMILY = Family(
    key="toy",
    label="Toy",
    order=99,
    parse_items=parse_items,
    parse_predictions=parse_predictions,
    rows=rows,
    specs=(MetricSpec("accuracy", "Accuracy"),),
    primary="accuracy",
    templates=FamilyTemplates(item=ITEM_TEMPLATE),
)
