"""NaturalBench on the leaderboard: headline metrics with intervals, Q-Acc per skill, and the
note under its debiased metrics."""

from __future__ import annotations

from django.utils.translation import gettext as _

from evaluation import plots as svg
from evaluation.registry import FamilyTemplates

TEMPLATES = FamilyTemplates(
    item="evaluation/families/naturalbench/_item.html",
    metrics_note="evaluation/families/naturalbench/_metrics_note.html",
)


def plots(board: dict) -> list[dict]:
    series = svg.run_series(board, ["acc", "q_acc", "i_acc", "g_acc"], intervals=True)
    if not series:
        return []
    out = [
        {
            "svg": svg.bar_chart(
                ["Acc", "Q-Acc", "I-Acc", "G-Acc"],
                series,
                title=_("Headline metrics with 95% intervals"),
                y_max=1.0,
                reference=0.0625,
                reference_label=_("chance G-Acc 6.25"),
            ),
            "caption": _("Chance: 50 / 25 / 25 / 6.25."),
        }
    ]
    groups, series = svg.breakdown_series(board, "q_acc", "skill")
    if groups:
        out.append(
            {
                "svg": svg.bar_chart(
                    groups, series, title=_("Q-Acc per skill"), y_max=1.0, width=960
                ),
                "caption": _("Q-Acc over the questions carrying each skill tag."),
            }
        )
    return out
