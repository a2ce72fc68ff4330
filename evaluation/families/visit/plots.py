"""VisIT-Bench on the leaderboard (Elo under the length baseline, text metrics against the
reference) and on the judgments page (agreement with the crowd by stratum, Sec. 4.3)."""

from __future__ import annotations

from django.utils.translation import gettext as _

from evaluation import plots as svg
from evaluation.metrics import visit
from evaluation.registry import FamilyTemplates

TEMPLATES = FamilyTemplates(
    item="evaluation/families/visit/_item.html",
    version_note="evaluation/families/visit/_version_note.html",
    leaderboard_note="evaluation/families/visit/_leaderboard_note.html",
    judgments_intro="evaluation/families/visit/_judgments_intro.html",
    rankings_note="evaluation/families/visit/_rankings_note.html",
    benchmarks_example="evaluation/families/visit/_benchmarks_example.html",
)


def _length_elo(rows: list[dict], names: list[str]) -> dict | None:
    rated = [
        (names[k], r["results"]["elo_length_bootstrap"])
        for k, r in enumerate(rows)
        if r["results"].get("elo_length_bootstrap")
    ]
    if not rated:
        return None
    details = rated[0][1].details
    return {
        "svg": svg.whisker_chart(
            [n for n, _m in rated],
            [m.value for _n, m in rated],
            [m.interval_low for _n, m in rated],
            [m.interval_high for _n, m in rated],
            title=_("Elo under the length baseline: bootstrap median, 95% interval"),
            x_label=_("Elo (median of %(n)s bootstrap rounds)") % {"n": details.get("rounds")},
            reference=details.get("reference_bootstrap_elo"),
            reference_label=details.get("reference") or _("reference"),
        ),
        "caption": _(
            "Battles where the longer response wins: a baseline, not a quality "
            "judgment. The ranking is the online Elo (one pass in the sandbox's seed-1 "
            "shuffle); this chart shows the bootstrap median and interval beside it. Elo "
            "from judge or crowd battles is on the pairwise judgments page."
        ),
    }


def plots(board: dict) -> list[dict]:
    rows, names = svg.computed_rows(board)
    if not rows:
        return []
    out = []
    length = _length_elo(rows, names)
    if length:
        out.append(length)
    metrics = ["bleu4", "rouge_l", "meteor"]
    series = [
        svg.Series(names[k], [svg.metric_value(r, m) for m in metrics]) for k, r in enumerate(rows)
    ]
    chart = svg.bar_chart(
        ["BLEU-4", "ROUGE-L", "METEOR"],
        series,
        title=_("Reference-based text metrics vs the reference"),
    )
    out.append({"svg": chart, "caption": ""})
    return out


def agreement_plot(agreement: dict) -> str:
    """Agreement of each metric with the crowd majority, overall and by stratum."""
    rows = [m for m in agreement.get("metrics", []) if not m.get("unavailable")]
    if not rows:
        return ""
    groups = [_("all")] + list(visit.STRATA)
    series = [
        svg.Series(
            m["name"],
            [m["overall"]["value"]] + [m["strata"][s]["value"] for s in visit.STRATA],
            [m["overall"]["low"]] + [m["strata"][s]["low"] for s in visit.STRATA],
            [m["overall"]["high"]] + [m["strata"][s]["high"] for s in visit.STRATA],
        )
        for m in rows
    ]
    return svg.bar_chart(
        groups,
        series,
        title=_("Agreement with the crowd majority, by agreement stratum"),
        y_max=1.0,
        reference=0.5,
        reference_label=_("chance 50"),
    )
