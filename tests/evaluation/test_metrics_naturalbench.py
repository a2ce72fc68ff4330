"""NaturalBench metrics on small hand-computed examples (METRICS.md Sec. 1)."""

import math

import numpy as np
import pytest

from evaluation.metrics import naturalbench as nb
from evaluation.metrics.naturalbench import A0, A1


@pytest.mark.parametrize(
    ("output", "question_type", "expected"),
    [
        ("Yes, it is.", nb.YES_NO, A0),
        ("No.", nb.YES_NO, A1),
        ("I think yes, no doubt", nb.YES_NO, A0),  # both found: the earlier wins
        ("There is no dog, yes", nb.YES_NO, A1),
        ("Not sure", nb.YES_NO, None),  # "Not" is not the word "no"
        ("noyes", nb.YES_NO, None),
        ("B", nb.MULTIPLE_CHOICE, A1),
        ("The answer is A.", nb.MULTIPLE_CHOICE, A0),
        ("a cat; the answer is B", nb.MULTIPLE_CHOICE, A0),  # official quirk: article "a"
        ("", nb.MULTIPLE_CHOICE, None),
    ],
)
def test_parse_answer_follows_official_extract_answer(output, question_type, expected):
    assert nb.parse_answer(output, question_type) == expected


def test_strict_parser_ignores_article_a_but_default_keeps_quirk():
    # Given an answer that opens with the article "A"
    text = "A dog sits on the left, so the answer is B."
    # Then the default parser reads option A, the strict one option B
    assert nb.parse_answer(text, nb.MULTIPLE_CHOICE) == A0
    assert nb.parse_answer(text, nb.MULTIPLE_CHOICE, strict=True) == A1
    assert nb.parse_answer("a", nb.MULTIPLE_CHOICE, strict=True) is None
    assert nb.parse_answer("(A)", nb.MULTIPLE_CHOICE, strict=True) == A0
    assert nb.parse_answer("Yes", nb.YES_NO, strict=True) == A0


def test_parse_answer_rejects_unknown_question_type():
    with pytest.raises(ValueError):
        nb.parse_answer("yes", "open_ended")


def test_build_prompt_has_no_space_by_default():
    assert nb.build_prompt("Is it red?", nb.YES_NO) == "Is it red?Please answer Yes or No."
    assert (
        nb.build_prompt("Is it red?", nb.YES_NO, space_before_suffix=True)
        == "Is it red? Please answer Yes or No."
    )
    assert nb.build_prompt("Q\nOption: A:x; B:y;", nb.MULTIPLE_CHOICE) == (
        "Q\nOption: A:x; B:y;Please output the letter corresponding to the correct option."
    )


def test_sample_scores_by_hand():
    # All correct: question 2, image 2, binary 4, group 1
    assert nb.sample_score(nb.correctness([A0, A1, A1, A0])) == nb.SampleScore(2, 2, 4, 1)
    # Always "yes": c = (T, F, F, T) -> no question or image point, binary 2
    assert nb.sample_score(nb.correctness([A0, A0, A0, A0])) == nb.SampleScore(0, 0, 2, 0)
    # c = (T, T, F, T): q0 right on both images (1), i1 right for both questions (1), binary 3
    assert nb.sample_score(nb.correctness([A0, A1, A0, A0])) == nb.SampleScore(1, 1, 3, 0)


def test_headline_scores_two_samples():
    # Given sample 1 all correct (2, 2, 4, 1) and sample 2 with c = (T, T, F, F) -> (1, 0, 2, 0)
    samples = [[A0, A1, A1, A0], [A0, A1, A0, None]]
    # When
    result = nb.naturalbench_scores(samples, seed=7, rounds=200)
    # Then Acc = 6/8, Q-Acc = 3/4, I-Acc = 2/4, G-Acc = 1/2, one unparseable answer
    assert result.n_samples == 2
    assert result.acc == 0.75
    assert result.q_acc == 0.75
    assert result.i_acc == 0.5
    assert result.g_acc == 0.5
    assert result.unparseable == 1
    assert set(result.intervals) == {"acc", "q_acc", "i_acc", "g_acc"}
    assert result.intervals["g_acc"].seed == 7
    assert 0.0 <= result.intervals["g_acc"].low <= 0.5 <= result.intervals["g_acc"].high <= 1.0


def test_empty_input_gives_none():
    result = nb.naturalbench_scores([])
    assert (result.acc, result.q_acc, result.i_acc, result.g_acc) == (None, None, None, None)


def test_scores_by_group_keys():
    samples = [[A0, A1, A1, A0], [A0, A0, A0, A0], [A1, A1, A1, A1]]
    keys = [("flickr", "yes_no", "en"), ("docci", "yes_no", "en"), ("flickr", "yes_no", "en")]
    result = nb.naturalbench_scores_by_group(samples, keys, with_intervals=False)
    # flickr: sample (2,2,4,1) + all-"no" sample c = (F,T,T,F) -> (0,0,2,0)
    flickr = result[("flickr", "yes_no", "en")]
    assert (flickr.n_samples, flickr.acc, flickr.q_acc, flickr.g_acc) == (2, 0.75, 0.5, 0.5)
    docci = result[("docci", "yes_no", "en")]
    assert (docci.n_samples, docci.acc, docci.q_acc, docci.g_acc) == (1, 0.5, 0.0, 0.0)


def test_skill_question_accuracy():
    # Sample 1: both questions solved; sample 2: c = (T, T, F, F): q0 solved, q1 not
    samples = [[A0, A1, A1, A0], [A0, A1, A0, None]]
    tags = [({"Color", "Counting"}, {"Color"}), ({"Color"}, {"Spatial"})]
    result = nb.skill_question_accuracy(samples, tags, with_intervals=False)
    assert {k: (v.q_acc, v.n_questions) for k, v in result.items()} == {
        "Color": (1.0, 3),
        "Counting": (1.0, 1),
        "Spatial": (0.0, 1),
    }


def test_random_chance_row():
    row = nb.random_chance_row()
    assert (row.acc, row.q_acc, row.i_acc, row.g_acc) == (0.5, 0.25, 0.25, 0.0625)


# d for two samples: S1 = [0.6, 0.4, 0.2, 0.5], S2 = [0.1, 0.3, -0.2, 0.2]
P_A0 = [[0.8, 0.7, 0.6, 0.75], [0.55, 0.65, 0.4, 0.6]]
P_A1 = [[0.2, 0.3, 0.4, 0.25], [0.45, 0.35, 0.6, 0.4]]


def test_deterministic_scores_at_tau_zero():
    # S1 all d > 0 -> all a0 -> c = (T,F,F,T): (0,0,2,0)
    # S2 -> a0,a0,a1,a0 -> c = (T,F,T,T): q 1, i 1, binary 3
    result = nb.deterministic_scores(P_A0, P_A1, with_intervals=False)
    assert (result.acc, result.q_acc, result.i_acc, result.g_acc) == (0.625, 0.25, 0.25, 0.0)
    assert result.tau == 0.0


def test_sample_optimal_debiasing():
    # S1: Q .6>.4 and .5>.2 (2); I .6>.2 and .5>.4 (2); G min(.6,.5)=.5 > max(.4,.2)=.4 (1)
    # S2: Q .1>.3 no, .2>-.2 yes (1); I .1>-.2 yes, .2>.3 no (1); G .1 > .3 no (0)
    result = nb.sample_optimal_scores(P_A0, P_A1, with_intervals=False)
    assert result.acc is None
    assert (result.q_acc, result.i_acc, result.g_acc) == (0.75, 0.75, 0.5)


def test_sample_optimal_uses_strict_inequalities():
    assert nb.sample_optimal_score([0.5, 0.5, 0.5, 0.5]) == nb.SampleScore(0, 0, 0, 0)


def test_global_optimal_tau_exact_search():
    # S1 is group-correct for tau in [0.4, 0.5); S2 never (max(.3,-.2) = .3 >= min(.1,.2) = .1).
    # Candidate midpoints inside [0.4, 0.5): only 0.45.
    d = nb.score_differences(P_A0, P_A1)
    tau, points = nb.global_optimal_tau(d)
    assert tau == pytest.approx(0.45)
    assert points == 1
    # At tau = 0.45: S1 all correct (2,2,4,1); S2 all a1 -> c = (F,T,T,F): (0,0,2,0)
    result = nb.global_optimal_scores(P_A0, P_A1, with_intervals=False)
    assert result.tau == pytest.approx(0.45)
    assert (result.acc, result.q_acc, result.i_acc, result.g_acc) == (0.75, 0.5, 0.5, 0.5)


def test_global_optimal_tau_takes_the_first_maximum_when_nothing_scores():
    # Only S2: no tau gives a group point, so every candidate ties; the first maximum is the
    # first candidate, -inf (a0 everywhere).
    tau, points = nb.global_optimal_tau([[0.1, 0.3, -0.2, 0.2]])
    assert points == 0
    assert tau == -math.inf


def test_global_optimal_tau_tie_rule_is_stated_and_picks_the_first_maximum():
    # S1 is group-correct for τ in [0.1, 0.2), S2 for τ in [-0.6, -0.5), S3 never: the
    # candidates -0.55 and 0.15 tie on G-Acc (one group point each) but not on Acc: at -0.55
    # S1 all a0 -> 2, S2 4, S3 a0,a1,a0,a0 -> 3 (9/12); at 0.15 S1 4 right, S2 all a1 -> 2,
    # S3 a1,a1,a0,a1 -> 1 (7/12). The stated rule takes the first maximum: the smaller, -0.55.
    d = np.array([[0.3, 0.1, 0.05, 0.2], [-0.4, -0.7, -0.6, -0.5], [0.0, -1.0, 0.5, -0.2]])
    tau, points = nb.global_optimal_tau(d)
    assert (tau, points) == (pytest.approx(-0.55), 1)
    # An ascending sweep keeping a τ only on a strictly higher G-Acc finds the same τ
    sweep = np.linspace(-1, 1, 2001)
    zeros = np.zeros_like(d)
    g = [nb.deterministic_scores(d, zeros, tau=t, with_intervals=False).g_acc for t in sweep]
    # the same prediction pattern as -0.55: τ in [-0.6, -0.5)
    assert sweep[int(np.argmax(g))] == pytest.approx(-0.6, abs=1e-3)
    at_tau = nb.deterministic_scores(d, np.zeros_like(d), tau=0.15, with_intervals=False)
    other = nb.deterministic_scores(d, np.zeros_like(d), tau=-0.55, with_intervals=False)
    assert at_tau.g_acc == other.g_acc == pytest.approx(1 / 3)
    assert (at_tau.acc, other.acc) == (pytest.approx(7 / 12), pytest.approx(9 / 12))
    swept = nb.deterministic_scores(d, np.zeros_like(d), tau=-0.6, with_intervals=False)
    result = nb.global_optimal_scores(d, np.zeros_like(d), with_intervals=False)
    assert (result.tau, result.acc, result.q_acc, result.i_acc, result.g_acc) == (
        pytest.approx(-0.55),
        pytest.approx(9 / 12),
        pytest.approx(swept.q_acc),
        pytest.approx(swept.i_acc),
        pytest.approx(1 / 3),
    )
    assert result.acc == swept.acc
    assert "first maximum" in nb.TAU_RULE


def test_global_optimal_tau_matches_brute_force():
    rng = np.random.default_rng(3)
    d = rng.normal(size=(40, 4)).round(1)  # rounding creates repeated values
    tau, points = nb.global_optimal_tau(d)
    grid = np.concatenate(([-np.inf], np.unique(d), [np.inf]))

    def group_points(t):
        return int(np.sum((np.maximum(d[:, 1], d[:, 2]) <= t) & (t < np.minimum(d[:, 0], d[:, 3]))))

    assert points == max(group_points(t) for t in grid)
    assert group_points(tau) == points


def test_global_optimal_interval_is_seeded():
    one = nb.global_optimal_scores(P_A0, P_A1, seed=5, rounds=50)
    two = nb.global_optimal_scores(P_A0, P_A1, seed=5, rounds=50)
    assert one.intervals == two.intervals
    assert one.intervals["g_acc"].rounds == 50


def test_post_hoc_debiasing_eq5():
    # Blind likelihoods: q0 P(a0|q)=0.8, P(a1|q)=0.2; q1 0.5 / 0.5
    # q0_i0: .9/.8 - .1/.2 = 0.625 > 0 -> a0   q0_i1: .7/.8 - .3/.2 = -0.625 -> a1
    # q1_i0: .3/.5 - .7/.5 = -0.8 -> a1       q1_i1: .6/.5 - .4/.5 = 0.4 -> a0
    p_a0 = [[0.9, 0.7, 0.3, 0.6]]
    p_a1 = [[0.1, 0.3, 0.7, 0.4]]
    blind_a0 = [[0.8, 0.5]]
    blind_a1 = [[0.2, 0.5]]
    assert nb.post_hoc_answers(p_a0, p_a1, blind_a0, blind_a1) == [[A0, A1, A1, A0]]
    result = nb.post_hoc_scores(p_a0, p_a1, blind_a0, blind_a1, with_intervals=False)
    assert result.g_acc == 1.0
    # Without debiasing d = [.8, .4, -.4, .2] -> a0, a0, a1, a0: no group point
    assert nb.deterministic_scores(p_a0, p_a1, with_intervals=False).g_acc == 0.0
