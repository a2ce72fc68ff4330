"""VHExpansion metric rows: accuracy, symmetric accuracy, new successful cases (Sec. 3)."""

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
    MetricSpec("accuracy", "Accuracy"),
    MetricSpec("symmetric_accuracy", "Symmetric accuracy"),
    MetricSpec(
        "new_successful",
        "# new successful VH cases",
        "count",
        help="generated cases (negations and perturbed variants, not originals) answered wrong",
    ),
)
PRIMARY = "symmetric_accuracy"
REFERENCE_ROWS = (
    ReferenceRow(
        "Random guess, P(yes) = 0.5",
        {
            "accuracy": vhexpansion.random_guess_accuracy(0.5, 0.5),
            "symmetric_accuracy": vhexpansion.random_guess_symmetric_accuracy(0.5),
        },
        "E[acc] = 1 + (2p − 1)q − p = 0.5 for p = 0.5 whatever q; E[sym-acc] = p(1 − p) "
        "(Theorems 1-2)",
    ),
)


def vh_pairs(items: Items, predictions: Predictions) -> list[vhexpansion.VHPair]:
    """One VHPair per (case, negated case); a missing prediction counts as wrong."""
    by_pair: dict[str, dict[bool, ItemData]] = defaultdict(dict)
    for item in items:
        if item.kept:
            by_pair[item.data["pair_id"]][bool(item.data["negated"])] = item
    pairs = []
    for pair_id in sorted(by_pair):
        members = by_pair[pair_id]
        if set(members) != {False, True}:
            continue

        def correct(item: ItemData) -> bool:
            prediction = predictions.get(item.item_id)
            return prediction is not None and prediction.parsed_answer == item.data["answer"]

        original, negation = members[False], members[True]
        pairs.append(
            vhexpansion.VHPair(
                case_correct=correct(original),
                negation_correct=correct(negation),
                perturbation=original.data.get("perturbation") or vhexpansion.ORIGINAL,
                source=original.data.get("source", ""),
            )
        )
    return pairs


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
    out = score_rows(("accuracy", "symmetric_accuracy"), overall, "n_pairs", groups)
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
