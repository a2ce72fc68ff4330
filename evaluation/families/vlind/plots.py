"""VLind-Bench on the leaderboard: the CK → VP → CB → LP pipeline and S_LP per concept."""

from __future__ import annotations

from django.utils.translation import gettext as _

from evaluation import plots as svg
from evaluation.registry import FamilyTemplates

TEMPLATES = FamilyTemplates(item="evaluation/families/vlind/_item.html")


def plots(board: dict) -> list[dict]:
    series = svg.run_series(board, ["s_ck", "s_vp", "s_cb", "s_lp"])
    if not series:
        return []
    out = [
        {
            "svg": svg.funnel_chart(
                ["CK", "VP", "CB", "LP"], series, title=_("Pipeline CK → VP → CB → LP")
            ),
            "caption": _(
                "S_CB is computed over instances passing CK, S_LP over those passing CK, VP "
                "and CB; an empty denominator shows no point (n/a)."
            ),
        }
    ]
    groups, series = svg.breakdown_series(board, "s_lp", "concept")
    if groups:
        chart = svg.bar_chart(groups, series, title=_("S_LP per concept"), y_max=1.0)
        out.append({"svg": chart, "caption": ""})
    return out
