"""VHExpansion metric rows: accuracy (Def. 2), symmetric accuracy (Def. 3), new successful cases
(Sec. 5), and accuracy over both cases of every pair as its own, differently named metric."""

from __future__ import annotations

from collections import defaultdict

from evaluation.compute import (
    ItemData,
    Items,
    MetricRow,
    MetricSpec,
    Predictions,
    ReferenceRow,
    score_rows,
)
from evaluation.metrics import vhexpansion

SPECS = (
    MetricSpec(
        "accuracy",
        "Accuracy",
        # vhexpansion.txt Definition 2 (Table 3): the test cases as given, not their negations.
        help="share of the test cases as given (not their negations) answered correctly; a "
        "model that leans to one answer gains from the label balance (Theorem 1)",
    ),
    MetricSpec(
        "symmetric_accuracy",
        "Symmetric accuracy",
        # vhexpansion.txt Definition 3: both the case and its negation right.
        help="share of test cases answered correctly together with their negation; a random "
        "guesser scores p(1−p) ≤ 25 whatever the labels (Theorem 2)",
    ),
    MetricSpec(
        "new_successful",
        "# new successful VH cases",
        "count",
        help="generated cases (negations and perturbed variants, not originals) answered wrong",
    ),
    MetricSpec(
        "accuracy_all_cases",
        "Accuracy over cases and their negations",
        headline=False,
        help="not the paper's accuracy: the share over both cases of every pair, whose labels "
        "are always half yes, so any guesser scores 50",
    ),
)
PRIMARY = "symmetric_accuracy"


def chance_row(label: str, p_yes: float, q: float, note: str) -> ReferenceRow:
    """A guesser answering "yes" with probability p on labels with a share q of "yes"."""
    return ReferenceRow(
        label,
        {
            # Theorem 1 (App. A): E[acc] = qp + (1 − q)(1 − p) = 1 + (2p − 1)q − p.
            "accuracy": vhexpansion.random_guess_accuracy(p_yes, q),
            # Theorem 2 (App. B): E[sym-acc] = p(1 − p) whatever q.
            "symmetric_accuracy": vhexpansion.random_guess_symmetric_accuracy(p_yes),
            # Both cases of every pair: q = 1/2 by construction.
            "accuracy_all_cases": vhexpansion.random_guess_accuracy(p_yes, 0.5),
        },
        note,
    )


def _members(items: Items) -> list[tuple[ItemData, ItemData]]:
    """(case, negated case) of every complete pair of kept items, by pair id."""
    by_pair: dict[str, dict[bool, ItemData]] = defaultdict(dict)
    for item in items:
        if item.kept:
            by_pair[item.data["pair_id"]][bool(item.data["negated"])] = item
    return [
        (by_pair[pair_id][False], by_pair[pair_id][True])
        for pair_id in sorted(by_pair)
        if set(by_pair[pair_id]) == {False, True}
    ]


def reference_rows_of(items: Items) -> tuple[ReferenceRow, ...]:
    """Chance rows for this version's labels (Theorems 1-2): an unbiased guesser, and the two
    guessers that always give one answer, whose accuracy is the label balance q itself."""
    members = _members(items)
    uniform = chance_row(
        "Random guess, P(yes) = 0.5",
        0.5,
        0.5,
        "E[acc] = 1 + (2p − 1)q − p = 0.5 for p = 0.5 whatever q; E[sym-acc] = p(1 − p) = 0.25 "
        "(Theorems 1-2)",
    )
    if not members:
        return (uniform,)
    q = sum(case.data["answer"] == "yes" for case, _ in members) / len(members)
    return (
        uniform,
        chance_row(
            "Always “yes”, P(yes) = 1",
            1.0,
            q,
            f"E[acc] = 1 + (2p − 1)q − p = q = {q:.3f}, the share of “yes” among this "
            "version's cases; E[sym-acc] = p(1 − p) = 0 (Theorems 1-2)",
        ),
        chance_row(
            "Always “no”, P(yes) = 0",
            0.0,
            q,
            f"E[acc] = 1 − q = {1 - q:.3f}; E[sym-acc] = 0 (Theorems 1-2)",
        ),
    )


def vh_pairs(items: Items, predictions: Predictions) -> list[vhexpansion.VHPair]:
    """One VHPair per (case, negated case); a missing prediction counts as wrong."""

    def correct(item: ItemData) -> bool:
        prediction = predictions.get(item.item_id)
        return prediction is not None and prediction.parsed_answer == item.data["answer"]

    return [
        vhexpansion.VHPair(
            case_correct=correct(original),
            negation_correct=correct(negation),
            perturbation=original.data.get("perturbation") or vhexpansion.ORIGINAL,
            source=original.data.get("source", ""),
            case_answer=original.data["answer"],
        )
        for original, negation in _members(items)
    ]


def rows(
    items: Items, predictions: Predictions, *, seed: int, rounds: int, text_metrics: bool = True
) -> list[MetricRow]:
    """Scores over the (case, negation) pairs, by perturbation and source; text metrics do not
    apply here."""
    pairs = vh_pairs(items, predictions)
    options = {"seed": seed, "rounds": rounds}
    overall = vhexpansion.vh_scores(pairs, **options)
    groups = {
        "perturbation": vhexpansion.vh_scores_by_perturbation(pairs, **options),
        "source": vhexpansion.vh_scores_by_source(pairs, **options),
    }
    out = score_rows(
        ("accuracy", "symmetric_accuracy", "accuracy_all_cases"), overall, "n_pairs", groups
    )
    # q of Theorem 1 beside Definition 2's accuracy: what an always-"yes" model would score.
    out[0].details["yes_share"] = overall.yes_share
    out.append(
        MetricRow(
            "new_successful",
            float(overall.new_successful),
            n=overall.n_pairs,
            breakdown={
                dim: {
                    str(k): {"value": float(s.new_successful), "n": s.n_pairs}
                    for k, s in sorted(g.items(), key=lambda kv: str(kv[0]))
                }
                for dim, g in groups.items()
            },
            details={
                "definition": "generated cases (negations and perturbed variants, not the "
                "originals) answered wrong"
            },
        )
    )
    return out
