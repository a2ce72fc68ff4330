"""VHExpansion accuracy, symmetric accuracy and new successful cases (vhexpansion.txt Sec. 4)."""

import pytest

from evaluation.metrics import vhexpansion as vh
from evaluation.metrics.vhexpansion import ORIGINAL, VHPair

PAIRS = [
    VHPair(True, True, ORIGINAL, "MMVP"),  # symmetric 1, new 0
    VHPair(True, False, ORIGINAL, "MMVP"),  # negation wrong: new 1
    VHPair(False, True, ORIGINAL, "POPE"),  # original wrong is not "new": new 0
    VHPair(False, False, "gaussian_noise", "MMVP"),  # both perturbed cases wrong: new 2
    VHPair(True, True, "gaussian_noise", "POPE"),
]


def test_overall_scores_by_hand():
    # 6 of 10 cases right; pairs 1 and 5 fully right; 1 + 2 new successful cases
    result = vh.vh_scores(PAIRS, seed=3, rounds=100)
    assert result.n_pairs == 5
    assert result.accuracy == pytest.approx(0.6)
    assert result.symmetric_accuracy == pytest.approx(0.4)
    assert result.new_successful == 3
    assert result.intervals["symmetric_accuracy"].seed == 3


def test_breakdown_per_perturbation():
    result = vh.vh_scores_by_perturbation(PAIRS, with_intervals=False)
    original = result[ORIGINAL]
    # original: 4 of 6 cases right, 1 of 3 pairs, 1 new
    assert original.accuracy == pytest.approx(4 / 6)
    assert original.symmetric_accuracy == pytest.approx(1 / 3)
    assert original.new_successful == 1
    noise = result["gaussian_noise"]
    assert (noise.accuracy, noise.symmetric_accuracy, noise.new_successful) == (0.5, 0.5, 2)


def test_breakdown_per_source():
    result = vh.vh_scores_by_source(PAIRS, with_intervals=False)
    # MMVP: pairs 1, 2, 4 -> 3 of 6 cases, 1 of 3 pairs, new 1 + 2
    assert result["MMVP"].accuracy == pytest.approx(0.5)
    assert result["MMVP"].symmetric_accuracy == pytest.approx(1 / 3)
    assert result["MMVP"].new_successful == 3
    # POPE: pairs 3, 5 -> 3 of 4 cases, 1 of 2 pairs, new 0
    assert (result["POPE"].accuracy, result["POPE"].symmetric_accuracy) == (0.75, 0.5)
    assert result["POPE"].new_successful == 0


def test_plain_accuracy_and_empty():
    assert vh.accuracy([True, False, True, True]) == 0.75
    assert vh.accuracy([]) is None
    assert vh.symmetric_accuracy([]) is None
    assert vh.vh_scores([]).symmetric_accuracy is None


def test_random_guessing_theorems():
    # Theorem 1: p = 0.7, q = 0.8 -> 0.8*0.7 + 0.2*0.3 = 0.62 = 1 + 0.4*0.8 - 0.7
    assert vh.random_guess_accuracy(0.7, 0.8) == pytest.approx(0.62)
    # Theorem 2: p(1 - p) = 0.21 whatever q
    assert vh.random_guess_symmetric_accuracy(0.7) == pytest.approx(0.21)
    assert vh.random_guess_accuracy(0.5, 0.9) == pytest.approx(0.5)
