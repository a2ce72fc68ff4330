"""NaturalBench-Retrieval on the leaderboard: the three Winoground scores."""

from __future__ import annotations

from django.utils.translation import gettext as _

from evaluation import plots as svg
from evaluation.registry import FamilyTemplates

TEMPLATES = FamilyTemplates(item="evaluation/families/retrieval/_item.html")


def plots(board: dict) -> list[dict]:
    series = svg.run_series(board, ["text", "image", "group"])
    if not series:
        return []
    chart = svg.bar_chart(
        [_("Text"), _("Image"), _("Group")], series, title=_("Winoground scores"), y_max=1.0
    )
    return [{"svg": chart, "caption": _("Chance: 25 / 25 / 16.67.")}]
