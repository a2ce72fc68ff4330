"""Seeded bootstrap interval helper (METRICS.md Sec. 6)."""

import numpy as np
import pytest

from evaluation.metrics import bootstrap as bs


def test_constant_values_give_a_point_interval():
    interval = bs.bootstrap_mean_interval([1.0, 1.0, 1.0], seed=0, rounds=50)
    assert (interval.low, interval.high, interval.rounds, interval.seed) == (1.0, 1.0, 50, 0)
    assert interval.level == 0.95


def test_generic_and_vectorised_agree_and_are_seeded():
    values = [0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0]
    fast = bs.bootstrap_mean_interval(values, seed=11, rounds=300)
    slow = bs.bootstrap_interval(values, lambda xs: float(np.mean(xs)), seed=11, rounds=300)
    assert fast.low == pytest.approx(slow.low)
    assert fast.high == pytest.approx(slow.high)
    assert bs.bootstrap_mean_interval(values, seed=11, rounds=300) == fast
    assert fast.low <= 0.6 <= fast.high


def test_two_values_percentiles_by_hand():
    # With units [0, 1] each round's mean is 0, 0.5 or 1 with probabilities 1/4, 1/2, 1/4, so
    # over 1000 rounds the 2.5th percentile is 0 and the 97.5th is 1.
    interval = bs.bootstrap_mean_interval([0.0, 1.0], seed=0, rounds=1000)
    assert (interval.low, interval.high) == (0.0, 1.0)


def test_ratio_interval_drops_undefined_rounds():
    # One unit has a denominator: rounds that never draw it are undefined.
    interval = bs.bootstrap_ratio_interval([1.0, 0.0, 0.0], [1.0, 0.0, 0.0], seed=0, rounds=200)
    assert (interval.low, interval.high) == (1.0, 1.0)
    # P(no draw of unit 0 in 3 draws) = (2/3)^3 ≈ 0.30
    assert 30 < interval.undefined_rounds < 90


def test_statistic_returning_none_and_empty_units():
    interval = bs.bootstrap_interval([1, 2], lambda xs: None, seed=0, rounds=10)
    assert not interval.available
    assert interval.undefined_rounds == 10
    assert not bs.bootstrap_mean_interval([], seed=0).available
    with pytest.raises(ValueError):
        bs.bootstrap_mean_interval([1.0], level=1.5)
