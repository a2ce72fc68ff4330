"""The shapes metric computation speaks in, shared by every family's ``rows``.

No database access: ``services.metrics_compute`` loads rows, calls the family's ``rows`` (in
``evaluation/families/<key>/rows.py``, which call the pure ``evaluation.metrics``) and stores the
result. Every headline value carries a seeded 95% bootstrap interval that resamples the metric's
own unit (METRICS.md Sec. 6).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
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


def _code_version() -> str:
    """A hash of the code that computes metrics: the pure metrics, every family's rows, this."""
    here = Path(__file__).parent
    digest = hashlib.sha1()
    for path in sorted(here.glob("metrics/*.py")) + sorted(here.glob("families/*/rows.py")):
        digest.update(path.read_bytes())
    digest.update(Path(__file__).read_bytes())
    return digest.hexdigest()[:12]


CODE_VERSION = _code_version()


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
