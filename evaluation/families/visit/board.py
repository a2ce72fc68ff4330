"""Reads of VisIT-Bench's living leaderboard (visit-bench.txt Sec. 1, 4.2–4.3, Fig. 8): a version's
judgment sets as players in the Table 3 / Table 4 layout, Table 2's rows, each set's win-rate vs
the reference per instruction category with its bar chart, and each rater's position bias in a
forced-choice queue. The curation recipe adds its submissions and pages."""

from __future__ import annotations

from django.utils.translation import gettext as _

from annotator.models import Annotation
from evaluation import plots
from evaluation.models import BenchmarkItem, JudgmentSet

from . import metric_rows, pairwise, stats


def judgment_set(version_id: int | None, *, pk: int | None = None, label: str = ""):
    """The version's judgment set with this pk, else with this label (None without either)."""
    if not version_id:
        return None
    qs = JudgmentSet.objects.filter(version_id=version_id)
    if pk:
        return qs.filter(pk=pk).first()
    return qs.filter(label=label).first() if label else None


def ratings_table(judgment_set) -> list[dict]:
    """Players of a rated judgment set in the Table 3 / Table 4 layout: Elo with its bootstrap
    interval, matches, win-rate vs the reference."""
    if judgment_set is None:
        return []
    return list((judgment_set.results or {}).get("players") or [])


def board(version_id: int | None, *, judge_label: str, human_set_id: int | None) -> dict:
    """The LLM judge's set (by label) and the crowd-vote set (by pk) of a version, with their
    players; ``running``: the judge's job has not finished."""
    judge_set = judgment_set(version_id, label=judge_label)
    human_set = judgment_set(version_id, pk=human_set_id)
    return {
        "reference_label": reference_label(version_id),
        "judge_set": judge_set,
        "players": ratings_table(judge_set),
        "human_set": human_set,
        "human_players": ratings_table(human_set),
        "running": bool(judge_set and judge_set.job_id and not judge_set.job.is_finished),
    }


def reference_label(version_id: int | None) -> str:
    """How the version's reference player is named, from where its kept references came from
    (``metric_rows.reference_label``): a drafted or offline reference is not "GPT-4 reference"."""
    sources = BenchmarkItem.objects.filter(version_id=version_id, kept=True).values_list(
        "data__reference_source", flat=True
    )
    return metric_rows.reference_label_of(str(s or "") for s in sources.distinct())


def item_verdict(data: dict) -> str:
    """An item's Table 2 verdict from its published flags (human_ratings_*, Sec. 2.2)."""
    if data.get("gpt4_correct"):
        return stats.CORRECT
    if data.get("problem_in_caption"):
        return stats.CAPTION
    if data.get("problem_in_gpt4"):
        return stats.RESPONSE
    return stats.INCORRECT


def version_context(version) -> dict:
    """The version page's Table 2 (Sec. 2.2) from its items' rating flags — a version imported
    from the published CSV as well as one a pipeline published — and its reference's origin."""
    rows = version.items.values_list(
        "data__gpt4_correct",
        "data__problem_in_caption",
        "data__problem_in_gpt4",
        "data__multi_image",
        "data__reference_source",
    )
    # Human-written references (the fully annotated layout) were never rated: not in Table 2.
    table = stats.verification_table(
        (
            bool(multi),
            item_verdict({"gpt4_correct": c, "problem_in_caption": cap, "problem_in_gpt4": resp}),
        )
        for c, cap, resp, multi, source in rows
        if source != "human"
    )
    return {
        "table2": table,
        "table2_rows": verification_rows(table),
        "reference_label": reference_label(version.pk),
    }


def verification_rows(table: dict) -> list[dict]:
    """Table 2's three rows (``stats.verification_table``), in percent; None where a column has no
    rated reference."""
    rows = []
    for key, label in (
        ("correct_share", _("Reference correct (%)")),
        ("caption_share", _("Problem in caption (%)")),
        ("response_share", _("Problem in the reference response (%)")),
    ):
        values = [table[c][key] for c in stats.COLUMNS]
        rows.append({"label": label, "values": [None if v is None else 100 * v for v in values]})
    return rows


def _fig8_panel(judgment_set, title: str) -> dict | None:
    """One set's per-category win-rate vs the reference: the table and its SVG bar chart."""
    if judgment_set is None:
        return None
    rows = judgment_set.judgments.order_by("position").values_list(
        "item__data__category",
        "item__data__image",
        "item__data__instruction",
        "model_a",
        "model_b",
        "winner",
        "votes_a",
        "votes_b",
    )
    pairs = (
        (
            category if isinstance(category, str) else "",
            pairwise.PairData(
                item_id="",
                image=image or "",
                instruction=instruction or "",
                model_a=a,
                model_b=b,
                winner=winner,
                votes_a=votes_a,
                votes_b=votes_b,
            ),
        )
        for category, image, instruction, a, b, winner, votes_a, votes_b in rows
    )
    table = stats.category_win_rates(
        pairs, kind=judgment_set.kind, reference=judgment_set.reference_player
    )
    if not table["rows"]:
        return {"title": title, "set": judgment_set, "table": table, "svg": ""}
    categories = table["categories"]
    svg = plots.bar_chart(
        categories,
        [
            plots.Series(name=r["model"], values=[c["rate"] for c in r["cells"]])
            for r in table["rows"]
        ],
        title=title,
        y_label=_("win rate vs reference (%)"),
        y_max=1.0,
        reference=0.5,
        reference_label=_("50%: on par with the reference"),
        # Room for every bar: Fig. 8 has up to ~60 categories × several models.
        width=min(2400, max(760, 60 + len(categories) * (14 * len(table["rows"]) + 12))),
    )
    return {"title": title, "set": judgment_set, "table": table, "svg": svg}


def category_win_rates(board: dict) -> list[dict]:
    """Fig. 8 for the leaderboard's LLM-judge set and the crowd-vote set (when they exist): win
    rate vs the reference per instruction category (the item's category), one query per set."""
    panels = [
        _fig8_panel(board.get("judge_set"), _("Win rate vs reference by category · LLM judge")),
        _fig8_panel(board.get("human_set"), _("Win rate vs reference by category · crowd votes")),
    ]
    return [p for p in panels if p is not None]


def position_bias(queue_id: int | None) -> list[dict]:
    """Each rater's share of "left" choices in a forced-choice queue (Sec. 4.2)."""
    if not queue_id:
        return []
    rows = Annotation.objects.filter(queue_id=queue_id, is_gold=False).values_list(
        "annotator__username", "response__choice"
    )
    return stats.position_bias(rows)
