"""Seeded percentile-bootstrap intervals for headline metrics.

METRICS.md Sec. 6: every headline number gets a 95% bootstrap interval that resamples the unit
the metric is defined on (NaturalBench sample, VLind instance, VH pair, Elo battle), with a
recorded seed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

Unit = TypeVar("Unit")

DEFAULT_ROUNDS = 1000
DEFAULT_LEVEL = 0.95
DEFAULT_SEED = 0


@dataclass(frozen=True)
class Interval:
    """A bootstrap interval together with everything needed to reproduce it."""

    low: float | None
    high: float | None
    level: float
    rounds: int
    seed: int
    # Rounds whose statistic was undefined (e.g. an empty denominator); they are left out.
    undefined_rounds: int = 0

    @property
    def available(self) -> bool:
        return self.low is not None and self.high is not None


def resample_indices(
    n_units: int, *, rounds: int, seed: int, dtype: type[np.integer] = np.int64
) -> np.ndarray:
    """Index matrix (rounds × n_units) of draws with replacement (METRICS.md Sec. 6).

    `dtype=np.int32` halves the memory and draws the very same numbers (numpy takes 32-bit
    draws for any range below 2**32; a test pins this), so a seed keeps its interval.
    """
    rng = np.random.default_rng(seed)
    return rng.integers(0, n_units, size=(rounds, n_units), dtype=dtype)


def _percentiles(values: np.ndarray, level: float) -> tuple[float, float]:
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(values, [tail, 100.0 - tail])
    return float(low), float(high)


def percentile_interval(
    draws: Sequence[float | None],
    *,
    seed: int,
    rounds: int,
    level: float = DEFAULT_LEVEL,
) -> Interval:
    """Interval from bootstrap draws a caller computed itself (None = undefined round) (Sec. 6)."""
    if not 0.0 < level < 1.0:
        raise ValueError("level must be in (0, 1)")
    values = np.asarray([v for v in draws if v is not None], dtype=float)
    undefined = len(draws) - values.size
    if values.size == 0:
        return Interval(None, None, level, rounds, seed, undefined_rounds=undefined)
    low, high = _percentiles(values, level)
    return Interval(low, high, level, rounds, seed, undefined_rounds=undefined)


def bootstrap_interval(
    units: Sequence[Unit],
    statistic: Callable[[Sequence[Unit]], float | None],
    *,
    seed: int = DEFAULT_SEED,
    rounds: int = DEFAULT_ROUNDS,
    level: float = DEFAULT_LEVEL,
) -> Interval:
    """Percentile bootstrap of any statistic over its own units (METRICS.md Sec. 6).

    `statistic` receives a resampled list of units and may return None when it is undefined
    (an empty denominator); such rounds are dropped and counted in `undefined_rounds`.
    """
    if not 0.0 < level < 1.0:
        raise ValueError("level must be in (0, 1)")
    if len(units) == 0:
        return Interval(None, None, level, rounds, seed, undefined_rounds=rounds)
    draws = [
        statistic([units[i] for i in row])
        for row in resample_indices(len(units), rounds=rounds, seed=seed)
    ]
    return percentile_interval(draws, seed=seed, rounds=rounds, level=level)


def bootstrap_mean_interval(
    values: Sequence[float] | np.ndarray,
    *,
    seed: int = DEFAULT_SEED,
    rounds: int = DEFAULT_ROUNDS,
    level: float = DEFAULT_LEVEL,
) -> Interval:
    """Vectorised bootstrap of a mean of per-unit values (METRICS.md Sec. 6).

    Draws the same index matrix as `bootstrap_interval`, so both give identical intervals for a
    mean.
    """
    if not 0.0 < level < 1.0:
        raise ValueError("level must be in (0, 1)")
    array = np.asarray(values, dtype=float)
    if array.size == 0:
        return Interval(None, None, level, rounds, seed, undefined_rounds=rounds)
    means = array[resample_indices(array.size, rounds=rounds, seed=seed)].mean(axis=1)
    low, high = _percentiles(means, level)
    return Interval(low, high, level, rounds, seed)


def bootstrap_intervals(
    *,
    means: Mapping[str, Sequence[float] | np.ndarray] | None = None,
    ratios: Mapping[str, tuple[Sequence[float] | np.ndarray, Sequence[float] | np.ndarray]]
    | None = None,
    seed: int = DEFAULT_SEED,
    rounds: int = DEFAULT_ROUNDS,
    level: float = DEFAULT_LEVEL,
) -> dict[str, Interval]:
    """Intervals of several means and Σnumerator / Σdenominator ratios over the same units, all
    from one shared index matrix (METRICS.md Sec. 6).

    Equal, interval for interval, to calling `bootstrap_mean_interval` /
    `bootstrap_ratio_interval` on each with the same seed (each call would draw this very
    matrix); drawing it once saves the work.
    """
    if not 0.0 < level < 1.0:
        raise ValueError("level must be in (0, 1)")
    mean_arrays = {name: np.asarray(v, dtype=float) for name, v in (means or {}).items()}
    ratio_arrays = {
        name: (np.asarray(num, dtype=float), np.asarray(den, dtype=float))
        for name, (num, den) in (ratios or {}).items()
    }
    sizes = {v.size for v in mean_arrays.values()}
    for num, den in ratio_arrays.values():
        sizes |= {num.size, den.size}
    if len(sizes) > 1:
        raise ValueError("every array needs one value per unit")
    n_units = sizes.pop() if sizes else 0
    names = [*mean_arrays, *ratio_arrays]
    if n_units == 0:
        return {
            name: Interval(None, None, level, rounds, seed, undefined_rounds=rounds)
            for name in names
        }
    draws = resample_indices(n_units, rounds=rounds, seed=seed)
    out = {}
    for name, array in mean_arrays.items():
        low, high = _percentiles(array[draws].mean(axis=1), level)
        out[name] = Interval(low, high, level, rounds, seed)
    for name, (num, den) in ratio_arrays.items():
        num_sums = num[draws].sum(axis=1)
        den_sums = den[draws].sum(axis=1)
        defined = den_sums != 0
        undefined = int(rounds - defined.sum())
        if not defined.any():
            out[name] = Interval(None, None, level, rounds, seed, undefined_rounds=undefined)
            continue
        low, high = _percentiles(num_sums[defined] / den_sums[defined], level)
        out[name] = Interval(low, high, level, rounds, seed, undefined_rounds=undefined)
    return out


def bootstrap_mean_intervals(
    arrays: Mapping[str, Sequence[float] | np.ndarray],
    *,
    seed: int = DEFAULT_SEED,
    rounds: int = DEFAULT_ROUNDS,
    level: float = DEFAULT_LEVEL,
) -> dict[str, Interval]:
    """`bootstrap_intervals` of means only (one shared index matrix)."""
    return bootstrap_intervals(means=arrays, seed=seed, rounds=rounds, level=level)


def bootstrap_ratio_interval(
    numerators: Sequence[float] | np.ndarray,
    denominators: Sequence[float] | np.ndarray,
    *,
    seed: int = DEFAULT_SEED,
    rounds: int = DEFAULT_ROUNDS,
    level: float = DEFAULT_LEVEL,
) -> Interval:
    """Vectorised bootstrap of Σnumerator / Σdenominator over units (METRICS.md Sec. 6).

    Rounds whose resampled denominator is 0 are undefined and dropped (counted).
    """
    if not 0.0 < level < 1.0:
        raise ValueError("level must be in (0, 1)")
    num = np.asarray(numerators, dtype=float)
    den = np.asarray(denominators, dtype=float)
    if num.shape != den.shape:
        raise ValueError("numerators and denominators must have the same length")
    if num.size == 0:
        return Interval(None, None, level, rounds, seed, undefined_rounds=rounds)
    idx = resample_indices(num.size, rounds=rounds, seed=seed)
    num_sums = num[idx].sum(axis=1)
    den_sums = den[idx].sum(axis=1)
    defined = den_sums != 0
    undefined = int(rounds - defined.sum())
    if not defined.any():
        return Interval(None, None, level, rounds, seed, undefined_rounds=undefined)
    low, high = _percentiles(num_sums[defined] / den_sums[defined], level)
    return Interval(low, high, level, rounds, seed, undefined_rounds=undefined)
