"""NaturalBench metric rows (METRICS.md Sec. 1; naturalbench.txt Sec. 4-5, App. C-D)."""

from __future__ import annotations

import math

import numpy as np

from evaluation.compute import (
    Items,
    MetricRow,
    MetricSpec,
    Predictions,
    ReferenceRow,
    cell,
    metric_row,
    score_rows,
)
from evaluation.metrics import naturalbench as nb

SPECS = (
    MetricSpec("acc", "Acc"),
    MetricSpec("q_acc", "Q-Acc"),
    MetricSpec("i_acc", "I-Acc"),
    MetricSpec("g_acc", "G-Acc"),
    MetricSpec("unparseable", "Unparseable", "count", help="answers with neither word"),
    MetricSpec("q_acc_sample_tau", "Q-Acc (sample-optimal τ)", headline=False),
    MetricSpec("i_acc_sample_tau", "I-Acc (sample-optimal τ)", headline=False),
    MetricSpec("g_acc_sample_tau", "G-Acc (sample-optimal τ)", headline=False),
    MetricSpec("g_acc_global_tau", "G-Acc (global-optimal τ)", headline=False),
    MetricSpec("g_acc_post_hoc", "G-Acc (post-hoc debiasing)", headline=False),
)
PRIMARY = "g_acc"
REFERENCE_ROWS = (
    ReferenceRow(
        "Random chance",
        dict(nb.RANDOM_CHANCE),
        "a uniform random guesser (NaturalBench paper, Table 1)",
    ),
    ReferenceRow(
        "Human (paper)",
        dict(nb.HUMAN_PAPER),
        "three annotators on the published NaturalBench (paper, Table 1); not measured on "
        "this version",
    ),
)


def rows(
    items: Items, predictions: Predictions, *, seed: int, rounds: int, text_metrics: bool = True
) -> list[MetricRow]:
    """Acc, Q-Acc, I-Acc, G-Acc by subset and skill, and the debiased metrics when the run has
    likelihoods; text metrics do not apply here."""
    kept = [item for item in items if item.kept]
    samples: list[list[str | None]] = []
    missing = 0
    for item in kept:
        prediction = predictions.get(item.item_id)
        if prediction is None:
            # Wrong everywhere, counted once as missing, not as four unparseable answers.
            missing += 1
            samples.append([nb.NO_PREDICTION] * 4)
        else:
            samples.append(list(prediction.parsed_answer or [None] * 4))
    options = {"seed": seed, "rounds": rounds}
    codes = nb.encode_answers(samples)
    overall = nb.naturalbench_scores(codes, **options)
    keys = [
        " × ".join(
            (
                str(item.data.get("source") or "—"),
                str(item.data["question_type"]),
                str(item.data.get("language") or "en"),
            )
        )
        for item in kept
    ]
    by_subset = nb.naturalbench_scores_by_group(codes, keys, **options) if kept else {}
    out = score_rows(
        ("acc", "q_acc", "i_acc", "g_acc"),
        overall,
        "n_samples",
        {"subset": by_subset},
        details={"missing_predictions": missing},
    )
    # Per-skill Q-Acc over the questions carrying the tag (App. C).
    tagged = [k for k, item in enumerate(kept) if item.data.get("skills")]
    if tagged:
        skills = nb.skill_question_accuracy(
            nb.AnswerCodes(codes.codes[tagged]),
            [kept[k].data["skills"] for k in tagged],
            **options,
        )
        out[1].breakdown["skill"] = {
            name: cell(s.q_acc, s.interval, s.n_questions) for name, s in skills.items()
        }
    # Out of the answers the run gave (a missing sample has no output to parse).
    out.append(
        metric_row(
            "unparseable",
            float(overall.unparseable),
            None,
            4 * (len(kept) - missing),
            details={"missing_predictions": missing},
        )
    )
    out.extend(_debiased(kept, predictions, options))
    return out


def _debiased(kept: Items, predictions: Predictions, options: dict) -> list[MetricRow]:
    """Debiased metrics when every sample has likelihoods (naturalbench.txt Sec. 5, App. D)."""
    scored = [predictions.get(item.item_id) for item in kept]
    if not kept or any(p is None or not p.scores or "p_a0" not in p.scores for p in scored):
        return []
    p_a0 = np.array([p.scores["p_a0"] for p in scored], dtype=float)
    p_a1 = np.array([p.scores["p_a1"] for p in scored], dtype=float)
    n = len(kept)
    out = []
    oracle = nb.sample_optimal_scores(p_a0, p_a1, **options)
    for name in ("q_acc", "i_acc", "g_acc"):
        out.append(
            metric_row(f"{name}_sample_tau", getattr(oracle, name), oracle.intervals.get(name), n)
        )
    global_tau = nb.global_optimal_scores(p_a0, p_a1, **options)
    out.append(
        metric_row(
            "g_acc_global_tau",
            global_tau.g_acc,
            global_tau.intervals.get("g_acc"),
            n,
            details={
                # ±∞ (every sample's d equal) is stored as text: JSON has no infinity.
                "tau": global_tau.tau if math.isfinite(global_tau.tau) else str(global_tau.tau),
                "tau_rule": nb.TAU_RULE,
                "acc": global_tau.acc,
                "q_acc": global_tau.q_acc,
                "i_acc": global_tau.i_acc,
            },
        )
    )
    if all("p_a0_blind" in p.scores and "p_a1_blind" in p.scores for p in scored):
        post = nb.post_hoc_scores(
            p_a0,
            p_a1,
            np.array([p.scores["p_a0_blind"] for p in scored]),
            np.array([p.scores["p_a1_blind"] for p in scored]),
            **options,
        )
        out.append(
            metric_row(
                "g_acc_post_hoc",
                post.g_acc,
                post.intervals.get("g_acc"),
                n,
                details={"acc": post.acc, "q_acc": post.q_acc, "i_acc": post.i_acc},
            )
        )
    return out
