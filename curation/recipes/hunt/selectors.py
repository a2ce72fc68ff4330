"""Reads of the hunt's pages: the round's funnel, its dashboard (fooling rate per target over
time, blind-solvable share, people's points and validation rates, the hardest items), and a
worker's own candidates."""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Count, Q, Sum
from django.db.models.functions import TruncDate, TruncHour

from curation.recipes.framework.selectors import count_by

from .models import HuntAnswer, HuntCandidate, HuntRound

PAIRED = (
    HuntCandidate.State.NOT_BLINDSPOT,
    HuntCandidate.State.VERIFYING,
    HuntCandidate.State.VALIDATED,
    HuntCandidate.State.REJECTED,
)
HARDEST = 10


def funnel(round_: HuntRound) -> dict:
    states = count_by(round_.candidates.all(), "state", HuntCandidate.State.values)
    return {
        "written": sum(states.values()),
        "states": states,
        "paired": sum(states[s] for s in PAIRED),
        "blindspots": states["verifying"] + states["validated"] + states["rejected"],
        "validated": states["validated"],
    }


def fooling_rates(round_: HuntRound) -> list[dict]:
    """Per target: first-step answers (the worker's question on the first image), how many
    were wrong, and the share."""
    first = HuntAnswer.objects.filter(candidate__round=round_, target__isnull=False).filter(
        Q(slot="q0_i0", candidate__answer="a0") | Q(slot="q0_i1", candidate__answer="a1")
    )
    rows = first.values("target__alias", "target__provider__name", "target__position").annotate(
        n=Count("pk"), wrong=Count("pk", filter=Q(correct=False))
    )
    out = []
    for row in sorted(rows, key=lambda r: r["target__position"]):
        out.append(
            {
                "alias": row["target__alias"],
                "provider": row["target__provider__name"],
                "n": row["n"],
                "wrong": row["wrong"],
                "rate": row["wrong"] / row["n"] if row["n"] else None,
            }
        )
    return out


def fooling_over_time(round_: HuntRound, *, hourly: bool = False) -> tuple[list[str], dict]:
    """(time buckets, {target alias: [rate or None per bucket]}) of first-step answers."""
    trunc = TruncHour if hourly else TruncDate
    first = HuntAnswer.objects.filter(candidate__round=round_, target__isnull=False).filter(
        Q(slot="q0_i0", candidate__answer="a0") | Q(slot="q0_i1", candidate__answer="a1")
    )
    rows = (
        first.annotate(bucket=trunc("created_at"))
        .values("bucket", "target__alias")
        .annotate(n=Count("pk"), wrong=Count("pk", filter=Q(correct=False)))
        .order_by("bucket")
    )
    buckets: list = []
    cells: dict = defaultdict(dict)
    for row in rows:
        if row["bucket"] not in buckets:
            buckets.append(row["bucket"])
        cells[row["target__alias"]][row["bucket"]] = row["wrong"] / row["n"]
    fmt = "%m-%d %H:00" if hourly else "%Y-%m-%d"
    labels = [b.strftime(fmt) for b in buckets]
    return labels, {alias: [by.get(b) for b in buckets] for alias, by in sorted(cells.items())}


def blind_shares(round_: HuntRound) -> dict:
    """How often the blind model answered the single first item right (what a hunt without a
    partner image would have kept), and the paired candidates it beat chance on."""
    first_blind = HuntAnswer.objects.filter(candidate__round=round_, target__isnull=True).filter(
        Q(slot="q0_i0", candidate__answer="a0") | Q(slot="q0_i1", candidate__answer="a1")
    )
    counts = first_blind.aggregate(n=Count("pk"), right=Count("pk", filter=Q(correct=True)))
    paired = round_.candidates.filter(state__in=PAIRED)
    solvable = paired.filter(verdict__blind_solvable=True).count()
    total = paired.count()
    return {
        "first_n": counts["n"],
        "first_right": counts["right"],
        "first_share": counts["right"] / counts["n"] if counts["n"] else None,
        "paired": total,
        "pair_solvable": solvable,
        "pair_share": solvable / total if total else None,
    }


def people(round_: HuntRound) -> list[dict]:
    """Per worker: questions written, blindspots sent to verification, validated, points."""
    rows = (
        round_.candidates.values("worker__username")
        .annotate(
            written=Count("pk"),
            verified=Count(
                "pk",
                filter=Q(state__in=[HuntCandidate.State.VALIDATED, HuntCandidate.State.REJECTED]),
            ),
            validated=Count("pk", filter=Q(state=HuntCandidate.State.VALIDATED)),
            points=Sum("points"),
        )
        .order_by("-points", "worker__username")
    )
    return [
        {**row, "rate": row["validated"] / row["verified"] if row["verified"] else None}
        for row in rows
    ]


def hardest(round_: HuntRound, *, limit: int = HARDEST) -> list[HuntCandidate]:
    """Validated items that fooled the most targets on the most slots."""
    wrong = Count("answers", filter=Q(answers__target__isnull=False, answers__correct=False))
    return list(
        round_.candidates.filter(state=HuntCandidate.State.VALIDATED)
        .annotate(wrong=wrong)
        .select_related("worker", "image", "partner")
        .order_by("-wrong", "-pk")[:limit]
    )


def points_of(worker, round_: HuntRound) -> int:
    return round_.candidates.filter(worker=worker).aggregate(p=Sum("points"))["p"] or 0
