"""VisIT-Bench statistics with no Django import: Table 2's verification shares (visit-bench.txt
Sec. 2.2), each annotator's position bias in the forced-choice ratings (Sec. 4.2) and the
per-category win-rate against the reference (Fig. 8)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

from scipy.stats import binomtest

from evaluation.metrics import visit

from . import pairwise

# A rater is flagged when a two-sided exact binomial test rejects "left half the time" at 5%.
BIAS_ALPHA = 0.05

CORRECT = "correct"
CAPTION = "caption"
RESPONSE = "response"
INCORRECT = "incorrect"
VERDICTS = (CORRECT, CAPTION, RESPONSE, INCORRECT)
COLUMNS = ("overall", "single", "multi")


def _share(k: int, n: int) -> float | None:
    return k / n if n else None


def verification_table(rows: Iterable[tuple[bool, str]]) -> dict:
    """Table 2 from (multi-image?, verdict) per verified reference: the share rated correct, with
    a problem in the caption and with a problem in the response, overall, single and multi.
    "incorrect" (rated wrong without a reason) counts in the denominator only, as in the
    published file where 6 of 578 rows set no flag."""
    counts: dict[str, Counter] = {c: Counter() for c in COLUMNS}
    for multi, verdict in rows:
        if verdict not in VERDICTS:
            continue
        for column in ("overall", "multi" if multi else "single"):
            counts[column][verdict] += 1
    out = {}
    for column in COLUMNS:
        c = counts[column]
        n = sum(c.values())
        out[column] = {
            "n": n,
            **{v: c[v] for v in VERDICTS},
            "correct_share": _share(c[CORRECT], n),
            "caption_share": _share(c[CAPTION], n),
            "response_share": _share(c[RESPONSE], n),
        }
    return out


def position_bias(choices: Iterable[tuple[str, str]]) -> list[dict]:
    """Share of "left" among each annotator's forced choices, from (annotator, "left"/"right")
    as displayed. Sides are randomised per assignment, so an unbiased annotator sits near 0.5;
    ``p_value`` is the two-sided exact binomial test of share = 0.5 and ``biased`` flags
    p < BIAS_ALPHA."""
    per: dict[str, Counter] = defaultdict(Counter)
    for annotator, choice in choices:
        if choice in ("left", "right"):
            per[annotator][choice] += 1
    rows = []
    for annotator in sorted(per):
        c = per[annotator]
        n = c["left"] + c["right"]
        p_value = float(binomtest(c["left"], n, 0.5).pvalue)
        rows.append(
            {
                "annotator": annotator,
                "n": n,
                "left": c["left"],
                "share": c["left"] / n,
                "p_value": p_value,
                "biased": p_value < BIAS_ALPHA,
            }
        )
    return rows


def category_win_rates(
    pairs: Iterable[tuple[str, pairwise.PairData]], *, kind: str, reference: str
) -> dict:
    """Fig. 8: each model's win-rate vs the reference per instruction category, from
    (category, judged pair). Battles and the rate are those of the overall table
    (``pairwise.battles_of`` then ``visit.win_rate_vs_reference``: ties left out, a judge's
    repeats dropped, every crowd vote a battle), restricted to one category at a time."""
    by_category: dict[str, list[pairwise.PairData]] = defaultdict(list)
    for category, pair in pairs:
        by_category[category or "—"].append(pair)
    categories = sorted(by_category)
    models = sorted(
        {m for ps in by_category.values() for p in ps for m in (p.model_a, p.model_b)} - {reference}
    )
    rows = []
    for model in models:
        cells = []
        for category in categories:
            battles = pairwise.battles_of(by_category[category], kind)
            win = visit.win_rate_vs_reference(
                battles, model, reference, with_interval=False, deduplicate=kind != pairwise.HUMAN
            )
            cells.append({"wins": win.wins, "n": win.n, "rate": win.rate})
        if any(cell["n"] for cell in cells):
            rows.append({"model": model, "cells": cells})
    if not rows:
        categories = []
    # The page's table: one line per category, one column per model.
    lines = [
        {"category": category, "cells": [r["cells"][k] for r in rows]}
        for k, category in enumerate(categories)
    ]
    return {"categories": categories, "rows": rows, "lines": lines, "reference": reference}
