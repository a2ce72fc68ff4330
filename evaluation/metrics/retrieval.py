"""NaturalBench-Retrieval: Winoground text, image and group scores (naturalbench.txt App. B)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from evaluation.metrics.bootstrap import (
    DEFAULT_ROUNDS,
    DEFAULT_SEED,
    Interval,
    bootstrap_mean_interval,
)

# Chance for a random scorer (Winoground; METRICS.md Sec. 1), as fractions.
RANDOM_CHANCE = {"text": 0.25, "image": 0.25, "group": 1.0 / 6.0}


@dataclass(frozen=True)
class PairCorrect:
    """Winoground correctness of one (i0, i1, c0, c1) pair."""

    text: bool
    image: bool
    group: bool


def pair_correct(scores: Sequence[Sequence[float]] | np.ndarray) -> PairCorrect:
    """Text/image/group correctness from s[caption][image], strict `>` (naturalbench.txt App. B).

    text: s(c0,i0) > s(c1,i0) and s(c1,i1) > s(c0,i1); image: s(c0,i0) > s(c0,i1) and
    s(c1,i1) > s(c1,i0); group: both.
    """
    s = np.asarray(scores, dtype=float)
    if s.shape != (2, 2):
        raise ValueError("scores must be a 2 × 2 matrix indexed [caption][image]")
    text = bool(s[0, 0] > s[1, 0] and s[1, 1] > s[0, 1])
    image = bool(s[0, 0] > s[0, 1] and s[1, 1] > s[1, 0])
    return PairCorrect(text=text, image=image, group=text and image)


@dataclass(frozen=True)
class WinogroundScores:
    """Text, image and group score as fractions (None for no pairs) with bootstrap intervals."""

    n_pairs: int
    text: float | None
    image: float | None
    group: float | None
    intervals: dict[str, Interval] = field(default_factory=dict)


def winoground_scores(
    pairs: Sequence[Sequence[Sequence[float]]] | np.ndarray,
    *,
    with_intervals: bool = True,
    seed: int = DEFAULT_SEED,
    rounds: int = DEFAULT_ROUNDS,
) -> WinogroundScores:
    """Mean text/image/group score over pairs; intervals resample pairs (naturalbench Tab. 7)."""
    if len(pairs) == 0:
        return WinogroundScores(0, None, None, None)
    results = [pair_correct(pair) for pair in pairs]
    arrays = {
        "text": np.array([r.text for r in results], dtype=float),
        "image": np.array([r.image for r in results], dtype=float),
        "group": np.array([r.group for r in results], dtype=float),
    }
    intervals = (
        {name: bootstrap_mean_interval(v, seed=seed, rounds=rounds) for name, v in arrays.items()}
        if with_intervals
        else {}
    )
    return WinogroundScores(
        n_pairs=len(results),
        text=float(arrays["text"].mean()),
        image=float(arrays["image"].mean()),
        group=float(arrays["group"].mean()),
        intervals=intervals,
    )
