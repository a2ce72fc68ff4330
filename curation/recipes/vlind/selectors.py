"""Reads for the VLind-Bench pages, scoped like ``annotator.selectors``: curators (and admins)
see the benches of their projects; anything else answers like a missing object (404)."""

from __future__ import annotations

from collections import Counter, defaultdict

from django.db.models import Count
from django.shortcuts import get_object_or_404

from curation.recipes.framework.publish import published_versions
from curation.recipes.framework.registry import recipe_for
from curation.recipes.framework.selectors import count_by

from .images import best_of, with_images
from .models import VLindBench, VLindImage, VLindTriple

# Where a triple stands, in funnel order.
STAGES = (
    ("review", "Triple in review"),
    ("rejected", "Triple rejected"),
    ("needs_images", "Needs images"),
    ("images_review", "Images in review"),
    ("no_good_image", "No good image (left out)"),
    ("needs_factual", "Needs factual image / nouns"),
    ("assembled", "Assembled"),
)
STAGE_LABELS = dict(STAGES)


def triple_or_404(bench: VLindBench, pk: int) -> VLindTriple:
    triple = get_object_or_404(with_images(bench.triples).select_related("noun_generation"), pk=pk)
    triple.bench = bench
    return triple


def _stage(status: str, images: Counter, factual_id, noun: str, absent: str) -> str:
    """Where a triple of ``status`` stands, given its images' statuses (counted)."""
    if status != VLindTriple.Status.KEPT:
        return status
    if not images:
        return "needs_images"
    if not images[VLindImage.Status.GOOD]:
        return "images_review" if images[VLindImage.Status.REVIEW] else "no_good_image"
    if factual_id is None or not (noun and absent):
        return "needs_factual"
    return "assembled"


def stage_of(triple: VLindTriple, images: list[VLindImage]) -> str:
    statuses = Counter(i.status for i in images)
    t = triple
    return _stage(t.status, statuses, t.factual_image_id, t.existent_noun, t.non_existent_noun)


def stage_counts(bench: VLindBench) -> tuple[Counter, dict]:
    """Stages of every triple from two grouped queries (no per-triple query)."""
    by_triple: dict[int, Counter] = defaultdict(Counter)
    for triple_id, status, n in (
        VLindImage.objects.filter(triple__bench=bench)
        .values_list("triple_id", "status")
        .annotate(n=Count("id"))
        .order_by()
    ):
        by_triple[triple_id][status] = n
    stages: Counter = Counter()
    per_concept: dict[str, Counter] = defaultdict(Counter)
    rows = bench.triples.values_list(
        "pk",
        "status",
        "factual_image_id",
        "existent_noun",
        "non_existent_noun",
        "concept__name",
        "noun_candidates",
    )
    for pk, status, factual, noun, absent, concept, candidates in rows:
        stage = _stage(status, by_triple.get(pk, Counter()), factual, noun, absent)
        stages[stage] += 1
        per_concept[concept][stage] += 1
        per_concept[concept]["drafted"] += 1
        if status == VLindTriple.Status.KEPT:
            per_concept[concept]["kept"] += 1
            stages["nouns_proposed"] += int(bool((candidates or {}).get("nouns")))
    return stages, per_concept


def funnel(bench: VLindBench) -> dict:
    """Counts of the funnel: concepts → triples drafted → kept → images → good images →
    factual + VP nouns → assembled → exported. A handful of aggregate queries."""
    stages, per_concept = stage_counts(bench)
    triples = sum(stages[s] for s, _ in STAGES)
    kept = triples - stages["review"] - stages["rejected"]
    of_bench = VLindImage.objects.filter(triple__bench=bench)
    images, origins = count_by(of_bench, "status"), count_by(of_bench, "origin")
    latest = published_versions(recipe_for(bench), bench).first()
    decided = triples - stages["review"]
    concepts = bench.concepts.all()
    return {
        "concepts": sum(1 for c in concepts if c.active),
        "concepts_all": len(concepts),
        "triples": triples,
        "stages": {s: stages[s] for s, _ in STAGES},
        "kept": kept,
        "triple_decided": decided,
        "kept_rate": kept / decided if decided else None,
        "with_images": kept - stages["needs_images"],
        "images": sum(images.values()),
        "image_status": {s: images[s] for s in VLindImage.Status.values},
        "origins": {s: origins[s] for s in VLindImage.Origin.values},
        "with_good": stages["needs_factual"] + stages["assembled"],
        "nouns_proposed": stages["nouns_proposed"],
        "assembled": stages["assembled"],
        "exported": latest.item_count if latest else 0,
        "latest_version": latest,
        "per_concept": per_concept,
    }


def concept_rows(bench: VLindBench, funnel_data: dict) -> list[dict]:
    """Triples drafted, kept and assembled per concept, in the concepts' order."""
    per = funnel_data["per_concept"]
    counts = ("drafted", "kept", "assembled")
    concepts = bench.concepts.order_by("position", "name")
    return [{"concept": c, **{k: per.get(c.name, {}).get(k, 0) for k in counts}} for c in concepts]


def triples_page(
    bench: VLindBench, *, stage: str = "", concept_id: int | None = None
) -> list[VLindTriple]:
    """Triples with their images (three queries), each with ``stage`` and ``best`` set."""
    qs = with_images(bench.triples)
    if concept_id:
        qs = qs.filter(concept_id=concept_id)
    if stage in ("review", "rejected"):
        qs = qs.filter(status=stage)
    elif stage:
        qs = qs.filter(status=VLindTriple.Status.KEPT)
    out = []
    for triple in qs:
        images = list(triple.images.all())
        triple.stage = stage_of(triple, images)
        triple.stage_label = STAGE_LABELS[triple.stage]
        triple.best = best_of(triple, images)
        triple.image_list = images
        if not stage or triple.stage == stage:
            out.append(triple)
    return out


def sample_triples(rows: list[VLindTriple], *, limit: int = 4) -> list[VLindTriple]:
    """A few of a bench's triples (its ``triples_page``) furthest along, for the thumbnails on
    the funnel page."""
    order = {s: k for k, (s, _l) in enumerate(reversed(STAGES))}
    triples = [t for t in rows if t.stage not in ("rejected",)]
    triples.sort(key=lambda t: (order[t.stage], t.concept.position, t.context_id))
    return triples[:limit]
