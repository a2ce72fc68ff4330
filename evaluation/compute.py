"""The shapes metric computation speaks in, shared by every family's ``rows``.

No database access: ``services.metrics_compute`` loads rows, calls the family's ``rows`` (in
``evaluation/families/<key>/metric_rows.py``, which call the pure ``evaluation.metrics``) and
stores the result. Every headline value carries a seeded 95% bootstrap interval that resamples
the metric's own unit (METRICS.md Sec. 6).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol


class Interval(Protocol):
    """A seeded bootstrap interval (``evaluation.metrics.bootstrap.Interval`` has this shape)."""

    low: float | None
    high: float | None
    seed: int
    rounds: int
    level: float
    undefined_rounds: int


def code_version(paths: Iterable[Path]) -> str:
    """A short hash of the source files that compute a result, in the given order; stored with
    the result, so one computed by other code shows it."""
    digest = hashlib.sha1()
    for path in paths:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


_HERE = Path(__file__).parent
# The code that computes metrics: the pure metrics, every family's rows, this module.
CODE_VERSION = code_version(
    [
        *sorted(_HERE.glob("metrics/*.py")),
        *sorted(_HERE.glob("families/*/metric_rows.py")),
        Path(__file__),
    ]
)


@dataclass(frozen=True)
class MetricSpec:
    key: str
    label: str
    kind: str = "share"  # share (shown ×100) | count | rating | tokens
    headline: bool = True
    help: str = ""


@dataclass
class MetricRow:
    metric: str
    value: float | None
    low: float | None = None
    high: float | None = None
    n: int = 0
    breakdown: dict = field(default_factory=dict)
    details: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ItemData:
    item_id: str
    data: Mapping[str, Any]
    kept: bool = True


@dataclass(frozen=True)
class PredictionData:
    raw_output: Any
    parsed_answer: Any = None
    scores: Any = None


Items = Sequence[ItemData]  # a version's items, in order
Predictions = Mapping[str, PredictionData]  # a run's predictions by item id


@dataclass(frozen=True)
class ReferenceRow:
    """A row for comparison on a leaderboard, not a run: chance, or a paper's human figures."""

    label: str
    values: dict[str, float]
    note: str


def metric_row(
    metric: str, value: float | None, interval: Interval | None, n: int, **extra
) -> MetricRow:
    """A metric row whose details record the interval's seed, rounds and level."""
    details = extra.pop("details", {})
    if interval is not None:
        details = {
            **details,
            "seed": interval.seed,
            "rounds": interval.rounds,
            "level": interval.level,
        }
        if interval.undefined_rounds:
            details["undefined_rounds"] = interval.undefined_rounds
    return MetricRow(
        metric=metric,
        value=value,
        low=interval.low if interval else None,
        high=interval.high if interval else None,
        n=n,
        details=details,
        **extra,
    )


def cell(value: float | None, interval: Interval | None, n: int) -> dict:
    """One breakdown cell: value, interval and count."""
    return {
        "value": value,
        "low": interval.low if interval else None,
        "high": interval.high if interval else None,
        "n": n,
    }


def score_rows(
    names: Sequence[str],
    overall: Any,
    size: str,
    groups: Mapping[str, Mapping[Any, Any]] | None = None,
    details: Mapping[str, Any] | None = None,
) -> list[MetricRow]:
    """One metric row per name of a scores object: ``getattr(overall, name)``, its interval in
    ``overall.intervals`` and its count attribute `size`; `groups` (dimension → key → scores of
    the same shape) become the breakdown cells, sorted by key."""
    out = []
    for name in names:
        extra: dict[str, Any] = {"details": dict(details or {})}
        if groups is not None:
            extra["breakdown"] = {
                dim: {
                    str(k): cell(getattr(s, name), s.intervals.get(name), getattr(s, size))
                    for k, s in sorted(g.items(), key=lambda kv: str(kv[0]))
                }
                for dim, g in groups.items()
            }
        out.append(
            metric_row(
                name,
                getattr(overall, name),
                overall.intervals.get(name),
                getattr(overall, size),
                **extra,
            )
        )
    return out
