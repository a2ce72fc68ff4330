"""Reads for the VisIT-Bench pages and API, scoped like ``annotator.selectors``: curators (and
admins) manage the pipelines of their projects; researchers of a project see its leaderboard and
submit to it. Anything else answers like a missing object (404)."""

from __future__ import annotations

from collections import Counter

from django.db.models import Count, Prefetch, Q, QuerySet
from django.http import Http404
from django.utils.translation import gettext as _

from annotator.models import Annotation
from annotator.platform import roles
from annotator.platform.scoping import projects_for
from evaluation import plots
from evaluation.families.visit import pairwise
from evaluation.models import JudgmentSet

from . import stats
from .models import (
    VisitFamily,
    VisitImage,
    VisitInstance,
    VisitPair,
    VisitPipeline,
    VisitReference,
    VisitSubmission,
)
from .publish import current_version
from .submissions import leaderboard_label


def pipelines_for(user, *, manage: bool = True) -> QuerySet[VisitPipeline]:
    wanted = [roles.CURATOR] if manage else [roles.CURATOR, roles.RESEARCHER]
    if not roles.has_role(user, wanted):
        return VisitPipeline.objects.none()
    return VisitPipeline.objects.select_related("project", "provider").filter(
        project__in=projects_for(user)
    )


def pipeline_or_404(user, pk: int, *, manage: bool = True) -> VisitPipeline:
    pipeline = pipelines_for(user, manage=manage).filter(pk=pk).first()
    if pipeline is None:
        raise Http404
    return pipeline


def family_or_404(pipeline: VisitPipeline, pk: int) -> VisitFamily:
    family = VisitFamily.objects.filter(pipeline=pipeline, pk=pk).first()
    if family is None:
        raise Http404
    return family


def pipelines_with_counts(user) -> QuerySet[VisitPipeline]:
    return pipelines_for(user).annotate(
        n_families=Count("families", distinct=True),
        n_instances=Count("instances", filter=~Q(instances__origin="seed"), distinct=True),
        n_verified=Count("instances", filter=Q(instances__state="verified"), distinct=True),
    )


def funnel(pipeline: VisitPipeline) -> dict:
    """Counts of the funnel: families → instances written → captioned → reference drafted →
    verified → rated tuples → leaderboard submissions. A handful of aggregate queries."""
    states = Counter(
        dict(
            pipeline.instances.exclude(origin=VisitInstance.Origin.SEED)
            .values_list("state")
            .annotate(n=Count("id"))
            .order_by()
        )
    )
    origins = Counter(
        dict(
            pipeline.instances.exclude(origin=VisitInstance.Origin.SEED)
            .values_list("origin")
            .annotate(n=Count("id"))
            .order_by()
        )
    )
    instances = sum(states.values())
    captioned = instances - states[VisitInstance.State.CAPTIONING]
    drafted = (
        states[VisitInstance.State.VERIFYING]
        + states[VisitInstance.State.VERIFIED]
        + states[VisitInstance.State.DISCARDED]
    )
    failed_drafts = (
        pipeline.instances.filter(state=VisitInstance.State.DRAFTING)
        .exclude(draft_error="")
        .count()
    )
    pairs = VisitPair.objects.filter(pipeline=pipeline)
    if pipeline.version_id:
        pairs = pairs.filter(version_id=pipeline.version_id)
    pair_counts = pairs.aggregate(
        sampled=Count("id"), rated=Count("id", filter=Q(decided_at__isnull=False))
    )
    images = VisitImage.objects.filter(instance__pipeline=pipeline).aggregate(
        total=Count("id"),
        stored=Count("id", filter=Q(image__isnull=False)),
        failed=Count("id", filter=Q(image__isnull=True) & ~Q(fetch_error="")),
    )
    return {
        "families": pipeline.families.count(),
        "instances": instances,
        "origins": {o: origins[o] for o in VisitInstance.Origin.values},
        "states": {s: states[s] for s in VisitInstance.State.values},
        "captioned": captioned,
        "drafted": drafted,
        "failed_drafts": failed_drafts,
        "verified": states[VisitInstance.State.VERIFIED],
        "discarded": states[VisitInstance.State.DISCARDED],
        "pairs_sampled": pair_counts["sampled"],
        "pairs_rated": pair_counts["rated"],
        "submissions": pipeline.submissions.count(),
        "ranked": len(
            ratings_table(judgment_set(pipeline.version_id, label=leaderboard_label(pipeline)))
        ),
        "images": images,
        "max_bar": max(instances, 1),
    }


def verification_table(pipeline: VisitPipeline) -> dict:
    """Table 2 over every decided reference of the pipeline (imported ratings included)."""
    rows = (
        VisitReference.objects.filter(instance__pipeline=pipeline)
        .exclude(source=VisitReference.Source.SEED)
        .exclude(verdict=VisitReference.Verdict.PENDING)
        .annotate(n_images=Count("instance__images"))
        .values_list("instance__family__multi_image", "n_images", "verdict")
    )
    return stats.verification_table((multi or n > 1, verdict) for multi, n, verdict in rows)


def families(pipeline: VisitPipeline) -> list[VisitFamily]:
    return list(
        pipeline.families.annotate(
            n_instances=Count("instances", filter=~Q(instances__origin="seed")),
            n_verified=Count("instances", filter=Q(instances__state="verified")),
            n_seed=Count("instances", filter=Q(instances__origin="seed")),
        ).order_by("name", "id")
    )


def instances_page(pipeline: VisitPipeline, *, state: str = "", family: int | None = None):
    qs = (
        pipeline.instances.select_related("family")
        .prefetch_related(
            Prefetch("images", queryset=VisitImage.objects.select_related("image")),
            Prefetch(
                "references",
                queryset=VisitReference.objects.order_by("round"),
                to_attr="reference_list",
            ),
        )
        .order_by("position", "id")
    )
    if state in VisitInstance.State.values:
        qs = qs.filter(state=state)
    if family:
        qs = qs.filter(family_id=family)
    return qs


def sample_instances(pipeline: VisitPipeline, limit: int = 4) -> list[VisitInstance]:
    """A few instances to show on the pipeline page: crowd-written first, then the rest."""
    base = instances_page(pipeline).exclude(origin=VisitInstance.Origin.SEED)
    picked = list(base.filter(origin=VisitInstance.Origin.CROWD)[:limit])
    if len(picked) < limit:
        picked += list(base.exclude(origin=VisitInstance.Origin.CROWD)[: limit - len(picked)])
    return picked


def position_bias(pipeline: VisitPipeline) -> list[dict]:
    """Each rater's share of "left" choices in the forced-choice queue (Sec. 4.2)."""
    if not pipeline.rating_queue_id:
        return []
    rows = Annotation.objects.filter(queue_id=pipeline.rating_queue_id, is_gold=False).values_list(
        "annotator__username", "response__choice"
    )
    return stats.position_bias(rows)


def judgment_set(version_id: int | None, *, pk: int | None = None, label: str = ""):
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


def leaderboard(pipeline: VisitPipeline) -> dict:
    """The living leaderboard: the LLM judge's set of the current version, and the submissions."""
    version = current_version(pipeline)
    judge_set = judgment_set(pipeline.version_id, label=leaderboard_label(pipeline))
    human_set = judgment_set(pipeline.version_id, pk=pipeline.human_set_id)
    submissions = list(
        VisitSubmission.objects.filter(pipeline=pipeline)
        .select_related("judge_job", "created_by")
        .order_by("-created_at", "-id")[:20]
    )
    return {
        "version": version,
        "judge_set": judge_set,
        "players": ratings_table(judge_set),
        "human_set": human_set,
        "human_players": ratings_table(human_set),
        "submissions": submissions,
        "running": any(s.judge_job and not s.judge_job.is_finished for s in submissions)
        or bool(judge_set and judge_set.job_id and not judge_set.job.is_finished),
    }


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
    rate vs the reference per instruction category (the item's family), one query per set."""
    panels = [
        _fig8_panel(board.get("judge_set"), _("Win rate vs reference by category · LLM judge")),
        _fig8_panel(board.get("human_set"), _("Win rate vs reference by category · crowd votes")),
    ]
    return [p for p in panels if p is not None]
