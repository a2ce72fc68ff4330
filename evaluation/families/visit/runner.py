"""What a model run asks of a VisIT-Bench instance: a response to its instruction about the
image (judged later, pairwise)."""

from __future__ import annotations

from typing import Any

from evaluation.models import BenchmarkItem
from evaluation.registry import LLMRunner
from evaluation.runners import CallSpec, Outcome, outcome_text

from .prompts import RESPONSE


def calls(item: BenchmarkItem, options: dict) -> list[CallSpec]:
    variables = {"instruction": item.data["instruction"]}
    return [CallSpec("response", RESPONSE, variables, (item.data.get("image", ""),))]


def prediction(item: BenchmarkItem, outcomes: dict[str, Outcome]) -> tuple[Any, Any, dict]:
    return outcome_text(outcomes.get("response")), None, {}


RUNNER = LLMRunner(templates=(RESPONSE,), calls=calls, prediction=prediction)
