"""VHExpansion on the leaderboard: accuracy against symmetric accuracy (Theorems 1-2) and
symmetric accuracy per perturbation."""

from __future__ import annotations

from django.utils.translation import gettext as _

from evaluation import plots as svg
from evaluation.registry import FamilyTemplates

TEMPLATES = FamilyTemplates(
    item="evaluation/families/vhexpansion/_item.html",
    leaderboard_note="evaluation/families/vhexpansion/_leaderboard_note.html",
)


def plots(board: dict) -> list[dict]:
    rows, names = svg.computed_rows(board)
    if not rows:
        return []
    points = [
        (names[k], svg.metric_value(r, "accuracy"), svg.metric_value(r, "symmetric_accuracy"))
        for k, r in enumerate(rows)
        if svg.metric_value(r, "accuracy") is not None
    ]
    out = [
        {
            "svg": svg.scatter_chart(
                points,
                title=_("Accuracy vs symmetric accuracy"),
                x_label=_("Accuracy"),
                y_label=_("Symmetric accuracy"),
                markers=[(_("random p=0.5"), 0.5, 0.25)],
            ),
            "caption": _(
                "A random guesser answering yes with probability p has symmetric accuracy "
                "p(1−p) ≤ 25 whatever the labels (Theorem 2); accuracy can be gamed by the "
                "label balance (Theorem 1)."
            ),
        }
    ]
    groups, series = svg.breakdown_series(board, "symmetric_accuracy", "perturbation")
    if groups:
        title = _("Symmetric accuracy per perturbation")
        out.append({"svg": svg.bar_chart(groups, series, title=title, y_max=1.0), "caption": ""})
    return out
