"""Pipeline statistics with no Django import: Table 2's verification shares (visit-bench.txt
Sec. 2.2) and each annotator's position bias in the forced-choice ratings (Sec. 4.2)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

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
    """Share of "left" among each annotator's forced choices, from (annotator, "left"/"right").
    Sides are randomised per assignment, so an unbiased annotator sits near 0.5."""
    per: dict[str, Counter] = defaultdict(Counter)
    for annotator, choice in choices:
        if choice in ("left", "right"):
            per[annotator][choice] += 1
    rows = []
    for annotator in sorted(per):
        c = per[annotator]
        n = c["left"] + c["right"]
        rows.append({"annotator": annotator, "n": n, "left": c["left"], "share": c["left"] / n})
    return rows
