"""The vectorised metrics equal the first, per-sample implementation bit for bit.

`tests/evaluation/metrics_reference.py` is a frozen copy of that implementation. Every comparison
below is exact (==), on random inputs and on the edges: ties, missing and unparseable answers,
NaN likelihoods, empty inputs and empty groups.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from evaluation.metrics import naturalbench as nb
from evaluation.metrics import visit, vlind
from evaluation.metrics.bootstrap import (
    bootstrap_intervals,
    bootstrap_mean_interval,
    bootstrap_mean_intervals,
    bootstrap_ratio_interval,
    resample_indices,
)
from tests.evaluation import metrics_reference as ref

ROUNDS = 60


def fields(scores) -> dict:
    """A NaturalBenchScores of either implementation as a plain dict (the classes differ)."""
    return dataclasses.asdict(scores)


def random_answers(rng: np.random.Generator, n: int) -> list[list]:
    # a0 / a1 most of the time, sometimes unparseable (None) or a stray value that is never right
    pool = np.array([nb.A0, nb.A1, None, "Yes"], dtype=object)
    picks = rng.choice(4, size=(n, 4), p=[0.45, 0.45, 0.07, 0.03])
    return pool[picks].tolist()


def random_likelihoods(rng: np.random.Generator, n: int, *, ties: bool) -> np.ndarray:
    if ties:  # few distinct values, so d values tie often
        return rng.integers(0, 4, size=(n, 4)) / 4
    return rng.random((n, 4))


EDGE_SAMPLES = [
    [],
    [[None, None, None, None]],
    [[nb.A0, nb.A1, nb.A1, nb.A0]],
    [[nb.A0, nb.A0, nb.A0, nb.A0], [nb.A1, nb.A1, nb.A1, nb.A1]],
    [[nb.A0, nb.A1, nb.A1, None], ["a0", "A1", "", nb.A0], (nb.A0, nb.A1, nb.A1, nb.A0)],
    [[np.str_("a0"), np.str_("a1"), "a1", "a0"], [["a0"], {"a": 1}, 0, 1.0]],
]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n", [1, 7, 250])
def test_headline_scores_equal_reference_on_random_answers(seed, n):
    # Given random parsed answers with some unparseable and stray values
    samples = random_answers(np.random.default_rng(seed), n)
    # When both implementations score them, with intervals
    new = nb.naturalbench_scores(samples, seed=seed, rounds=ROUNDS)
    old = ref.naturalbench_scores(samples, seed=seed, rounds=ROUNDS)
    # Then every value, count and interval is identical
    assert fields(new) == fields(old)
    # And encoding first gives the same result
    encoded = nb.naturalbench_scores(nb.encode_answers(samples), seed=seed, rounds=ROUNDS)
    assert fields(encoded) == fields(old)


@pytest.mark.parametrize("samples", EDGE_SAMPLES)
def test_headline_scores_equal_reference_on_edge_cases(samples):
    assert fields(nb.naturalbench_scores(samples, rounds=ROUNDS)) == fields(
        ref.naturalbench_scores(samples, rounds=ROUNDS)
    )
    assert fields(nb.naturalbench_scores(samples, with_intervals=False)) == fields(
        ref.naturalbench_scores(samples, with_intervals=False)
    )


def test_wrong_number_of_answers_is_refused_like_the_reference():
    bad = [[nb.A0, nb.A1, nb.A1, nb.A0], [nb.A0, nb.A1]]
    with pytest.raises(ValueError, match="exactly four answers"):
        ref.naturalbench_scores(bad)
    with pytest.raises(ValueError, match="exactly four answers"):
        nb.naturalbench_scores(bad)


@pytest.mark.parametrize("seed", [3, 4])
def test_scores_by_group_equal_reference_including_order(seed):
    # Given answers and keys with a group of one and keys that first appear late
    rng = np.random.default_rng(seed)
    samples = random_answers(rng, 120)
    keys = [("DOCCI", "yes_no", "en") if k % 3 else ("XM3600", "mcq", "zh") for k in range(120)]
    keys[-1] = ("lonely", "yes_no", "hi")
    # When
    new = nb.naturalbench_scores_by_group(samples, keys, seed=seed, rounds=ROUNDS)
    old = ref.naturalbench_scores_by_group(samples, keys, seed=seed, rounds=ROUNDS)
    # Then the same groups in the same order with identical scores
    assert list(new) == list(old)
    assert {k: fields(v) for k, v in new.items()} == {k: fields(v) for k, v in old.items()}


def test_scores_by_group_empty_and_mismatched():
    assert nb.naturalbench_scores_by_group([], []) == ref.naturalbench_scores_by_group([], []) == {}
    with pytest.raises(ValueError, match="one key per sample"):
        nb.naturalbench_scores_by_group([[nb.A0] * 4], [])


@pytest.mark.parametrize("seed", [5, 6])
def test_skill_accuracy_equals_reference(seed):
    # Given tags with repeats inside a question, shared by q0 and q1, and untagged questions
    rng = np.random.default_rng(seed)
    samples = random_answers(rng, 90)
    names = ["Counting", "Color", "Spatial", "World Knowledge"]
    skills = []
    for k in range(90):
        q0 = [names[int(i)] for i in rng.integers(0, 4, size=int(rng.integers(0, 3)))]
        q1 = [names[k % 4], names[k % 4]] if k % 5 else []
        skills.append((q0, q1))
    # When / Then
    new = nb.skill_question_accuracy(samples, skills, seed=seed, rounds=ROUNDS)
    old = ref.skill_question_accuracy(samples, skills, seed=seed, rounds=ROUNDS)
    assert list(new) == list(old)
    assert {k: dataclasses.asdict(v) for k, v in new.items()} == {
        k: dataclasses.asdict(v) for k, v in old.items()
    }
    assert nb.skill_question_accuracy([], []) == ref.skill_question_accuracy([], []) == {}


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("seed", [7, 8])
def test_debiased_scores_equal_reference(seed, ties):
    # Given likelihoods, with many tied differences when `ties`
    rng = np.random.default_rng(seed)
    p_a0 = random_likelihoods(rng, 80, ties=ties)
    p_a1 = 1 - p_a0 if not ties else random_likelihoods(rng, 80, ties=True)
    blind = rng.random((80, 2)) + 0.05
    options = {"seed": seed, "rounds": ROUNDS}
    # When / Then: fixed τ, sample-optimal τ, global-optimal τ (with its per-round search) and
    # post-hoc debiasing agree exactly
    for tau in (0.0, 0.25, -0.5):
        assert fields(nb.deterministic_scores(p_a0, p_a1, tau=tau, **options)) == fields(
            ref.deterministic_scores(p_a0, p_a1, tau=tau, **options)
        )
    assert fields(nb.sample_optimal_scores(p_a0, p_a1, **options)) == fields(
        ref.sample_optimal_scores(p_a0, p_a1, **options)
    )
    assert fields(nb.global_optimal_scores(p_a0, p_a1, **options)) == fields(
        ref.global_optimal_scores(p_a0, p_a1, **options)
    )
    assert nb.global_optimal_tau(p_a0 - p_a1) == ref.global_optimal_tau(p_a0 - p_a1)
    assert fields(nb.post_hoc_scores(p_a0, p_a1, blind, 1 - blind, **options)) == fields(
        ref.post_hoc_scores(p_a0, p_a1, blind, 1 - blind, **options)
    )


def test_debiased_scores_equal_reference_with_nan_and_empty_input():
    # Given NaN in either argument of the oracle's min/max, and equal values
    nan = float("nan")
    p_a0 = np.array(
        [
            [nan, 0.1, 0.2, 0.9],
            [0.9, 0.1, 0.2, nan],
            [0.9, nan, 0.2, 0.8],
            [0.9, 0.1, nan, 0.8],
            [0.5, 0.5, 0.5, 0.5],
            [0.0, -0.0, 0.0, -0.0],
        ]
    )
    p_a1 = np.zeros_like(p_a0)
    # Then the oracle reproduces Python's min/max semantics
    assert fields(nb.sample_optimal_scores(p_a0, p_a1, rounds=ROUNDS)) == fields(
        ref.sample_optimal_scores(p_a0, p_a1, rounds=ROUNDS)
    )
    assert fields(nb.deterministic_scores(p_a0, p_a1, rounds=ROUNDS)) == fields(
        ref.deterministic_scores(p_a0, p_a1, rounds=ROUNDS)
    )
    # And empty input gives the same undefined rows
    empty = np.zeros((0, 4))
    for name in ("sample_optimal_scores", "global_optimal_scores", "deterministic_scores"):
        assert fields(getattr(nb, name)(empty, empty)) == fields(getattr(ref, name)(empty, empty))


def test_shared_index_intervals_equal_one_call_per_array():
    rng = np.random.default_rng(9)
    arrays = {"a": rng.random(50), "b": rng.integers(0, 2, 50).astype(float)}
    shared = bootstrap_mean_intervals(arrays, seed=4, rounds=ROUNDS)
    assert shared == {
        k: bootstrap_mean_interval(v, seed=4, rounds=ROUNDS) for k, v in arrays.items()
    }
    assert bootstrap_mean_intervals({"a": []}, rounds=ROUNDS) == {
        "a": bootstrap_mean_interval([], rounds=ROUNDS)
    }
    with pytest.raises(ValueError, match="one value per unit"):
        bootstrap_mean_intervals({"a": [1.0], "b": [1.0, 2.0]})
    # Ratios share the draws too, undefined rounds included
    num, den = arrays["b"] * arrays["a"], arrays["b"]
    mixed = bootstrap_intervals(means=arrays, ratios={"r": (num, den)}, seed=4, rounds=ROUNDS)
    assert mixed["r"] == bootstrap_ratio_interval(num, den, seed=4, rounds=ROUNDS)
    zero = np.zeros(50)
    assert bootstrap_intervals(ratios={"z": (zero, zero)}, rounds=ROUNDS)["z"] == (
        bootstrap_ratio_interval(zero, zero, rounds=ROUNDS)
    )


def battles_of(rng: np.random.Generator, n: int, n_models: int, tie_share: float) -> list:
    models = [f"m{k}" for k in range(n_models)]
    out = []
    for t in range(n):
        a, b = rng.choice(n_models, 2, replace=False)
        p_win = (1 - tie_share) / 2
        winner = rng.choice([models[a], models[b], visit.TIE], p=[p_win, p_win, tie_share])
        out.append(visit.Battle(models[a], models[b], str(winner), f"img{t % 37}", "ins"))
    return out


@pytest.mark.parametrize(
    ("n", "n_models", "tie_share", "rounds"),
    [(300, 5, 0.1, 50), (150, 12, 0.0, 7), (64, 3, 0.5, 64), (65, 4, 0.2, 3), (1, 2, 0.0, 20)],
)
def test_bootstrap_elo_equals_first_vectorised_version(n, n_models, tie_share, rounds):
    # Given battles (sizes around the block length, a single battle, few rounds)
    battles = battles_of(np.random.default_rng(n), n, n_models, tie_share)
    # When / Then: medians and interval ends are identical for several seeds
    for seed in (0, 11):
        new = visit.bootstrap_elo(battles, rounds=rounds, seed=seed)
        assert new == ref.bootstrap_elo_v1(battles, rounds=rounds, seed=seed)
    # And the same seed gives the same intervals again
    assert visit.bootstrap_elo(battles, rounds=rounds, seed=3) == visit.bootstrap_elo(
        battles, rounds=rounds, seed=3
    )


def test_bootstrap_elo_edges_equal_first_version():
    # A model that sits out some rounds, all ties, a self-battle and no battles at all
    rare = [visit.Battle("a", "b", "a", f"i{k}", "x") for k in range(30)]
    rare.append(visit.Battle("a", "c", "c", "i-rare", "x"))
    ties = [visit.Battle("a", "b", visit.TIE, f"i{k}", "x") for k in range(10)]
    mirror = [visit.Battle("a", "a", "a", "i0", "x"), visit.Battle("a", "b", "b", "i1", "x")]
    for battles in (rare, ties, mirror, []):
        assert visit.bootstrap_elo(battles, rounds=40, seed=2) == ref.bootstrap_elo_v1(
            battles, rounds=40, seed=2
        )


def vlind_pair(rng: np.random.Generator, n: int, *, empty_share: float = 0.1):
    """The same random instances for both implementations."""
    new, old = [], []
    for k in range(n):
        n_good = 0 if rng.random() < empty_share else int(rng.integers(1, 8))
        outcome = dict(
            ck=bool(rng.random() < 0.7),
            vp=bool(rng.random() < 0.8),
            cb=bool(rng.random() < 0.5),
            lp=tuple(bool(x) for x in rng.random(n_good) < 0.5),
            concept=f"c{k % 4}",
        )
        new.append(vlind.VLindInstance(**outcome))
        old.append(ref.VLindInstanceV1(**outcome))
    return new, old


@pytest.mark.parametrize(("seed", "n"), [(0, 1), (1, 6), (2, 40), (3, 300)])
def test_vlind_scores_equal_first_version(seed, n):
    # Given random outcomes, some instances without good images
    new, old = vlind_pair(np.random.default_rng(seed), n)
    # When / Then: values and the six intervals (shared draws now) are identical
    options = {"seed": seed, "rounds": ROUNDS}
    assert dataclasses.asdict(vlind.vlind_scores(new, **options)) == dataclasses.asdict(
        ref.vlind_scores(old, **options)
    )
    by_new = vlind.vlind_scores_by(new, lambda i: i.concept, **options)
    by_old = ref.vlind_scores_by(old, lambda i: i.concept, **options)
    assert {k: dataclasses.asdict(v) for k, v in by_new.items()} == {
        k: dataclasses.asdict(v) for k, v in by_old.items()
    }


def test_vlind_empty_denominators_equal_first_version():
    # Nobody passes CK (S_CB undefined), nobody passes all of CK, VP, CB (S_LP undefined), none
    # with a good image, and no instances at all
    no_ck = [vlind.VLindInstance(False, True, True, (True,)) for _ in range(3)]
    no_ck_old = [ref.VLindInstanceV1(False, True, True, (True,)) for _ in range(3)]
    no_good = [vlind.VLindInstance(True, True, True, ())]
    no_good_old = [ref.VLindInstanceV1(True, True, True, ())]
    for new, old in ((no_ck, no_ck_old), (no_good, no_good_old), ([], [])):
        assert dataclasses.asdict(vlind.vlind_scores(new, rounds=ROUNDS)) == dataclasses.asdict(
            ref.vlind_scores(old, rounds=ROUNDS)
        )


@pytest.mark.parametrize(("n_units", "rounds"), [(1, 5), (7, 9), (12_000, 3), (2**20 + 3, 1)])
def test_int32_draws_are_the_int64_draws(n_units, rounds):
    # Bootstrap Elo draws int32 indices to halve the memory; the seed must keep its numbers
    assert np.array_equal(
        resample_indices(n_units, rounds=rounds, seed=5),
        resample_indices(n_units, rounds=rounds, seed=5, dtype=np.int32),
    )
