"""Reads for the VisIT-Bench pages and API, scoped by the framework's ``objects_for``: curators
(and admins) manage the pipelines of their projects; researchers of a project see its leaderboard
and submit to it. Anything else answers like a missing object (404)."""

from __future__ import annotations

from django.db.models import Count, Prefetch, Q

from curation.recipes.framework.registry import recipe_for
from curation.recipes.framework.selectors import count_by, in_state, object_or_404
from evaluation.families.visit import board, stats

from .models import (
    VisitCategory,
    VisitImage,
    VisitInstance,
    VisitPair,
    VisitPipeline,
    VisitReference,
    VisitSubmission,
)
from .publish import current_version
from .submissions import leaderboard_label

# Instances written (seed examples left out) and verified, of a pipeline or a category (the
# list page's and the categories table's counts).
INSTANCE_COUNTS = {
    "n_instances": Count("instances", filter=~Q(instances__origin="seed"), distinct=True),
    "n_verified": Count("instances", filter=Q(instances__state="verified"), distinct=True),
}


def pipeline_or_404(user, pk: int) -> VisitPipeline:
    """A pipeline of the user's projects, for its curators and its researchers (the API)."""
    return object_or_404(recipe_for(VisitPipeline), user, pk, readers=True)


def funnel(pipeline: VisitPipeline) -> dict:
    """Counts of the funnel: families → instances written → captioned → reference drafted →
    verified → rated tuples → leaderboard submissions. A handful of aggregate queries."""
    written = pipeline.instances.exclude(origin=VisitInstance.Origin.SEED)
    states = count_by(written, "state", VisitInstance.State.values)
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
        "families": pipeline.categories.count(),
        "instances": instances,
        "origins": count_by(written, "origin", VisitInstance.Origin.values),
        "states": states,
        "captioned": captioned,
        "drafted": drafted,
        "failed_drafts": failed_drafts,
        "verified": states[VisitInstance.State.VERIFIED],
        "discarded": states[VisitInstance.State.DISCARDED],
        "pairs_sampled": pair_counts["sampled"],
        "pairs_rated": pair_counts["rated"],
        "submissions": pipeline.submissions.count(),
        "ranked": len(
            board.ratings_table(
                board.judgment_set(pipeline.version_id, label=leaderboard_label(pipeline))
            )
        ),
        "images": images,
        "max_bar": max(instances, 1),
    }


def verification_table(pipeline: VisitPipeline) -> dict:
    """Table 2 over every decided reference of the pipeline (imported ratings included; the
    human-written references of the fully annotated layout were never rated)."""
    rows = (
        VisitReference.objects.filter(instance__pipeline=pipeline)
        .exclude(source__in=(VisitReference.Source.SEED, VisitReference.Source.HUMAN))
        .exclude(verdict=VisitReference.Verdict.PENDING)
        .annotate(n_images=Count("instance__images"))
        .values_list("instance__category__multi_image", "n_images", "verdict")
    )
    return stats.verification_table((multi or n > 1, verdict) for multi, n, verdict in rows)


def categories(pipeline: VisitPipeline) -> list[VisitCategory]:
    return list(
        pipeline.categories.annotate(
            **INSTANCE_COUNTS, n_seed=Count("instances", filter=Q(instances__origin="seed"))
        ).order_by("name", "id")
    )


def instances_page(pipeline: VisitPipeline, state: str = "", category: int | None = None):
    qs = (
        pipeline.instances.select_related("category")
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
    qs = in_state(qs, "state", state)
    if category:
        qs = qs.filter(category_id=category)
    return qs


def instance_counts(pipeline: VisitPipeline) -> tuple[dict, int]:
    """Instances by state and in all, seed examples left out (the instances page's chips)."""
    states = count_by(pipeline.instances.exclude(origin=VisitInstance.Origin.SEED), "state")
    return states, sum(states.values())


def sample_instances(pipeline: VisitPipeline, limit: int = 4) -> list[VisitInstance]:
    """A few instances to show on the pipeline page: crowd-written first, then the rest."""
    base = instances_page(pipeline).exclude(origin=VisitInstance.Origin.SEED)
    picked = list(base.filter(origin=VisitInstance.Origin.CROWD)[:limit])
    if len(picked) < limit:
        picked += list(base.exclude(origin=VisitInstance.Origin.CROWD)[: limit - len(picked)])
    return picked


def leaderboard(pipeline: VisitPipeline) -> dict:
    """The living leaderboard: the LLM judge's set of the current version and the crowd-vote set
    (``board.board``), and the submissions."""
    sets = board.board(
        pipeline.version_id,
        judge_label=leaderboard_label(pipeline),
        human_set_id=pipeline.human_set_id,
    )
    submissions = list(
        VisitSubmission.objects.filter(pipeline=pipeline)
        .select_related("judge_job", "created_by")
        .order_by("-created_at", "-id")[:20]
    )
    return {
        **sets,
        "version": current_version(pipeline),
        "submissions": submissions,
        "running": any(s.judge_job and not s.judge_job.is_finished for s in submissions)
        or sets["running"],
    }
