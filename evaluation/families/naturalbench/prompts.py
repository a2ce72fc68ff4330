"""NaturalBench's evaluation prompts (Sec. 4: question + answer suffix with NO space between them,
as the official code does; ``{separator}`` is "" by default, " " when a run asks for the
harness-style space) and their blind-baseline offline rules."""

from __future__ import annotations

from curation.gateway.offline import rule
from evaluation.prompts import coin, define

YES_NO = "eval-naturalbench-yes-no"
MULTIPLE_CHOICE = "eval-naturalbench-multiple-choice"
BY_QUESTION_TYPE = {"yes_no": YES_NO, "multiple_choice": MULTIPLE_CHOICE}

_SOURCE = "NaturalBench Sec. 4 (official evaluation: question + suffix, no space)"

define(
    YES_NO,
    title="NaturalBench: answer a yes/no question about the image",
    source=_SOURCE,
    text="{question}{separator}Please answer Yes or No.",
)
define(
    MULTIPLE_CHOICE,
    title="NaturalBench: answer a multiple-choice question about the image",
    source=_SOURCE,
    text="{question}{separator}Please output the letter corresponding to the correct option.",
)


@rule(YES_NO)
def blind_yes_no(variables: dict, seed: int | None) -> str:
    """Blind baseline: the same question gets the same answer whatever the image, so it can
    never score a NaturalBench question (Q-Acc 0 by construction, Sec. 3)."""
    return ("Yes", "No")[coin(variables["question"], seed=seed)]


@rule(MULTIPLE_CHOICE)
def blind_multiple_choice(variables: dict, seed: int | None) -> str:
    return ("A", "B")[coin(variables["question"], seed=seed)]
