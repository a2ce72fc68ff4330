"""VHExpansion metrics: accuracy, symmetric accuracy, # new successful VH test cases.

Follows METRICS.md Sec. 3 and vhexpansion.txt Sec. 4 (Definitions 2-3, Theorems 1-2) and Sec. 5.
Accuracy is Definition 2: the share of the test cases as given (each pair's un-negated case)
answered correctly, so it keeps the label balance q of the cases and shows Theorem 1's bias.
The share over both cases of every pair is a different number (its labels are always half
"yes"): ``accuracy_all_cases``, labelled as such wherever it is shown.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

from evaluation.metrics.bootstrap import (
    DEFAULT_ROUNDS,
    DEFAULT_SEED,
    Interval,
    bootstrap_mean_interval,
)

ORIGINAL = "original"  # perturbation name of an unperturbed image


@dataclass(frozen=True)
class VHPair:
    """A VH test case and its negated counterpart, answered on the same (possibly perturbed) image.

    `perturbation` is ORIGINAL for the unperturbed image; otherwise both cases of the pair are
    generated variants. `source` is the source dataset (MMVP, VHTest, POPE, ...).
    """

    case_correct: bool
    negation_correct: bool
    perturbation: str = ORIGINAL
    source: str = ""
    case_answer: str = ""  # the ground truth of the un-negated case, "yes" / "no" ("" unknown)

    @property
    def new_successful(self) -> int:
        """Generated cases of this pair answered wrong (negations and perturbed variants only)."""
        count = int(not self.negation_correct)
        if self.perturbation != ORIGINAL:
            count += int(not self.case_correct)
        return count


def accuracy(correct: Sequence[bool]) -> float | None:
    """Share of test cases answered correctly (vhexpansion.txt Sec. 4, Definition 2)."""
    if len(correct) == 0:
        return None
    return float(np.mean(np.asarray(correct, dtype=float)))


def symmetric_accuracy(pairs: Sequence[VHPair]) -> float | None:
    """Share of (case, negated case) pairs both answered correctly (vhexpansion.txt Def. 3)."""
    if len(pairs) == 0:
        return None
    return float(np.mean([p.case_correct and p.negation_correct for p in pairs]))


def new_successful_cases(pairs: Sequence[VHPair]) -> int:
    """# new successful VH test cases: generated cases (not originals) answered wrong (Sec. 5)."""
    return sum(p.new_successful for p in pairs)


def random_guess_accuracy(p_yes: float, yes_share: float) -> float:
    """Accuracy of a guesser answering "yes" with prob. p: 1 + (2p − 1)q − p (Theorem 1)."""
    return 1.0 + (2.0 * p_yes - 1.0) * yes_share - p_yes


def random_guess_symmetric_accuracy(p_yes: float) -> float:
    """Symmetric accuracy of the same guesser: p(1 − p), whatever the labels (Theorem 2)."""
    return p_yes * (1.0 - p_yes)


def yes_share(pairs: Sequence[VHPair]) -> float | None:
    """q of Theorem 1: the share of "yes" among the un-negated cases (None: no pair, or a pair
    whose answer is unknown)."""
    if len(pairs) == 0 or any(p.case_answer not in ("yes", "no") for p in pairs):
        return None
    return float(np.mean([p.case_answer == "yes" for p in pairs]))


@dataclass(frozen=True)
class VHScores:
    """Accuracy (Def. 2, the un-negated cases), symmetric accuracy (Def. 3), new successful
    cases (Sec. 5), and accuracy over both cases of every pair (not the paper's accuracy)."""

    n_pairs: int
    accuracy: float | None
    symmetric_accuracy: float | None
    new_successful: int
    intervals: dict[str, Interval] = field(default_factory=dict)
    accuracy_all_cases: float | None = None
    yes_share: float | None = None  # q of Theorem 1 over these pairs' un-negated cases


def vh_scores(
    pairs: Sequence[VHPair],
    *,
    with_intervals: bool = True,
    seed: int = DEFAULT_SEED,
    rounds: int = DEFAULT_ROUNDS,
) -> VHScores:
    """Headline VH metrics of vhexpansion.txt Table 3; intervals resample pairs (METRICS Sec. 6)."""
    if len(pairs) == 0:
        return VHScores(0, None, None, 0)
    per_pair = {
        # Definition 2: the un-negated case of each pair (one test case per pair).
        "accuracy": [float(p.case_correct) for p in pairs],
        # Definition 3: both the case and its negation right.
        "symmetric_accuracy": [float(p.case_correct and p.negation_correct) for p in pairs],
        # Not the paper's accuracy: both cases of every pair, so labels are always half "yes".
        "accuracy_all_cases": [(p.case_correct + p.negation_correct) / 2.0 for p in pairs],
    }
    intervals = (
        {
            name: bootstrap_mean_interval(values, seed=seed, rounds=rounds)
            for name, values in per_pair.items()
        }
        if with_intervals
        else {}
    )
    return VHScores(
        n_pairs=len(pairs),
        accuracy=float(np.mean(per_pair["accuracy"])),
        symmetric_accuracy=float(np.mean(per_pair["symmetric_accuracy"])),
        new_successful=new_successful_cases(pairs),
        intervals=intervals,
        accuracy_all_cases=float(np.mean(per_pair["accuracy_all_cases"])),
        yes_share=yes_share(pairs),
    )


def vh_scores_by(
    pairs: Sequence[VHPair],
    key: Callable[[VHPair], Hashable],
    *,
    with_intervals: bool = True,
    seed: int = DEFAULT_SEED,
    rounds: int = DEFAULT_ROUNDS,
) -> dict[Hashable, VHScores]:
    """VH metrics per group, e.g. per perturbation or source dataset (vhexpansion.txt Tab. 4-5)."""
    grouped: dict[Hashable, list[VHPair]] = defaultdict(list)
    for pair in pairs:
        grouped[key(pair)].append(pair)
    return {
        k: vh_scores(group, with_intervals=with_intervals, seed=seed, rounds=rounds)
        for k, group in grouped.items()
    }


def vh_scores_by_perturbation(pairs: Sequence[VHPair], **kwargs) -> dict[Hashable, VHScores]:
    """Breakdown per perturbation (vhexpansion.txt Tables 4-5)."""
    return vh_scores_by(pairs, lambda p: p.perturbation, **kwargs)


def vh_scores_by_source(pairs: Sequence[VHPair], **kwargs) -> dict[Hashable, VHScores]:
    """Breakdown per source dataset (vhexpansion.txt Table 3 (a)-(c))."""
    return vh_scores_by(pairs, lambda p: p.source, **kwargs)
