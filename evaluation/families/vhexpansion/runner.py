"""What a model run asks of a VHExpansion test case: its yes/no question about the image."""

from __future__ import annotations

from typing import Any

from evaluation.models import BenchmarkItem
from evaluation.registry import LLMRunner
from evaluation.runners import CallSpec, Outcome, outcome_text

from .parse import answer_of
from .prompts import ANSWER


def calls(item: BenchmarkItem, options: dict) -> list[CallSpec]:
    return [
        CallSpec(
            "answer", ANSWER, {"question": item.data["question"]}, (item.data.get("image", ""),)
        )
    ]


def prediction(item: BenchmarkItem, outcomes: dict[str, Outcome]) -> tuple[Any, Any, dict]:
    raw = outcome_text(outcomes.get("answer"))
    return raw, answer_of(raw), {}


RUNNER = LLMRunner(templates=(ANSWER,), calls=calls, prediction=prediction)
