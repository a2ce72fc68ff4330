"""What a model run asks of a VisIT-Bench instance: a response to its instruction about the
image (judged later, pairwise)."""

from __future__ import annotations

from typing import Any

from evaluation.models import BenchmarkItem
from evaluation.registry import LLMRunner
from evaluation.runners import CallSpec, Outcome, outcome_text

from .parse import item_images
from .prompts import RESPONSE


def calls(item: BenchmarkItem, options: dict) -> list[CallSpec]:
    """The instruction with every image of the instance, in order (a multi-image instance sends
    them all, as the paper feeds OpenFlamingo and Otter "the image(s) and the instruction",
    Sec. 4.1)."""
    variables = {"instruction": item.data["instruction"]}
    return [CallSpec("response", RESPONSE, variables, tuple(item_images(item.data)))]


def prediction(item: BenchmarkItem, outcomes: dict[str, Outcome]) -> tuple[Any, Any, dict]:
    return outcome_text(outcomes.get("response")), None, {}


RUNNER = LLMRunner(templates=(RESPONSE,), calls=calls, prediction=prediction)
