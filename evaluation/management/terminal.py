"""What ``manage.py evaluate`` prints: leaderboards and judgment sets as plain-text lines."""

from __future__ import annotations

from collections.abc import Callable

from evaluation import selectors
from evaluation.models import BenchmarkVersion


def format_result(result, spec) -> str:
    if result is None:
        return "—"
    if result.value is None:
        return "n/a"
    kind = spec.kind if spec else "share"

    def number(x: float) -> str:
        if kind == "share":
            return f"{x * 100:.1f}"
        if kind == "count":
            return f"{x:.0f}"
        if kind == "tokens":
            return f"{x:.1f}"
        return f"{x:.0f}" if abs(x) >= 100 else f"{x:.3f}"

    text = number(result.value)
    if result.interval_low is not None and result.interval_high is not None:
        text += f" [{number(result.interval_low)}, {number(result.interval_high)}]"
    return text


def print_board(write: Callable[[str], object], version: BenchmarkVersion, sort: str) -> None:
    """The version's leaderboard as an aligned table."""
    board = selectors.leaderboard(version, sort=sort)
    headers = ["#", "model"] + [s.label for s in board["columns"]]
    rows = [
        [
            str(r["rank"] or "—"),
            r["run"].model.name + (f" ({r['run'].label})" if r["run"].label else ""),
        ]
        + [format_result(cell, spec) for spec, cell in r["cells"]]
        for r in board["rows"]
    ]
    widths = [
        max(len(h), *(len(r[k]) for r in rows)) if rows else len(h) for k, h in enumerate(headers)
    ]
    write(
        f"{version.benchmark.name} · {version.label} — {version.kept_count} items, "
        f"sorted by {board['sort']} (95% bootstrap intervals)"
    )
    write("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    write("  ".join("-" * w for w in widths))
    for row in rows:
        write("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))


def print_judgments(write: Callable[[str], object], version: BenchmarkVersion) -> None:
    """Every judgment set of the version: ratings per player and agreement with the crowd."""
    sets = list(selectors.judgment_sets(version))
    if not sets:
        write("No judgments on this version: use import-judgments.")
    for judgment_set in sets:
        results = judgment_set.results or {}
        write(
            f"\n{judgment_set.label} [{judgment_set.kind}] — {judgment_set.pair_count} pairs, "
            f"{results.get('battles', 0)} battles (bootstrap {results.get('rounds', 0)} rounds,"
            f" seed {results.get('bootstrap_seed', judgment_set.bootstrap_seed)} from the battles;"
            f" online seed {judgment_set.seed}; ranked by online Elo)"
        )
        for k, p in enumerate(results.get("players", []), start=1):
            win = (p.get("win_rate") or {}).get("text", "—")
            write(
                f"{k:3}  {p['model'][:32]:32}  online Elo {p['online'] or 0:6.0f}  "
                f"bootstrap {p['elo']:5d} [{p['low']:.0f}, {p['high']:.0f}]  "
                f"matches {p['matches']:5d}  vs reference {win}"
            )
        agreement = results.get("agreement")
        if agreement:
            write(
                f"  agreement with the crowd majority on {agreement['pairs']} pairs "
                "(all / 5/5 / 4/5 / 3/5):"
            )
            for m in agreement["metrics"]:
                if m.get("unavailable"):
                    write(f"    {m['name'][:30]:30}  n/a ({m['unavailable']})")
                    continue
                cells = [m["overall"]] + [m["strata"][s] for s in ("5/5", "4/5", "3/5")]
                text = "  ".join(
                    "  n/a" if c["value"] is None else f"{100 * c['value']:5.1f}" for c in cells
                )
                write(f"    {m['name'][:30]:30}  {text}")
