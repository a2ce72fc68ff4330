"""A judgment set in the VisIT sandbox's head-to-head layout (``gpt-4_head2head.json``, written by
its evaluate_all_queries.py and read by elo_analysis.py; METRICS.md Sec. 2): what
``judgments.parse_llm_judgments`` reads back."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any


def head2head_record(
    pair: Mapping[str, Any], item: Mapping[str, Any], *, engine: str, with_reference: bool
) -> dict:
    """One judged pair as evaluate_all_queries.py writes it: A_model, B_model, A, B,
    auto_evaluation_result (the winner of each order: a model or "tie"), auto_evaluation_cot (the
    judge's output per order with the models it was shown), image_url, instruction,
    instruction_category, engine, reference, evaluated_with_reference. A crowd pair has no
    orders: its majority (or "tie") stands for both, so elo_analysis.py counts it once, as it
    counts every pair (App. E)."""
    winners = list(pair.get("order_winners") or [])
    if len(winners) != 2:
        winners = [pair["winner"], pair["winner"]]
    outputs = list(pair.get("outputs") or [])
    shown = [(pair["model_a"], pair["model_b"]), (pair["model_b"], pair["model_a"])]
    cot = [
        {
            "A_model_in_cot": (outputs[k].get("shown_a") if k < len(outputs) else None)
            or shown[k][0],
            "B_model_in_cot": (outputs[k].get("shown_b") if k < len(outputs) else None)
            or shown[k][1],
            "cot": (outputs[k].get("judge_output") if k < len(outputs) else None) or "",
        }
        for k in range(2)
    ]
    return {
        "A_model": pair["model_a"],
        "B_model": pair["model_b"],
        "A": pair.get("response_a") or "",
        "B": pair.get("response_b") or "",
        "auto_evaluation_result": winners,
        "auto_evaluation_cot": cot,
        "image_url": item.get("image", ""),
        "instruction": item.get("instruction", ""),
        "instruction_category": item.get("category", ""),
        "engine": engine,
        "reference": item.get("reference", ""),
        "evaluated_with_reference": bool(with_reference),
    }


def head2head_json(records: Sequence[dict]) -> str:
    """The records as one JSON array, as evaluate_all_queries.py dumps them."""
    return json.dumps(list(records), ensure_ascii=False)


def head2head_export(judgment_set) -> tuple[str, str]:
    """(file name, JSON text) of a judgment set in the head-to-head layout, pairs in set order."""
    rows = judgment_set.judgments.order_by("position").values(
        "model_a",
        "model_b",
        "response_a",
        "response_b",
        "order_winners",
        "outputs",
        "winner",
        "item__data",
    )
    engine = judgment_set.judge or ("crowd" if judgment_set.kind == "human" else "")
    records = [
        head2head_record(
            row, row["item__data"] or {}, engine=engine, with_reference=judgment_set.with_reference
        )
        for row in rows
    ]
    name = f"{judgment_set.label}_head2head.json".replace(" ", "_").replace("/", "_")
    return name, head2head_json(records)
