"""VHExpansion accuracy (Def. 2), symmetric accuracy (Def. 3), new successful cases and accuracy
over both cases of every pair (vhexpansion.txt Sec. 4-5)."""

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
    # 3 of 5 cases as given right (Def. 2); 6 of 10 cases over both; pairs 1 and 5 fully right;
    # 1 + 2 new successful cases
    result = vh.vh_scores(PAIRS, seed=3, rounds=100)
    assert result.n_pairs == 5
    assert result.accuracy == pytest.approx(0.6)
    assert result.accuracy_all_cases == pytest.approx(0.6)
    assert result.symmetric_accuracy == pytest.approx(0.4)
    assert result.new_successful == 3
    assert result.intervals["symmetric_accuracy"].seed == 3
    assert set(result.intervals) == {"accuracy", "symmetric_accuracy", "accuracy_all_cases"}


def test_minimal_case_of_the_issue_definition_2():
    # One pair, truths yes (case) / no (negation), the model says "Yes" to both: the paper's
    # accuracy counts the case as given only -> 1.0; over both cases it would be 0.5.
    result = vh.vh_scores([VHPair(True, False, case_answer="yes")], with_intervals=False)
    assert result.accuracy == 1.0
    assert result.accuracy_all_cases == 0.5
    assert result.symmetric_accuracy == 0.0
    assert result.yes_share == 1.0


def test_always_yes_accuracy_is_the_label_balance():
    # Theorem 1 at p = 1: accuracy = q. Cases as given: 3 "yes", 1 "no" (q = 0.75); an
    # always-"yes" model gets the 3 yes-cases right and every negation of them wrong, and the
    # "no" case wrong and its negation ("yes") right.
    pairs = [VHPair(True, False, case_answer="yes")] * 3 + [VHPair(False, True, case_answer="no")]
    result = vh.vh_scores(pairs, with_intervals=False)
    assert result.yes_share == 0.75
    assert result.accuracy == 0.75 == vh.random_guess_accuracy(1.0, 0.75)
    assert result.accuracy_all_cases == 0.5
    assert result.symmetric_accuracy == 0.0 == vh.random_guess_symmetric_accuracy(1.0)
    # the bias Table 3 shows: accuracy above (1 + symmetric accuracy) / 2
    assert result.accuracy > (1 + result.symmetric_accuracy) / 2


def test_accuracy_differs_from_all_cases_by_hand():
    # Cases: right, right, wrong, wrong -> Def. 2 accuracy 2/4; negations: wrong, right, right,
    # right -> all cases 5/8; both right only in pair 2 -> 1/4.
    pairs = [
        VHPair(True, False, case_answer="yes"),
        VHPair(True, True, case_answer="no"),
        VHPair(False, True, case_answer="yes"),
        VHPair(False, True, case_answer="yes"),
    ]
    result = vh.vh_scores(pairs, seed=0, rounds=200)
    assert (result.accuracy, result.accuracy_all_cases) == (0.5, 0.625)
    assert result.symmetric_accuracy == 0.25
    assert result.yes_share == 0.75
    low, high = result.intervals["accuracy"].low, result.intervals["accuracy"].high
    assert 0.0 <= low <= 0.5 <= high <= 1.0
    # unknown labels leave q undefined, never guessed
    assert vh.yes_share([VHPair(True, True)]) is None


def test_breakdown_per_perturbation():
    result = vh.vh_scores_by_perturbation(PAIRS, with_intervals=False)
    original = result[ORIGINAL]
    # original: 2 of 3 cases as given right (4 of 6 over both), 1 of 3 pairs, 1 new
    assert original.accuracy == pytest.approx(2 / 3)
    assert original.accuracy_all_cases == pytest.approx(4 / 6)
    assert original.symmetric_accuracy == pytest.approx(1 / 3)
    assert original.new_successful == 1
    noise = result["gaussian_noise"]
    assert (noise.accuracy, noise.symmetric_accuracy, noise.new_successful) == (0.5, 0.5, 2)


def test_breakdown_per_source():
    result = vh.vh_scores_by_source(PAIRS, with_intervals=False)
    # MMVP: pairs 1, 2, 4 -> 2 of 3 cases as given (3 of 6 over both), 1 of 3 pairs, new 1 + 2
    assert result["MMVP"].accuracy == pytest.approx(2 / 3)
    assert result["MMVP"].accuracy_all_cases == pytest.approx(0.5)
    assert result["MMVP"].symmetric_accuracy == pytest.approx(1 / 3)
    assert result["MMVP"].new_successful == 3
    # POPE: pairs 3, 5 -> 1 of 2 cases as given (3 of 4 over both), 1 of 2 pairs, new 0
    assert (result["POPE"].accuracy, result["POPE"].symmetric_accuracy) == (0.5, 0.5)
    assert result["POPE"].accuracy_all_cases == 0.75
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
