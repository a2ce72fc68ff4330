"""Server-side plots as plain SVG strings (no chart library, no JavaScript).

Every function returns a complete ``<svg>`` element with a ``<title>`` and ``role="img"`` so
screen readers announce it; numbers are also in the tables next to each plot. The last helpers
turn a leaderboard (``selectors.leaderboard``) into series for a family's plots.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

PALETTE = (
    "#3554d1",
    "#d9822b",
    "#1d7a4b",
    "#b4262f",
    "#7a4bd1",
    "#0f8a9d",
    "#8a5a00",
    "#c2418f",
    "#5d6678",
    "#4f9d2d",
)
FONT = 'font-family="system-ui, sans-serif"'


@dataclass(frozen=True)
class Series:
    name: str
    values: Sequence[float | None]
    lows: Sequence[float | None] | None = None
    highs: Sequence[float | None] | None = None


def _fmt(value: float, percent: bool) -> str:
    return f"{value * 100:.1f}" if percent else f"{value:.3g}"


def _open(width: int, height: int, title: str) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" role="img" class="plot" {FONT} '
        'font-size="12">',
        f"<title>{escape(title)}</title>",
    ]


def _legend(parts: list[str], names: Sequence[str], x: float, y: float, width: float) -> None:
    cx, cy = x, y
    for k, name in enumerate(names):
        label = escape(name[:40])
        step = 22 + 7 * len(label)
        if cx + step > x + width and cx > x:
            cx, cy = x, cy + 18
        parts.append(
            f'<rect x="{cx:.1f}" y="{cy - 9:.1f}" width="12" height="12" rx="2" '
            f'fill="{PALETTE[k % len(PALETTE)]}"/>'
        )
        parts.append(f'<text x="{cx + 16:.1f}" y="{cy + 1:.1f}" fill="#1c2230">{label}</text>')
        cx += step


def bar_chart(
    groups: Sequence[str],
    series: Sequence[Series],
    *,
    title: str,
    y_label: str = "",
    y_max: float | None = None,
    percent: bool = True,
    reference: float | None = None,
    reference_label: str = "",
    width: int = 760,
    height: int = 300,
) -> str:
    """Long because: one SVG drawn top to bottom (axes, bars, whiskers, labels) reads best whole.

    Grouped vertical bars with 95% interval whiskers; `reference` draws a dashed line."""
    legend_rows = 1 + (sum(22 + 7 * len(s.name[:40]) for s in series) // (width - 80))
    top = 28 + 18 * legend_rows
    left, right, bottom = 52, 12, 70 if max((len(g) for g in groups), default=0) > 8 else 40
    plot_w, plot_h = width - left - right, height - top - bottom
    values = [v for s in series for v in list(s.values) + list(s.highs or []) if v is not None]
    top_value = y_max if y_max is not None else max(values + [reference or 0, 1e-9]) * 1.1
    parts = _open(width, height, title)
    parts.append(f'<text x="{left}" y="16" font-weight="600" fill="#1c2230">{escape(title)}</text>')
    _legend(parts, [s.name for s in series], left, 36, plot_w)

    def y_of(value: float) -> float:
        return top + plot_h - plot_h * max(0.0, min(value, top_value)) / top_value

    for k in range(5):
        tick = top_value * k / 4
        y = y_of(tick)
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e4e7ed"/>'
        )
        parts.append(
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#5d6678">'
            f"{_fmt(tick, percent)}</text>"
        )
    if y_label:
        parts.append(
            f'<text transform="translate(12 {top + plot_h / 2:.1f}) rotate(-90)" '
            f'text-anchor="middle" fill="#5d6678">{escape(y_label)}</text>'
        )
    n_groups = max(len(groups), 1)
    group_w = plot_w / n_groups
    bar_w = min(28.0, group_w * 0.8 / max(len(series), 1))
    for g, group in enumerate(groups):
        x0 = left + g * group_w + (group_w - bar_w * len(series)) / 2
        for s_index, s in enumerate(series):
            value = s.values[g] if g < len(s.values) else None
            x = x0 + s_index * bar_w
            color = PALETTE[s_index % len(PALETTE)]
            if value is None:
                parts.append(
                    f'<text x="{x + bar_w / 2:.1f}" y="{top + plot_h - 4:.1f}" font-size="9" '
                    f'text-anchor="middle" fill="#5d6678">n/a</text>'
                )
                continue
            y = y_of(value)
            parts.append(
                f'<rect x="{x + 1:.1f}" y="{y:.1f}" width="{max(bar_w - 2, 1):.1f}" '
                f'height="{top + plot_h - y:.1f}" fill="{color}" rx="2">'
                f"<title>{escape(s.name)} · {escape(group)}: {_fmt(value, percent)}</title></rect>"
            )
            low = s.lows[g] if s.lows and g < len(s.lows) else None
            high = s.highs[g] if s.highs and g < len(s.highs) else None
            if low is not None and high is not None:
                cx = x + bar_w / 2
                parts.append(
                    f'<path d="M{cx:.1f} {y_of(low):.1f}V{y_of(high):.1f}'
                    f'M{cx - 3:.1f} {y_of(low):.1f}h6M{cx - 3:.1f} {y_of(high):.1f}h6" '
                    f'stroke="#1c2230" stroke-width="1.2" fill="none"/>'
                )
        label = escape(group[:22])
        lx = left + g * group_w + group_w / 2
        ly = top + plot_h + 14
        if bottom > 40:
            parts.append(
                f'<text transform="translate({lx:.1f} {ly:.1f}) rotate(-35)" text-anchor="end" '
                f'fill="#1c2230">{label}</text>'
            )
        else:
            parts.append(
                f'<text x="{lx:.1f}" y="{ly + 4:.1f}" text-anchor="middle" fill="#1c2230">'
                f"{label}</text>"
            )
    if reference is not None:
        y = y_of(reference)
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" '
            f'stroke="#b4262f" stroke-dasharray="5 4"/>'
        )
        parts.append(
            f'<text x="{left + plot_w - 4}" y="{y - 4:.1f}" text-anchor="end" fill="#b4262f">'
            f"{escape(reference_label)}</text>"
        )
    parts.append(
        f'<line x1="{left}" x2="{left + plot_w}" y1="{top + plot_h}" y2="{top + plot_h}" '
        f'stroke="#9aa3b2"/>'
    )
    parts.append("</svg>")
    return "".join(parts)


def whisker_chart(
    names: Sequence[str],
    values: Sequence[float],
    lows: Sequence[float | None],
    highs: Sequence[float | None],
    *,
    title: str,
    x_label: str = "",
    reference: float | None = None,
    reference_label: str = "",
    width: int = 760,
) -> str:
    """Horizontal dot-and-whisker plot (e.g. Elo with its bootstrap 95% interval)."""
    row_h = 30
    top, bottom, left, right = 34, 40, 200, 24
    height = top + bottom + row_h * max(len(names), 1)
    plot_w = width - left - right
    points = [v for v in list(values) + [x for x in list(lows) + list(highs) if x is not None]]
    if reference is not None:
        points.append(reference)
    lo = min(points, default=0.0)
    hi = max(points, default=1.0)
    pad = max((hi - lo) * 0.1, 10.0)
    lo, hi = lo - pad, hi + pad

    def x_of(value: float) -> float:
        return left + plot_w * (value - lo) / (hi - lo)

    parts = _open(width, height, title)
    parts.append(f'<text x="12" y="18" font-weight="600" fill="#1c2230">{escape(title)}</text>')
    for k in range(6):
        tick = lo + (hi - lo) * k / 5
        x = x_of(tick)
        parts.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{height - bottom}" stroke="#e4e7ed"/>'
        )
        parts.append(
            f'<text x="{x:.1f}" y="{height - bottom + 16}" text-anchor="middle" fill="#5d6678">'
            f"{tick:.0f}</text>"
        )
    if x_label:
        parts.append(
            f'<text x="{left + plot_w / 2:.1f}" y="{height - 6}" text-anchor="middle" '
            f'fill="#5d6678">{escape(x_label)}</text>'
        )
    if reference is not None:
        x = x_of(reference)
        parts.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top - 6}" y2="{height - bottom}" '
            f'stroke="#b4262f" stroke-dasharray="5 4"/>'
        )
        parts.append(
            f'<text x="{x + 4:.1f}" y="{top - 8}" fill="#b4262f">{escape(reference_label)}</text>'
        )
    for k, name in enumerate(names):
        y = top + row_h * k + row_h / 2
        color = PALETTE[k % len(PALETTE)]
        parts.append(
            f'<text x="{left - 10}" y="{y + 4:.1f}" text-anchor="end" fill="#1c2230">'
            f"{escape(name[:28])}</text>"
        )
        low, high = lows[k], highs[k]
        if low is not None and high is not None:
            parts.append(
                f'<path d="M{x_of(low):.1f} {y:.1f}H{x_of(high):.1f}M{x_of(low):.1f} {y - 6:.1f}'
                f'v12M{x_of(high):.1f} {y - 6:.1f}v12" stroke="{color}" stroke-width="2" '
                f'fill="none"/>'
            )
        interval = f" [{low:.0f}, {high:.0f}]" if low is not None and high is not None else ""
        parts.append(
            f'<circle cx="{x_of(values[k]):.1f}" cy="{y:.1f}" r="5.5" fill="{color}">'
            f"<title>{escape(name)}: {values[k]:.0f}{interval}</title></circle>"
        )
    parts.append("</svg>")
    return "".join(parts)


def funnel_chart(
    stages: Sequence[str], series: Sequence[Series], *, title: str, width: int = 760
) -> str:
    """CK → VP → CB → LP: each run's pipeline scores as connected steps (×100)."""
    height = 300
    top, bottom, left, right = 28 + 18 * (1 + len(series) // 5), 40, 52, 20
    plot_w, plot_h = width - left - right, height - top - bottom
    parts = _open(width, height, title)
    parts.append(f'<text x="{left}" y="16" font-weight="600" fill="#1c2230">{escape(title)}</text>')
    _legend(parts, [s.name for s in series], left, 36, plot_w)

    def y_of(value: float) -> float:
        return top + plot_h - plot_h * max(0.0, min(value, 1.0))

    step = plot_w / max(len(stages), 1)
    for k in range(5):
        y = y_of(k / 4)
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e4e7ed"/>'
        )
        parts.append(
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#5d6678">{k * 25}</text>'
        )
    for k, stage in enumerate(stages):
        x = left + step * k + step / 2
        arrow = " →" if k < len(stages) - 1 else ""
        parts.append(
            f'<text x="{x:.1f}" y="{top + plot_h + 20}" text-anchor="middle" font-weight="600" '
            f'fill="#1c2230">{escape(stage)}{arrow}</text>'
        )
    for s_index, s in enumerate(series):
        color = PALETTE[s_index % len(PALETTE)]
        points = [
            (left + step * k + step / 2, y_of(v), v)
            for k, v in enumerate(s.values)
            if v is not None
        ]
        if len(points) > 1:
            path = "M" + "L".join(f"{x:.1f} {y:.1f}" for x, y, _ in points)
            parts.append(f'<path d="{path}" stroke="{color}" stroke-width="2.5" fill="none"/>')
        for x, y, v in points:
            parts.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4.5" fill="{color}">'
                f"<title>{escape(s.name)}: {v * 100:.1f}</title></circle>"
            )
    parts.append("</svg>")
    return "".join(parts)


def scatter_chart(
    points: Sequence[tuple[str, float, float]],
    *,
    title: str,
    x_label: str,
    y_label: str,
    markers: Sequence[tuple[str, float, float]] = (),
    diagonal: bool = True,
    width: int = 520,
    height: int = 420,
) -> str:
    """Points in the unit square (e.g. accuracy vs symmetric accuracy), with reference markers."""
    top, bottom, left, right = 30, 46, 56, 20
    plot_w, plot_h = width - left - right, height - top - bottom

    def x_of(value: float) -> float:
        return left + plot_w * max(0.0, min(value, 1.0))

    def y_of(value: float) -> float:
        return top + plot_h - plot_h * max(0.0, min(value, 1.0))

    parts = _open(width, height, title)
    parts.append(f'<text x="{left}" y="18" font-weight="600" fill="#1c2230">{escape(title)}</text>')
    for k in range(5):
        t = k / 4
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{y_of(t):.1f}" y2="{y_of(t):.1f}" '
            f'stroke="#e4e7ed"/><line x1="{x_of(t):.1f}" x2="{x_of(t):.1f}" y1="{top}" '
            f'y2="{top + plot_h}" stroke="#e4e7ed"/>'
        )
        parts.append(
            f'<text x="{left - 6}" y="{y_of(t) + 4:.1f}" text-anchor="end" fill="#5d6678">'
            f"{k * 25}</text>"
            f'<text x="{x_of(t):.1f}" y="{top + plot_h + 16}" text-anchor="middle" '
            f'fill="#5d6678">{k * 25}</text>'
        )
    if diagonal:
        parts.append(
            f'<line x1="{x_of(0):.1f}" y1="{y_of(0):.1f}" x2="{x_of(1):.1f}" y2="{y_of(1):.1f}" '
            f'stroke="#9aa3b2" stroke-dasharray="4 4"/>'
        )
    parts.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 8}" text-anchor="middle" '
        f'fill="#5d6678">{escape(x_label)}</text>'
        f'<text transform="translate(14 {top + plot_h / 2:.1f}) rotate(-90)" '
        f'text-anchor="middle" fill="#5d6678">{escape(y_label)}</text>'
    )
    for label, x, y in markers:
        parts.append(
            f'<path d="M{x_of(x) - 5:.1f} {y_of(y) - 5:.1f}l10 10m0 -10l-10 10" stroke="#b4262f" '
            f'stroke-width="2"/><text x="{x_of(x) + 8:.1f}" y="{y_of(y) + 4:.1f}" '
            f'fill="#b4262f">{escape(label)}</text>'
        )
    for k, (label, x, y) in enumerate(points):
        color = PALETTE[k % len(PALETTE)]
        parts.append(
            f'<circle cx="{x_of(x):.1f}" cy="{y_of(y):.1f}" r="6" fill="{color}">'
            f"<title>{escape(label)}: {x * 100:.1f}, {y * 100:.1f}</title></circle>"
            f'<text x="{x_of(x) + 9:.1f}" y="{y_of(y) - 7:.1f}" fill="#1c2230">'
            f"{escape(label[:24])}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def rank_chart(
    points: Sequence[tuple[str, float, float]],
    *,
    title: str,
    x_label: str,
    y_label: str,
    width: int = 520,
    height: int = 420,
) -> str:
    """Rank under one ranking vs rank under another (1 = best, at the top left); points on the
    dashed diagonal are ranked alike (Spearman ρ = 1 when all are)."""
    top, bottom, left, right = 48, 46, 56, 24
    plot_w, plot_h = width - left - right, height - top - bottom
    n = max([1.0] + [max(a, b) for _, a, b in points])
    span = max(n - 1.0, 1.0)

    def x_of(rank: float) -> float:
        return left + plot_w * (rank - 1.0) / span

    def y_of(rank: float) -> float:
        return top + plot_h * (rank - 1.0) / span

    parts = _open(width, height, title)
    parts.append(f'<text x="{left}" y="18" font-weight="600" fill="#1c2230">{escape(title)}</text>')
    ticks = range(1, int(n) + 1) if n <= 12 else sorted({1, int(n), *range(5, int(n), 5)})
    for rank in ticks:
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{y_of(rank):.1f}" y2="{y_of(rank):.1f}" '
            f'stroke="#e4e7ed"/><line x1="{x_of(rank):.1f}" x2="{x_of(rank):.1f}" y1="{top}" '
            f'y2="{top + plot_h}" stroke="#e4e7ed"/>'
            f'<text x="{left - 6}" y="{y_of(rank) + 4:.1f}" text-anchor="end" fill="#5d6678">'
            f"{rank}</text>"
            f'<text x="{x_of(rank):.1f}" y="{top + plot_h + 16}" text-anchor="middle" '
            f'fill="#5d6678">{rank}</text>'
        )
    parts.append(
        f'<line x1="{x_of(1):.1f}" y1="{y_of(1):.1f}" x2="{x_of(n):.1f}" y2="{y_of(n):.1f}" '
        f'stroke="#9aa3b2" stroke-dasharray="4 4"/>'
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 8}" text-anchor="middle" '
        f'fill="#5d6678">{escape(x_label[:70])}</text>'
        f'<text transform="translate(14 {top + plot_h / 2:.1f}) rotate(-90)" '
        f'text-anchor="middle" fill="#5d6678">{escape(y_label[:60])}</text>'
    )
    for k, (label, a, b) in enumerate(points):
        color = PALETTE[k % len(PALETTE)]
        anchor = "end" if x_of(a) > left + plot_w * 0.7 else "start"
        dx = -9 if anchor == "end" else 9
        parts.append(
            f'<circle cx="{x_of(a):.1f}" cy="{y_of(b):.1f}" r="6" fill="{color}">'
            f"<title>{escape(label)}: {a:g}, {b:g}</title></circle>"
            f'<text x="{x_of(a) + dx:.1f}" y="{y_of(b) - 7:.1f}" text-anchor="{anchor}" '
            f'fill="#1c2230">{escape(label[:28])}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


# --- A leaderboard's rows as series (the families' ``plots``) -----------------------------------


def computed_rows(board: dict) -> tuple[list[dict], list[str]]:
    """The leaderboard rows with computed metrics, and their model names, in board order."""
    rows = [r for r in board["rows"] if r["computed"]]
    return rows, [str(r["run"].model.name) for r in rows]


def metric_value(row: dict, metric: str) -> float | None:
    result = row["results"].get(metric)
    return result.value if result else None


def run_series(board: dict, metrics: Sequence[str], *, intervals: bool = False) -> list[Series]:
    """One series per run with computed metrics, in board order: the values of ``metrics``, and
    their 95% intervals when asked."""
    rows, names = computed_rows(board)
    series = []
    for name, row in zip(names, rows, strict=True):
        results = [row["results"].get(m) for m in metrics]
        values = [r.value if r else None for r in results]
        if intervals:
            lows = [getattr(r, "interval_low", None) for r in results]
            highs = [getattr(r, "interval_high", None) for r in results]
            series.append(Series(name, values, lows, highs))
        else:
            series.append(Series(name, values))
    return series


def breakdown_series(board: dict, metric: str, dimension: str) -> tuple[list[str], list[Series]]:
    """The groups of one breakdown of ``metric`` (sorted) and one series per run that has it."""
    groups: list[str] = []
    for row in board["rows"]:
        result = row["results"].get(metric)
        for group in (result.breakdown or {}).get(dimension, {}) if result else {}:
            if group not in groups:
                groups.append(group)
    groups.sort()
    series = []
    for row in board["rows"]:
        result = row["results"].get(metric)
        cells = (result.breakdown or {}).get(dimension, {}) if result else {}
        if not cells:
            continue
        series.append(
            Series(
                str(row["run"].model.name),
                [cells.get(g, {}).get("value") for g in groups],
                [cells.get(g, {}).get("low") for g in groups],
                [cells.get(g, {}).get("high") for g in groups],
            )
        )
    return groups, series
