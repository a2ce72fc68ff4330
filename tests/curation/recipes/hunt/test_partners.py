"""The round's pool (``partners``): the next image a worker hunts on, never one they asked
about; partner images nearest under the round's scorer, or random ones without embeddings."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection

from curation.embeddings import IMAGE, embeddings_put
from curation.models import Caption, Scorer
from curation.recipes.hunt import partners
from curation.recipes.hunt.models import HuntCandidate

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("pool_indexes")]


def pool_of(hunt_round) -> list[int]:
    return list(hunt_round.corpus.samples.order_by("position").values_list("image_id", flat=True))


def asked(hunt_round, worker, image_id: int) -> None:
    HuntCandidate.objects.create(
        round=hunt_round, worker=worker, image_id=image_id, question="q?", answer="a0", normal="q"
    )


def test_the_next_image_is_one_the_worker_has_not_asked_about(hunt_round, crowdworker):
    pool = pool_of(hunt_round)
    assert len(pool) >= 3
    seen = set()
    for n in range(len(pool)):
        image = partners.next_image(hunt_round, crowdworker, seed=n)
        assert image.pk in pool and image.pk not in seen
        seen.add(image.pk)
        asked(hunt_round, crowdworker, image.pk)
    # Every image asked about: the pool is used up for this worker, not for another.
    assert partners.next_image(hunt_round, crowdworker, seed=99) is None
    assert partners.next_image(hunt_round, hunt_round.created_by, seed=99).pk in pool


def test_the_next_image_is_drawn_at_random(hunt_round, crowdworker):
    drawn = {partners.next_image(hunt_round, crowdworker, seed=n).pk for n in range(40)}
    assert len(drawn) >= 3


def test_without_embeddings_the_partners_are_random_other_pool_images(hunt_round):
    pool = pool_of(hunt_round)
    image = hunt_round.corpus.samples.order_by("position").first().image
    found = partners.nearest(hunt_round, image, k=4)
    assert found["method"] == partners.RANDOM
    ids = [row["id"] for row in found["images"]]
    assert len(ids) == min(4, len(pool) - 1) == len(set(ids))
    assert image.pk not in ids and set(ids) <= set(pool)
    assert found == partners.nearest(hunt_round, image, k=4)  # the same for the same image
    # A scorer whose cache holds nothing yet: random too.
    hunt_round.scorer = Scorer.objects.create(label="empty", model_name="ViT-B-32")
    assert partners.nearest(hunt_round, image, k=4)["method"] == partners.RANDOM
    # More asked for than the pool holds: every other image, once.
    everything = partners.nearest(hunt_round, image, k=len(pool) + 5)["images"]
    assert sorted(row["id"] for row in everything) == sorted(set(pool) - {image.pk})


def test_with_embeddings_the_partners_are_the_nearest(hunt_round):
    pool = pool_of(hunt_round)
    scorer = Scorer.objects.create(label="pool", model_name="ViT-B-32", embed_dim=8)
    vectors = np.random.default_rng(3).standard_normal((len(pool), 8))
    vectors[2] = vectors[0] + 0.01  # the third image is the first's near twin
    embeddings_put(scorer=scorer, modality=IMAGE, ids=pool, vectors=vectors)
    hunt_round.scorer = scorer
    image = hunt_round.corpus.samples.order_by("position").first().image
    found = partners.nearest(hunt_round, image, k=3)
    assert found["method"] == partners.NEAREST
    assert found["images"][0]["id"] == pool[2] and found["images"][0]["score"] > 0.99
    scores = [row["score"] for row in found["images"]]
    assert scores == sorted(scores, reverse=True) and len(scores) == 3


def test_the_caption_search_finds_pool_images_by_their_caption(hunt_round):
    sample = hunt_round.corpus.samples.order_by("position").first()
    caption = sample.captions.first()
    word = max(caption.text.split(), key=len)
    found = partners.search(hunt_round, word.upper())
    assert sample.image in found
    assert partners.search(hunt_round, "no caption says zqxjv") == []


def test_the_caption_search_can_use_the_trigram_index(hunt_round):
    """On PostgreSQL the search's caption lookup compiles to caption_text_trgm_idx's expression
    (migration 0010): with sequential scans priced out the planner takes the index for it."""
    if connection.vendor != "postgresql":
        pytest.skip("a PostgreSQL index")
    query = partners.search_query(hunt_round, "zebra", limit=12)
    assert 'UPPER("curation_caption"."text"::text) LIKE UPPER(' in str(query.query)
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
    plan = Caption.objects.filter(text__icontains="zebra").order_by().values("id").explain()
    assert "caption_text_trgm_idx" in plan
