"""What a model run asks of a NaturalBench sample and how its answers are read (Sec. 4, 5;
App. D): the four (question, image) calls, optionally the two questions without their image for
post-hoc debiasing, and the answer likelihoods a chat endpoint exposes."""

from __future__ import annotations

import math
from typing import Any

from django.utils.translation import gettext_lazy

from annotator.platform.errors import Invalid
from evaluation.compute import ItemData
from evaluation.metrics import naturalbench as nb
from evaluation.models import BenchmarkItem
from evaluation.registry import LLMRunner, RunOption, RunOptions
from evaluation.runners import CallSpec, Outcome, outcome_text

from .parse import parse_answer
from .prompts import BY_QUESTION_TYPE

BLIND_KEYS = ("q0_blind", "q1_blind")


def calls(item: BenchmarkItem, options: dict) -> list[CallSpec]:
    data = item.data
    template = BY_QUESTION_TYPE[data["question_type"]]
    separator = " " if options.get("space_before_suffix") else ""
    logprobs = bool(options.get("logprobs"))
    specs = []
    for key in nb.SAMPLE_KEYS:  # q0_i0, q0_i1, q1_i0, q1_i1
        question, image = data[f"question_{key[1]}"], data[f"image_{key[4]}"]
        variables = {"question": question, "separator": separator}
        specs.append(CallSpec(key, template, variables, (image,), logprobs))
    if options.get("post_hoc"):
        # P(a | q) from the question alone for post-hoc debiasing (Sec. 5, Eq. 5).
        for q in (0, 1):
            variables = {"question": data[f"question_{q}"], "separator": separator}
            specs.append(CallSpec(f"q{q}_blind", template, variables, (), True))
    return specs


def answer_likelihoods(logprobs: Any, question_type: str) -> tuple[float, float] | None:
    """(P(a0), P(a1)) from the first answer token's top log-probabilities: the summed
    probability of the tokens that read "yes"/"no" ("A"/"B"), case and spacing ignored
    (the likelihoods of NaturalBench Sec. 5, App. D, as far as a chat endpoint exposes them)."""
    content = (logprobs or {}).get("content") or []
    if not content:
        return None
    first = content[0]
    words = ("yes", "no") if question_type == nb.YES_NO else ("a", "b")
    seen: dict[str, float] = {}
    for entry in [first, *(first.get("top_logprobs") or [])]:
        token = str(entry.get("token", ""))
        if token not in seen and isinstance(entry.get("logprob"), int | float):
            seen[token] = float(entry["logprob"])
    totals = [0.0, 0.0]
    for token, logprob in seen.items():
        word = token.strip().strip(".,:;!?\"'()").lower()
        if word in words:
            totals[words.index(word)] += math.exp(logprob)
    return totals[0], totals[1]


def prediction(item: BenchmarkItem, outcomes: dict[str, Outcome]) -> tuple[Any, Any, dict]:
    raw = {k: outcome_text(outcomes.get(k)) for k in nb.SAMPLE_KEYS}
    for key in BLIND_KEYS:
        if key in outcomes:
            raw[key] = outcome_text(outcomes[key])
    parsed = parse_answer(ItemData(item.item_id, item.data, item.kept), raw)
    qtype = item.data["question_type"]

    def likelihoods(key: str) -> tuple[float, float] | None:
        outcome = outcomes.get(key)
        if outcome is None or outcome.text is None:
            return None
        return answer_likelihoods(outcome.logprobs, qtype)

    scores: dict[str, Any] = {}
    pairs = [likelihoods(k) for k in nb.SAMPLE_KEYS]
    if all(p is not None for p in pairs):
        scores["p_a0"] = [p[0] for p in pairs]
        scores["p_a1"] = [p[1] for p in pairs]
        blind = [likelihoods(k) for k in BLIND_KEYS]
        # Eq. 5 divides by P(a | q): only usable when both are positive.
        if all(b is not None and b[0] > 0 and b[1] > 0 for b in blind):
            scores["p_a0_blind"] = [b[0] for b in blind]
            scores["p_a1_blind"] = [b[1] for b in blind]
    return raw, parsed, scores


def _clean(options: dict) -> dict:
    if options["post_hoc"] and not options["logprobs"]:
        raise Invalid("Post-hoc debiasing needs answer likelihoods: tick 'log-probabilities'.")
    return options


RUNNER = LLMRunner(
    templates=tuple(BY_QUESTION_TYPE.values()),
    calls=calls,
    prediction=prediction,
    options=RunOptions(
        fields=(
            RunOption(
                "space_before_suffix",
                gettext_lazy("Space between question and answer suffix (official code: none)"),
            ),
            RunOption("logprobs", gettext_lazy("Ask for log-probabilities (debiased metrics)")),
            RunOption(
                "post_hoc",
                gettext_lazy("Also ask each question without its image (post-hoc debiasing)"),
            ),
        ),
        clean=_clean,
        summary="suffix spacing, likelihoods",
    ),
)
