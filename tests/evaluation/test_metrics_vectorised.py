"""The vectorised metrics equal the first, per-sample implementation bit for bit.

`metrics_golden.json` holds what that first implementation returned on the inputs below (fixed
seeds). It was written once by running the frozen copy of that implementation
(`tests/evaluation/metrics_reference.py` as of commit e0b6e62, removed since) on these very
inputs. Every comparison below is exact, on random inputs and on the edges: ties, missing and
unparseable answers, NaN likelihoods, empty inputs and empty groups. Results are compared as JSON
text, so floats must agree to the last bit (repr) and the order of groups, skills and models counts.
"""

from __future__ import annotations

import dataclasses
import json
from functools import cache
from pathlib import Path

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

ROUNDS = 60
GOLDEN_FILE = Path(__file__).with_name("metrics_golden.json")


@cache
def golden() -> dict:
    return json.loads(GOLDEN_FILE.read_text())


def plain(value):
    """A result as JSON holds it: dataclasses as dicts, tuples as lists, non-text keys as pairs."""
    if dataclasses.is_dataclass(value):
        return plain(dataclasses.asdict(value))
    if isinstance(value, dict):
        if all(isinstance(key, str) for key in value):
            return {key: plain(item) for key, item in value.items()}
        return [[plain(key), plain(item)] for key, item in value.items()]
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def assert_golden(section: str, case: str, result) -> None:
    """`result` is, to the last bit and in the same order, what the first implementation gave."""
    expected = golden()[section][case]
    assert json.dumps(plain(result)) == json.dumps(expected)


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
    # When scored with intervals, every value, count and interval is the reference's
    case = f"seed={seed},n={n}"
    assert_golden("headline", case, nb.naturalbench_scores(samples, seed=seed, rounds=ROUNDS))
    # And encoding first gives the same result
    encoded = nb.naturalbench_scores(nb.encode_answers(samples), seed=seed, rounds=ROUNDS)
    assert_golden("headline", case, encoded)


@pytest.mark.parametrize("index", range(len(EDGE_SAMPLES)))
def test_headline_scores_equal_reference_on_edge_cases(index):
    samples = EDGE_SAMPLES[index]
    assert_golden("headline_edges", str(index), nb.naturalbench_scores(samples, rounds=ROUNDS))
    assert_golden(
        "headline_edges_no_intervals",
        str(index),
        nb.naturalbench_scores(samples, with_intervals=False),
    )


def test_wrong_number_of_answers_is_refused():
    with pytest.raises(ValueError, match="exactly four answers"):
        nb.naturalbench_scores([[nb.A0, nb.A1, nb.A1, nb.A0], [nb.A0, nb.A1]])


@pytest.mark.parametrize("seed", [3, 4])
def test_scores_by_group_equal_reference_including_order(seed):
    # Given answers and keys with a group of one and keys that first appear late
    rng = np.random.default_rng(seed)
    samples = random_answers(rng, 120)
    keys = [("DOCCI", "yes_no", "en") if k % 3 else ("XM3600", "mcq", "zh") for k in range(120)]
    keys[-1] = ("lonely", "yes_no", "hi")
    # When / Then: the same groups in the same order with identical scores
    by_group = nb.naturalbench_scores_by_group(samples, keys, seed=seed, rounds=ROUNDS)
    assert_golden("by_group", str(seed), by_group)


def test_scores_by_group_empty_and_mismatched():
    assert nb.naturalbench_scores_by_group([], []) == {}
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
    by_skill = nb.skill_question_accuracy(samples, skills, seed=seed, rounds=ROUNDS)
    assert_golden("skills", str(seed), by_skill)
    assert nb.skill_question_accuracy([], []) == {}


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
    results = {
        f"deterministic tau={tau}": nb.deterministic_scores(p_a0, p_a1, tau=tau, **options)
        for tau in (0.0, 0.25, -0.5)
    }
    results["sample_optimal"] = nb.sample_optimal_scores(p_a0, p_a1, **options)
    results["global_optimal"] = nb.global_optimal_scores(p_a0, p_a1, **options)
    results["global_optimal_tau"] = nb.global_optimal_tau(p_a0 - p_a1)
    results["post_hoc"] = nb.post_hoc_scores(p_a0, p_a1, blind, 1 - blind, **options)
    assert_golden("debiased", f"seed={seed},ties={ties}", results)


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
    with_nan = {
        "sample_optimal": nb.sample_optimal_scores(p_a0, p_a1, rounds=ROUNDS),
        "deterministic": nb.deterministic_scores(p_a0, p_a1, rounds=ROUNDS),
    }
    assert_golden("debiased_edges", "nan", with_nan)
    # And empty input gives the same undefined rows
    empty = np.zeros((0, 4))
    names = ("sample_optimal_scores", "global_optimal_scores", "deterministic_scores")
    assert_golden("debiased_edges", "empty", {n: getattr(nb, n)(empty, empty) for n in names})


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


ELO_CASES = [
    (300, 5, 0.1, 50),
    (150, 12, 0.0, 7),
    (64, 3, 0.5, 64),
    (65, 4, 0.2, 3),
    (1, 2, 0.0, 20),
]


@pytest.mark.parametrize(("n", "n_models", "tie_share", "rounds"), ELO_CASES)
def test_bootstrap_elo_equals_first_vectorised_version(n, n_models, tie_share, rounds):
    # Given battles (sizes around the block length, a single battle, few rounds)
    battles = battles_of(np.random.default_rng(n), n, n_models, tie_share)
    # When / Then: medians and interval ends are identical for several seeds
    for seed in (0, 11):
        result = visit.bootstrap_elo(battles, rounds=rounds, seed=seed)
        assert_golden("elo", f"n={n},rounds={rounds},seed={seed}", result)
    # And the same seed gives the same intervals again
    assert visit.bootstrap_elo(battles, rounds=rounds, seed=3) == visit.bootstrap_elo(
        battles, rounds=rounds, seed=3
    )


def elo_edge_cases() -> dict[str, list]:
    """A model that sits out some rounds, all ties, a self-battle and no battles at all."""
    rare = [visit.Battle("a", "b", "a", f"i{k}", "x") for k in range(30)]
    rare.append(visit.Battle("a", "c", "c", "i-rare", "x"))
    return {
        "rare": rare,
        "ties": [visit.Battle("a", "b", visit.TIE, f"i{k}", "x") for k in range(10)],
        "mirror": [visit.Battle("a", "a", "a", "i0", "x"), visit.Battle("a", "b", "b", "i1", "x")],
        "none": [],
    }


def test_bootstrap_elo_edges_equal_first_version():
    for case, battles in elo_edge_cases().items():
        assert_golden("elo_edges", case, visit.bootstrap_elo(battles, rounds=40, seed=2))


def vlind_instances(rng: np.random.Generator, n: int, *, empty_share: float = 0.1) -> list:
    instances = []
    for k in range(n):
        n_good = 0 if rng.random() < empty_share else int(rng.integers(1, 8))
        outcome = dict(
            ck=bool(rng.random() < 0.7),
            vp=bool(rng.random() < 0.8),
            cb=bool(rng.random() < 0.5),
            lp=tuple(bool(x) for x in rng.random(n_good) < 0.5),
            concept=f"c{k % 4}",
        )
        instances.append(vlind.VLindInstance(**outcome))
    return instances


# The LP sums are added in instance order as score_pipeline.py adds them (issue 21): the golden
# LP and S_LP moved by at most 2 ulp from the first version's pairwise sums.
@pytest.mark.parametrize(("seed", "n"), [(0, 1), (1, 6), (2, 40), (3, 300)])
def test_vlind_scores_equal_first_version(seed, n):
    # Given random outcomes, some instances without good images
    instances = vlind_instances(np.random.default_rng(seed), n)
    # When / Then: values and the six intervals (shared draws now) are identical
    options = {"seed": seed, "rounds": ROUNDS}
    results = {
        "all": vlind.vlind_scores(instances, **options),
        "by_concept": vlind.vlind_scores_by(instances, lambda i: i.concept, **options),
    }
    assert_golden("vlind", f"seed={seed},n={n}", results)


def vlind_edge_cases() -> dict[str, list]:
    """Nobody passes CK (S_CB undefined), nobody passes all of CK, VP, CB (S_LP undefined), none
    with a good image, and no instances at all."""
    return {
        "no_ck": [vlind.VLindInstance(False, True, True, (True,)) for _ in range(3)],
        "no_good": [vlind.VLindInstance(True, True, True, ())],
        "none": [],
    }


def test_vlind_empty_denominators_equal_first_version():
    for case, instances in vlind_edge_cases().items():
        assert_golden("vlind_edges", case, vlind.vlind_scores(instances, rounds=ROUNDS))


@pytest.mark.parametrize(("n_units", "rounds"), [(1, 5), (7, 9), (12_000, 3), (2**20 + 3, 1)])
def test_int32_draws_are_the_int64_draws(n_units, rounds):
    # Bootstrap Elo draws int32 indices to halve the memory; the seed must keep its numbers
    assert np.array_equal(
        resample_indices(n_units, rounds=rounds, seed=5),
        resample_indices(n_units, rounds=rounds, seed=5, dtype=np.int32),
    )
