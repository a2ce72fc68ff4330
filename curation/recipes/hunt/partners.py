"""Images from the round's pool: the next one a worker hunts on, and the partner images proposed
for a question — the pool images nearest to the first under the round's scorer (cosine of the
cached, L2-normalised image embeddings, ``curation.pool_index``), as VQAv2 and NaturalBench
Sec. 3 pair similar images. Without a scorer, or before the pool is embedded, random pool images
are proposed and the page says so. None of them reads the whole pool: it may be a corpus of a
million images (``benchmarks/hunt_pool.py``)."""

from __future__ import annotations

import random

from django.db.models import Max

from curation.models import Image, Sample
from curation.pool_index import corpus_nearest

from .models import HuntCandidate, HuntRound

NEAREST, RANDOM = "nearest", "random"


def _at_random(round_: HuntRound, rng: random.Random, k: int, exclude) -> list[int]:
    """Up to ``k`` distinct pool image ids at random, none of ``exclude`` (ids or a subquery of
    them), without reading the pool whole (it may hold a million images): the samples at
    ``3 k`` random positions of the corpus (one query); should they not give ``k`` (positions
    left empty, a pool nearly used up), the first sample left from a random position on,
    wrapping round, until none is left."""
    samples = Sample.objects.filter(corpus_id=round_.corpus_id)
    top = samples.aggregate(top=Max("position"))["top"]
    if top is None:
        return []
    allowed = samples.exclude(image_id__in=exclude)
    positions = rng.sample(range(top + 1), min(top + 1, 3 * k))
    at = dict(allowed.filter(position__in=positions).values_list("position", "image_id"))
    chosen = list(dict.fromkeys(at[p] for p in positions if p in at))[:k]
    while len(chosen) < k:
        start = rng.randint(0, top)
        left = allowed.exclude(image_id__in=chosen).order_by("position")
        found = left.filter(position__gte=start).values_list("image_id", flat=True).first()
        if found is None:
            found = left.filter(position__lt=start).values_list("image_id", flat=True).first()
        if found is None:
            break  # every other image of the pool is chosen or excluded
        chosen.append(found)
    return chosen


def nearest(round_: HuntRound, image: Image, *, k: int) -> dict:
    """{"method": "nearest" | "random", "images": [{"id", "score"}]}: ``k`` pool images other
    than ``image``, most similar first (``score`` the cosine; None for random ones)."""
    if round_.scorer_id is not None:
        found = corpus_nearest(
            scorer=round_.scorer, corpus_id=round_.corpus_id, image_id=image.pk, k=k
        )
        if found:
            return {
                "method": NEAREST,
                "images": [{"id": pk, "score": round(score, 4)} for pk, score in found],
            }
    chosen = _at_random(round_, random.Random(image.pk), k, [image.pk])
    return {"method": RANDOM, "images": [{"id": pk, "score": None} for pk in chosen]}


def next_image(round_: HuntRound, worker, *, seed: int | None = None) -> Image | None:
    """A pool image this worker has not asked about yet (random), or None when the pool is used
    up for them."""
    used = HuntCandidate.objects.filter(round=round_, worker=worker).values("image_id")
    chosen = _at_random(round_, random.Random(seed), 1, used)
    return Image.objects.get(pk=chosen[0]) if chosen else None


def search_query(round_: HuntRound, text: str, *, limit: int):
    """The ids of pool images whose caption contains ``text`` (case-insensitive), in pool order
    (a trigram index serves it on PostgreSQL: curation migration 0010)."""
    found = Sample.objects.filter(
        corpus_id=round_.corpus_id, captions__text__icontains=text.strip()
    ).order_by("position")
    return found.values_list("image_id", flat=True)[: limit * 4]


def search(round_: HuntRound, text: str, *, limit: int = 12) -> list[Image]:
    """Pool images whose caption contains ``text`` (case-insensitive), each once."""
    ids = list(dict.fromkeys(search_query(round_, text, limit=limit)))[:limit]
    by_id = Image.objects.in_bulk(ids)
    return [by_id[pk] for pk in ids if pk in by_id]
