"""Inter-annotator agreement and annotator speed. Pure: no Django import.

Ratings are a mapping ``item -> {rater: label}`` with hashable labels (one label per rater per
item, as the database guarantees). Multi-label votes (skill tags give a frozenset) go through
:func:`canonical_label` first so that two identical tag sets are one category.

Every coefficient returns ``None`` when it is undefined (too few items or raters, or only one
category in use, where chance agreement is 1 and the ratio is 0/0); outputs never hold NaN.

Definitions (also shown to curators):

- percent agreement: over items with at least two ratings, the share of rater pairs on the item
  that gave the same label, averaged over items (Fleiss 1971, P-bar).
- Cohen's κ: for every pair of raters sharing at least ``MIN_ITEMS`` items, κ on those items;
  the summary is the unweighted mean over pairs whose κ is defined. :func:`cohen_kappa` calls
  scikit-learn's ``cohen_kappa_score``; the all-pairs table uses the same formula on a numpy
  confusion matrix because sklearn's per-call validation dominates with thousands of pairs
  (the tests hold both equal).
- Fleiss' κ: statsmodels ``fleiss_kappa`` needs the same number of raters on every item. Items
  with a different number (escalated tasks, leases still open) are left out: we keep the items
  with the modal number of raters (ties: the larger number), at least two.
- Krippendorff's α (nominal): the ``krippendorff`` package. We pass the documented equivalent of
  reliability data, ``value_counts`` (units × values), so memory grows with items × categories
  and not with items × raters; units with fewer than two ratings are unpairable and dropped.
- gold accuracy: share of gold answers that matched the gold label.
- median seconds: median of the client-measured time on task (``duration_ms``) in seconds.
- tasks per hour: annotations per hour *on task*: ``count / (sum of durations in hours)``. It is
  a working speed, not a throughput: pauses between tasks do not count. Durations of 0 mean
  "not reported" and are left out of both speed figures.

Multi-label kinds (skill tags: each vote is a set of tags) get figures that fit sets, because the
coefficients above treat two tag sets that share all but one tag as wholly different:

- per tag: each tag as a binary label ("chosen" / "not chosen") on every item with ≥ 2 votes,
  then percent agreement, mean pairwise Cohen's κ and nominal Krippendorff's α as above.
- set α: Krippendorff's α with a set distance (Passonneau 2006): MASI, or Jaccard distance.
  ``krippendorff.alpha`` takes the distance as a callable over the distinct tag sets; the
  distance matrix is computed with numpy from a membership matrix because a queue can hold
  thousands of distinct sets (the tests hold it equal to nltk's ``masi_distance`` and
  ``jaccard_distance``).
- per annotator: Cohen's κ against each other person on their shared (item, tag) decisions —
  every tag of the queue as a yes/no on every shared item — averaged over the others.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import krippendorff
import numpy as np
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

Ratings = Mapping[Hashable, Mapping[Hashable, Hashable]]

MIN_ITEMS = 2  # chance-corrected coefficients need at least this many rated items


def canonical_label(value: object) -> Hashable:
    """One hashable, comparable category per vote: tag sets become a sorted JSON list."""
    if isinstance(value, set | frozenset | list | tuple):
        return json.dumps(sorted(str(v) for v in value), ensure_ascii=False)
    return value  # type: ignore[return-value]


def _finite(value: float | None) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _pairable(ratings: Ratings) -> dict[Hashable, Mapping[Hashable, Hashable]]:
    return {item: by_rater for item, by_rater in ratings.items() if len(by_rater) >= 2}


# --- percent agreement ----------------------------------------------------------------------
def item_pair_agreement(labels: Sequence[Hashable]) -> float | None:
    """Share of agreeing pairs among one item's labels (None with fewer than two)."""
    n = len(labels)
    if n < 2:
        return None
    agreeing = sum(c * (c - 1) for c in Counter(labels).values())
    return agreeing / (n * (n - 1))


def percent_agreement(ratings: Ratings) -> float | None:
    """Mean over items (with ≥ 2 ratings) of the share of rater pairs that agree."""
    shares = [item_pair_agreement(list(r.values())) for r in _pairable(ratings).values()]
    return sum(shares) / len(shares) if shares else None  # type: ignore[arg-type]


# --- Cohen's kappa --------------------------------------------------------------------------
@dataclass(frozen=True)
class PairKappa:
    rater_a: Hashable
    rater_b: Hashable
    n_shared: int
    kappa: float | None


def cohen_kappa(labels_a: Sequence[Hashable], labels_b: Sequence[Hashable]) -> float | None:
    """Cohen's κ of two raters over the same items (scikit-learn), None when undefined."""
    if len(labels_a) != len(labels_b):
        raise ValueError("both raters must label the same items")
    if len(labels_a) < MIN_ITEMS:
        return None
    if len(set(labels_a) | set(labels_b)) < 2:
        return None  # both always gave one and the same label: chance agreement is 1
    codes: dict[Hashable, int] = {}
    a = [codes.setdefault(x, len(codes)) for x in labels_a]
    b = [codes.setdefault(x, len(codes)) for x in labels_b]
    return _finite(cohen_kappa_score(a, b))


def _order(rater_a: Hashable, rater_b: Hashable) -> tuple[Hashable, Hashable]:
    return (rater_a, rater_b) if repr(rater_a) <= repr(rater_b) else (rater_b, rater_a)


def _kappa_from_codes(a: np.ndarray, b: np.ndarray, n_codes: int) -> float | None:
    """Cohen (1960) κ from integer-coded labels: the formula of sklearn's cohen_kappa_score.

    sklearn spends ~15 ms per call validating its input; a queue with 100 annotators has
    4,950 pairs, so the pair table computes the same confusion matrix with numpy (tests
    check it equals sklearn).
    """
    if len(a) < MIN_ITEMS:
        return None
    confusion = np.zeros((n_codes, n_codes), dtype=float)
    np.add.at(confusion, (a, b), 1.0)
    n = confusion.sum()
    observed = np.trace(confusion) / n
    expected = float(confusion.sum(axis=1) @ confusion.sum(axis=0)) / (n * n)
    if expected >= 1.0:
        return None  # both always gave one and the same label
    return _finite((observed - expected) / (1.0 - expected))


def cohen_kappa_pairs(ratings: Ratings, min_shared: int = MIN_ITEMS) -> list[PairKappa]:
    """κ for every rater pair with at least ``min_shared`` items in common."""
    codes: dict[Hashable, int] = {}
    shared: dict[tuple[Hashable, Hashable], tuple[list, list]] = defaultdict(lambda: ([], []))
    for by_rater in _pairable(ratings).values():
        for x, y in combinations(by_rater, 2):
            a, b = _order(x, y)
            la, lb = shared[(a, b)]
            la.append(codes.setdefault(by_rater[a], len(codes)))
            lb.append(codes.setdefault(by_rater[b], len(codes)))
    out = []
    for (a, b), (la, lb) in shared.items():
        if len(la) >= min_shared:
            kappa = _kappa_from_codes(np.asarray(la), np.asarray(lb), len(codes))
            out.append(PairKappa(a, b, len(la), kappa))
    out.sort(key=lambda p: (repr(p.rater_a), repr(p.rater_b)))
    return out


def mean_kappa(pairs: Iterable[PairKappa]) -> float | None:
    """Unweighted mean of the defined pairwise κ values."""
    values = [p.kappa for p in pairs if p.kappa is not None]
    return sum(values) / len(values) if values else None


# --- Fleiss' kappa --------------------------------------------------------------------------
def fleiss_kappa_table(table: Sequence[Sequence[float]]) -> float | None:
    """Fleiss' κ of a subjects × categories count table with equal row sums (statsmodels)."""
    arr = np.asarray(table, dtype=float)
    if arr.ndim != 2 or arr.shape[0] < MIN_ITEMS:
        return None
    row_sums = arr.sum(axis=1)
    if row_sums.min() < 2 or row_sums.min() != row_sums.max():
        return None
    if np.count_nonzero(arr.sum(axis=0)) < 2:
        return None
    return _finite(sm_fleiss_kappa(arr, method="fleiss"))


def modal_rater_count(ratings: Ratings) -> int | None:
    """The most common number of ratings per item among items with ≥ 2 (ties: the larger)."""
    counts = Counter(len(r) for r in _pairable(ratings).values())
    if not counts:
        return None
    return max(counts.items(), key=lambda kv: (kv[1], kv[0]))[0]


def fleiss_kappa(ratings: Ratings) -> float | None:
    """Fleiss' κ over the items that have the modal number of raters (see module doc)."""
    m = modal_rater_count(ratings)
    if m is None:
        return None
    rows = [list(r.values()) for r in ratings.values() if len(r) == m]
    codes: dict[Hashable, int] = {}
    data = np.array([[codes.setdefault(x, len(codes)) for x in row] for row in rows], dtype=int)
    table, _categories = aggregate_raters(data, n_cat=len(codes))
    return fleiss_kappa_table(table)


# --- Krippendorff's alpha -------------------------------------------------------------------
def krippendorff_alpha(ratings: Ratings) -> float | None:
    """Krippendorff's α for nominal data, from a units × values count matrix."""
    units = list(_pairable(ratings).values())
    if len(units) < MIN_ITEMS:
        return None
    codes: dict[Hashable, int] = {}
    for by_rater in units:
        for label in by_rater.values():
            codes.setdefault(label, len(codes))
    if len(codes) < 2:
        return None
    counts = np.zeros((len(units), len(codes)), dtype=int)
    for i, by_rater in enumerate(units):
        for label in by_rater.values():
            counts[i, codes[label]] += 1
    return _finite(krippendorff.alpha(value_counts=counts, level_of_measurement="nominal"))


# --- multi-label: tag sets -------------------------------------------------------------------
SetRatings = Mapping[Hashable, Mapping[Hashable, frozenset]]
SET_DISTANCES = ("masi", "jaccard")


def set_distance_matrix(sets: Sequence[frozenset], distance: str = "masi") -> np.ndarray:
    """Pairwise distances between tag sets: MASI (Passonneau 2006) or Jaccard distance.

    MASI = 1 − J·M with J the Jaccard similarity and M 1 (equal), 2/3 (one contains the other),
    1/3 (they overlap), 0 (disjoint) — nltk.metrics.distance.masi_distance's definition.
    Two empty sets are equal (distance 0).
    """
    if distance not in SET_DISTANCES:
        raise ValueError(f"unknown set distance {distance!r}")
    tags = sorted({t for s in sets for t in s})
    index = {t: i for i, t in enumerate(tags)}
    member = np.zeros((len(sets), len(tags)), dtype=float)
    for row, s in enumerate(sets):
        for t in s:
            member[row, index[t]] = 1.0
    inter = member @ member.T
    size = member.sum(axis=1)
    union = size[:, None] + size[None, :] - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        jaccard = np.where(union > 0, inter / np.where(union > 0, union, 1), 1.0)
    if distance == "jaccard":
        return 1.0 - jaccard
    smaller = np.minimum(size[:, None], size[None, :])
    equal = (inter == size[:, None]) & (inter == size[None, :])
    monotone = np.where(
        equal, 1.0, np.where(inter == smaller, 2 / 3, np.where(inter > 0, 1 / 3, 0.0))
    )
    return 1.0 - jaccard * monotone


def set_alpha(ratings: SetRatings, distance: str = "masi") -> float | None:
    """Krippendorff's α of tag-set votes with a set distance (``krippendorff`` package)."""
    units = list(_pairable(ratings).values())
    if len(units) < MIN_ITEMS:
        return None
    codes: dict[frozenset, int] = {}
    for by_rater in units:
        for tags in by_rater.values():
            codes.setdefault(frozenset(tags), len(codes))
    if len(codes) < 2:
        return None
    counts = np.zeros((len(units), len(codes)), dtype=int)
    for i, by_rater in enumerate(units):
        for tags in by_rater.values():
            counts[i, codes[frozenset(tags)]] += 1
    matrix = set_distance_matrix(list(codes), distance)

    def metric(v1, v2, i1, i2, n_v, dtype=np.float64):
        return matrix[i1, i2].astype(dtype)

    return _finite(krippendorff.alpha(value_counts=counts, level_of_measurement=metric))


def mean_set_similarity(ratings: SetRatings) -> float | None:
    """Mean over items (≥ 2 votes) of the mean pairwise Jaccard similarity of the votes."""
    shares = []
    for by_rater in _pairable(ratings).values():
        sets = list(by_rater.values())
        sims = [len(a & b) / len(a | b) if (a | b) else 1.0 for a, b in combinations(sets, 2)]
        shares.append(sum(sims) / len(sims))
    return sum(shares) / len(shares) if shares else None


def tags_in_use(ratings: SetRatings) -> list[Hashable]:
    return sorted(
        {t for by_rater in ratings.values() for s in by_rater.values() for t in s}, key=str
    )


def tag_ratings(ratings: SetRatings, tag: Hashable) -> dict[Hashable, dict[Hashable, bool]]:
    """One tag as a binary label: item -> {rater: chose it}, on items with ≥ 2 votes."""
    return {
        item: {rater: tag in tags for rater, tags in by_rater.items()}
        for item, by_rater in _pairable(ratings).items()
    }


def per_tag_agreement(ratings: SetRatings) -> list[dict]:
    """For every tag anyone chose: percent agreement, mean pairwise κ and α on chosen / not."""
    out = []
    for tag in tags_in_use(ratings):
        binary = tag_ratings(ratings, tag)
        out.append(
            {
                "tag": tag,
                "n_items": len(binary),
                "n_votes": sum(v for by_rater in binary.values() for v in by_rater.values()),
                "percent_agreement": percent_agreement(binary),
                "cohen_kappa": mean_kappa(cohen_kappa_pairs(binary)),
                "krippendorff_alpha": krippendorff_alpha(binary),
            }
        )
    return out


def tag_decision_kappa_pairs(ratings: SetRatings) -> list[PairKappa]:
    """Pairwise κ on (item, tag) yes/no decisions over every tag in use (``n_shared`` counts
    the shared items, not the decisions)."""
    tags = tags_in_use(ratings)
    decisions: dict[Hashable, dict[Hashable, bool]] = {}
    for item, by_rater in _pairable(ratings).items():
        for tag in tags:
            decisions[(item, tag)] = {rater: tag in s for rater, s in by_rater.items()}
    pairs = cohen_kappa_pairs(decisions, min_shared=MIN_ITEMS * max(len(tags), 1))
    n_tags = max(len(tags), 1)
    return [PairKappa(p.rater_a, p.rater_b, p.n_shared // n_tags, p.kappa) for p in pairs]


def rater_kappa(pairs: Iterable[PairKappa]) -> dict[Hashable, float | None]:
    """Each rater's κ against the others: the mean of the defined pair κ they are part of."""
    values: dict[Hashable, list[float]] = defaultdict(list)
    raters: set[Hashable] = set()
    for p in pairs:
        raters.update((p.rater_a, p.rater_b))
        if p.kappa is not None:
            values[p.rater_a].append(p.kappa)
            values[p.rater_b].append(p.kappa)
    return {r: (sum(values[r]) / len(values[r]) if values[r] else None) for r in raters}


def set_agreement_summary(ratings: SetRatings) -> dict:
    """The multi-label figures of one set of tag-set ratings, ready for a page or JSON."""
    return {
        "n_items": len(_pairable(ratings)),
        "set_alpha_masi": set_alpha(ratings, "masi"),
        "set_alpha_jaccard": set_alpha(ratings, "jaccard"),
        "mean_set_similarity": mean_set_similarity(ratings),
        "per_tag": per_tag_agreement(ratings),
    }


# --- gold and speed -------------------------------------------------------------------------
def gold_accuracy(correct: Iterable[bool | None]) -> float | None:
    """Share of gold answers marked correct; unknown (None) ones are left out."""
    known = [bool(c) for c in correct if c is not None]
    return sum(known) / len(known) if known else None


def _reported(durations_ms: Iterable[int | None]) -> list[int]:
    return [int(d) for d in durations_ms if d]


def median_seconds(durations_ms: Iterable[int | None]) -> float | None:
    """Median time on task in seconds over reported durations (> 0)."""
    known = _reported(durations_ms)
    return statistics.median(known) / 1000 if known else None


def tasks_per_hour(durations_ms: Iterable[int | None]) -> float | None:
    """Annotations per hour on task: count / sum of reported durations in hours."""
    known = _reported(durations_ms)
    return len(known) / (sum(known) / 3_600_000) if known else None


# --- everything at once ---------------------------------------------------------------------
def agreement_summary(ratings: Ratings) -> dict:
    """All agreement coefficients of one set of ratings, ready for a page or JSON."""
    pairs = cohen_kappa_pairs(ratings)
    return {
        "n_items": len(_pairable(ratings)),
        "percent_agreement": percent_agreement(ratings),
        "cohen_kappa": mean_kappa(pairs),
        "cohen_kappa_pairs": pairs,
        "fleiss_kappa": fleiss_kappa(ratings),
        "fleiss_raters": modal_rater_count(ratings),
        "krippendorff_alpha": krippendorff_alpha(ratings),
    }
