"""VLind-Bench: True/False parsing and the CK / VP / CB / LP pipeline scores (the prompts are the
family's: ``evaluation.families.vlind.layout``).

Follows METRICS.md Sec. 4 and vlind-bench.txt Sec. 3 and Sec. 5.1 (Eq. 5).
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
    bootstrap_intervals,
)

NOT_AVAILABLE = "n/a"


def parse_true_false(output: str) -> bool | None:
    """First token equal to "true"/"false" after official normalisation; None if none (Sec. 5).

    Lowercase, newlines to spaces, drop "," and ".", split on single spaces.
    """
    normalised = output.lower().replace("\n", " ").replace(",", "").replace(".", "")
    for token in normalised.split(" "):
        if token == "true":
            return True
        if token == "false":
            return False
    return None


def statement_pair_passes(
    judged_should_be_true: bool | None, judged_should_be_false: bool | None
) -> bool:
    """A test passes only if both its statements are judged correctly (vlind-bench.txt Sec. 3)."""
    return judged_should_be_true is True and judged_should_be_false is False


@dataclass(frozen=True)
class VLindInstance:
    """Test outcomes of one instance: a = CK, b = VP, c = CB, d = LP per good image."""

    ck: bool
    vp: bool
    cb: bool
    lp: tuple[bool, ...]
    concept: str = ""
    style: str = ""

    @property
    def lp_mean(self) -> float:
        # Σ of 0/1 values is exact, so this equals np.mean(self.lp) bit for bit, much faster.
        return sum(self.lp) / len(self.lp) if self.lp else 0.0


@dataclass(frozen=True)
class VLindScores:
    """Pipeline and plain scores as fractions; None marks an empty denominator ("n/a")."""

    n_instances: int
    s_ck: float | None
    s_vp: float | None
    s_cb: float | None
    s_lp: float | None
    cb: float | None
    lp: float | None
    intervals: dict[str, Interval] = field(default_factory=dict)


def _ratio(numerator: float, denominator: float) -> float | None:
    return None if denominator == 0 else float(numerator / denominator)


def _in_order(values: np.ndarray) -> float:
    """The sum one value after the other, in instance order, as the official score_pipeline.py
    adds them (``+=``): numpy's pairwise sum can differ in the last bit from 8 values on."""
    total = 0.0
    for value in values.tolist():
        total += value
    return total


def vlind_scores(
    instances: Sequence[VLindInstance],
    *,
    with_intervals: bool = True,
    seed: int = DEFAULT_SEED,
    rounds: int = DEFAULT_ROUNDS,
) -> VLindScores:
    """S_CK, S_VP, S_CB, S_LP and plain CB, LP (vlind-bench.txt Sec. 5.1, Eq. 5; METRICS.md Sec. 4).

    Only instances with at least one good image count. S_CB = Σ(a∧c)/Σa;
    S_LP = Σ[a∧b∧c]·mean(d) / Σ[a∧b∧c]; plain LP averages per-instance means of d.
    Intervals resample instances.
    """
    kept = [inst for inst in instances if inst.lp]
    n = len(kept)
    a = np.array([inst.ck for inst in kept], dtype=float)
    b = np.array([inst.vp for inst in kept], dtype=float)
    c = np.array([inst.cb for inst in kept], dtype=float)
    d = np.array([inst.lp_mean for inst in kept], dtype=float)
    abc = a * b * c
    scores = VLindScores(
        n_instances=n,
        s_ck=_ratio(a.sum(), n),
        s_vp=_ratio(b.sum(), n),
        s_cb=_ratio((a * c).sum(), a.sum()),
        s_lp=_ratio(_in_order(abc * d), abc.sum()),
        cb=_ratio(c.sum(), n),
        lp=_ratio(_in_order(d), n),
    )
    if not with_intervals:
        return scores
    shared = bootstrap_intervals(
        means={"s_ck": a, "s_vp": b, "cb": c, "lp": d},
        ratios={"s_cb": (a * c, a), "s_lp": (abc * d, abc)},
        seed=seed,
        rounds=rounds,
    )
    intervals = {name: shared[name] for name in ("s_ck", "s_vp", "s_cb", "s_lp", "cb", "lp")}
    return VLindScores(**{**scores.__dict__, "intervals": intervals})


def vlind_scores_by(
    instances: Sequence[VLindInstance],
    key: Callable[[VLindInstance], Hashable],
    *,
    with_intervals: bool = True,
    seed: int = DEFAULT_SEED,
    rounds: int = DEFAULT_ROUNDS,
) -> dict[Hashable, VLindScores]:
    """Scores per group, e.g. per concept (vlind-bench.txt Table 4) or image style (Table 7).

    For per-style results pass one VLindInstance per (instance, style) holding that style's images.
    """
    grouped: dict[Hashable, list[VLindInstance]] = defaultdict(list)
    for inst in instances:
        grouped[key(inst)].append(inst)
    return {
        k: vlind_scores(group, with_intervals=with_intervals, seed=seed, rounds=rounds)
        for k, group in grouped.items()
    }


def format_score(value: float | None) -> str:
    """Render a fraction ×100 with one decimal, or "n/a" for an empty denominator (Sec. 5.1)."""
    return NOT_AVAILABLE if value is None else f"{value * 100:.1f}"
