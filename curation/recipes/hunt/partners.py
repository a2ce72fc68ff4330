"""Images from the round's pool: the next one a worker hunts on, and the partner images proposed
for a question — the pool images nearest to the first under the round's scorer (cosine of the
cached, L2-normalised image embeddings), as VQAv2 and NaturalBench Sec. 3 pair similar images.
Without a scorer, or before the pool is embedded, random pool images are proposed and the page
says so."""

from __future__ import annotations

import random

import numpy as np

from curation.embeddings import IMAGE, EmbeddingsMissing, embeddings_get
from curation.models import Image, Sample

from .models import HuntCandidate, HuntRound

NEAREST, RANDOM = "nearest", "random"


def pool_image_ids(round_: HuntRound) -> list[int]:
    ids = Sample.objects.filter(corpus_id=round_.corpus_id).order_by("position")
    return list(dict.fromkeys(ids.values_list("image_id", flat=True)))


def nearest(round_: HuntRound, image: Image, *, k: int) -> dict:
    """{"method": "nearest" | "random", "images": [{"id", "score"}]}: ``k`` pool images other
    than ``image``, most similar first (``score`` the cosine; None for random ones)."""
    pool = [pk for pk in pool_image_ids(round_) if pk != image.pk]
    if round_.scorer_id is not None and pool:
        try:
            vectors = embeddings_get(scorer=round_.scorer, modality=IMAGE, ids=[image.pk, *pool])
        except EmbeddingsMissing:
            vectors = None
        if vectors is not None and len(vectors):
            x = vectors.astype(np.float32)
            x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
            scores = x[1:] @ x[0]
            order = np.argsort(-scores, kind="stable")[:k]
            return {
                "method": NEAREST,
                "images": [{"id": pool[i], "score": round(float(scores[i]), 4)} for i in order],
            }
    chosen = random.Random(image.pk).sample(pool, min(k, len(pool)))
    return {"method": RANDOM, "images": [{"id": pk, "score": None} for pk in chosen]}


def next_image(round_: HuntRound, worker, *, seed: int | None = None) -> Image | None:
    """A pool image this worker has not asked about yet (random), or None when the pool is used
    up for them."""
    used = set(
        HuntCandidate.objects.filter(round=round_, worker=worker).values_list("image_id", flat=True)
    )
    pool = [pk for pk in pool_image_ids(round_) if pk not in used]
    if not pool:
        return None
    return Image.objects.get(pk=random.Random(seed).choice(pool))


def search(round_: HuntRound, text: str, *, limit: int = 12) -> list[Image]:
    """Pool images whose caption contains ``text`` (case-insensitive)."""
    found = Sample.objects.filter(
        corpus_id=round_.corpus_id, captions__text__icontains=text.strip()
    ).order_by("position")
    ids = list(dict.fromkeys(found.values_list("image_id", flat=True)[: limit * 4]))[:limit]
    by_id = Image.objects.in_bulk(ids)
    return [by_id[pk] for pk in ids if pk in by_id]
