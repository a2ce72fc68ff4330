"""Rankings of a version's systems and Spearman's ρ between two of them ("system-level
correlation"): every leaderboard metric ranks the runs, and a family with pairwise judgments adds
each judgment set's ratings. Pure: no Django.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class Ranking:
    key: str
    label: str
    values: dict[str, float]  # system → value (higher ranks first)
    kind: str = "rating"  # how values are shown: share (×100), rating, count, tokens


def correlate(a: Ranking, b: Ranking) -> dict:
    """Spearman ρ between two rankings over the systems both rate (scipy), with the table of
    shared systems and their ranks; fewer than two shared systems or a constant ranking leave ρ
    undefined, with the reason."""
    shared = sorted(set(a.values) & set(b.values), key=lambda s: (-a.values[s], s))
    only_a = sorted(set(a.values) - set(b.values))
    only_b = sorted(set(b.values) - set(a.values))
    out = {
        "a": a.label,
        "b": b.label,
        "kind_a": a.kind,
        "kind_b": b.kind,
        "n": len(shared),
        "rho": None,
        "p_value": None,
        "reason": "",
        "p_method": "",
        "rows": [],
        "only_a": only_a,
        "only_b": only_b,
    }
    rank_a = _ranks([a.values[s] for s in shared])
    rank_b = _ranks([b.values[s] for s in shared])
    out["rows"] = [
        {"system": s, "a": a.values[s], "b": b.values[s], "rank_a": ra, "rank_b": rb}
        for s, ra, rb in zip(shared, rank_a, rank_b, strict=True)
    ]
    if len(shared) < 2:
        out["reason"] = "Spearman ρ needs at least two systems that both rankings rate."
        return out
    if len(set(rank_a)) == 1 or len(set(rank_b)) == 1:
        out["reason"] = "One ranking gives every shared system the same value: ρ is undefined."
        return out
    # Over the shared systems in name order, as scipy's spearmanr has always been called here.
    common = sorted(shared, key=str)
    result = stats.spearmanr([a.values[s] for s in common], [b.values[s] for s in common])
    rho, p_value = float(result.statistic), float(result.pvalue)
    out["rho"] = rho
    out["p_value"] = None if math.isnan(p_value) else p_value
    out["p_method"] = "t approximation (scipy)"
    if len(shared) <= EXACT_MAX_SYSTEMS:
        out["p_value"] = exact_p_value(rank_a, rank_b)
        out["p_method"] = f"exact, all {math.factorial(len(shared))} orderings"
    return out


# Up to 8 systems (40 320 orderings) the permutation p-value is exact and cheap; scipy's t
# approximation says p = 0 for ρ = ±1 whatever n, which overstates 4 or 5 systems.
EXACT_MAX_SYSTEMS = 8


def exact_p_value(rank_a: Sequence[float], rank_b: Sequence[float]) -> float:
    """Two-sided permutation p-value of Spearman's ρ: the share of all orderings of B's ranks
    whose |ρ| is at least the observed one."""
    a = np.asarray(rank_a, dtype=float)
    perms = np.asarray(list(itertools.permutations(rank_b)), dtype=float)
    a_c = a - a.mean()
    b_c = perms - perms.mean(axis=1, keepdims=True)
    rho = (b_c @ a_c) / np.sqrt((a_c @ a_c) * (b_c * b_c).sum(axis=1))
    observed = abs(rho[0])  # the identity ordering comes first
    return float(np.mean(np.abs(rho) >= observed - 1e-12))


def _ranks(values: Sequence[float]) -> list[float]:
    """Rank 1 = highest value; ties share their mean rank (as Spearman's ρ treats them)."""
    order = sorted(range(len(values)), key=lambda k: -values[k])
    ranks = [0.0] * len(values)
    k = 0
    while k < len(order):
        j = k
        while j + 1 < len(order) and values[order[j + 1]] == values[order[k]]:
            j += 1
        for m in range(k, j + 1):
            ranks[order[m]] = (k + j) / 2 + 1
        k = j + 1
    return ranks
