"""The nearest images of a corpus under a scorer (``curation.pool_index``): the same answer as
reading the whole corpus and its embeddings, exact below ``FLAT_BELOW`` and with 8-bit codes
above; made again when the corpus or the cache changes; embedded images only."""

from __future__ import annotations

import numpy as np
import pytest

from curation import pool_index
from curation.embeddings import IMAGE, embeddings_get, embeddings_put
from curation.models import Corpus, Image, Sample, Scorer
from curation.scorers.cache import embeddings_clear

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("pool_indexes")]


def images(n: int, start: int = 0) -> list[Image]:
    return Image.objects.bulk_create(
        Image(
            sha256=f"{start + i:064x}",
            file=f"pool/{start + i}.png",
            width=8,
            height=8,
            format="png",
            byte_size=10,
        )
        for i in range(n)
    )


def corpus_of(project, made: list[Image], name: str = "pool") -> Corpus:
    corpus = Corpus.objects.create(project=project, name=name, slug=name, sample_count=len(made))
    Sample.objects.bulk_create(
        Sample(corpus=corpus, image=image, source_id=f"s{k}", position=k)
        for k, image in enumerate(made)
    )
    return corpus


def embed(scorer: Scorer, made: list[Image], seed: int, dim: int = 16) -> None:
    rng = np.random.default_rng(seed)
    embeddings_put(
        scorer=scorer,
        modality=IMAGE,
        ids=[i.pk for i in made],
        vectors=rng.standard_normal((len(made), dim)),
    )


@pytest.fixture
def scorer():
    return Scorer.objects.create(label="pool", model_name="ViT-B-32", embed_dim=16)


def nearest(scorer: Scorer, corpus: Corpus, image_id: int, k: int):
    return pool_index.corpus_nearest(scorer=scorer, corpus_id=corpus.pk, image_id=image_id, k=k)


def brute_force(scorer: Scorer, ids: list[int], image_id: int, k: int):
    """What the hunt computed before: every pool vector, float32, normalised, one product."""
    others = [pk for pk in ids if pk != image_id]
    x = embeddings_get(scorer=scorer, modality=IMAGE, ids=[image_id, *others]).astype(np.float32)
    x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    scores = x[1:] @ x[0]
    order = np.argsort(-scores, kind="stable")[:k]
    return [others[i] for i in order], [float(scores[i]) for i in order]


@pytest.mark.parametrize("flat_below", [pool_index.FLAT_BELOW, 10])
def test_the_nearest_images_are_those_of_reading_every_vector(
    project, scorer, monkeypatch, flat_below
):
    # Given a corpus of 300 embedded images (exact below FLAT_BELOW, 8-bit codes above it)
    monkeypatch.setattr(pool_index, "FLAT_BELOW", flat_below)
    made = images(300)
    corpus = corpus_of(project, made)
    embed(scorer, made, seed=1)
    ids = [i.pk for i in made]
    for image_id in ids[:25]:
        # When the six nearest of an image are asked for
        found = nearest(scorer, corpus, image_id, 6)
        # Then they are the brute force's, in its order, with its cosines
        want_ids, want_scores = brute_force(scorer, ids, image_id, 6)
        assert [pk for pk, _s in found] == want_ids
        assert [s for _pk, s in found] == pytest.approx(want_scores, abs=1e-6)
    held = next(iter(pool_index._indexes.values()))
    assert ("IndexFlatIP" if flat_below > 300 else "IndexScalarQuantizer") in type(
        held.index
    ).__name__


def test_ties_go_to_the_image_earlier_in_the_corpus(project, scorer):
    made = images(5)
    corpus = corpus_of(project, list(reversed(made)))  # corpus order: ids descending
    same = np.ones((5, 16))
    embeddings_put(scorer=scorer, modality=IMAGE, ids=[i.pk for i in made], vectors=same)
    found = nearest(scorer, corpus, made[2].pk, 3)
    assert [pk for pk, _s in found] == [made[4].pk, made[3].pk, made[1].pk]


def test_only_embedded_images_of_the_corpus_and_each_once(project, scorer):
    made = images(12)
    corpus = corpus_of(project, made + made[:3], name="twice")  # three images twice
    other = corpus_of(project, images(4, start=100), name="other")
    embed(scorer, made[:8], seed=2)
    found = nearest(scorer, corpus, made[0].pk, 9)
    got = [pk for pk, _s in found]
    assert sorted(got) == sorted(i.pk for i in made[1:8])  # the embedded others, once each
    # An image without an embedding has no neighbours; nor has a corpus with none embedded.
    assert nearest(scorer, corpus, made[9].pk, 3) is None
    first = other.samples.order_by("position").first().image_id
    assert nearest(scorer, other, first, 3) is None


@pytest.mark.parametrize("flat_below", [pool_index.FLAT_BELOW, 5])
def test_images_imported_and_embedded_later_are_proposed(project, scorer, monkeypatch, flat_below):
    monkeypatch.setattr(pool_index, "FLAT_BELOW", flat_below)
    monkeypatch.setattr(pool_index, "RECHECK_S", 0.0)  # a large corpus looks again every call
    made = images(10)
    corpus = corpus_of(project, made)
    embed(scorer, made, seed=4)
    before = nearest(scorer, corpus, made[0].pk, 20)
    assert len(before) == 9
    # When ten more are imported into the corpus and embedded, one of them the first's twin
    later = images(10, start=50)
    Sample.objects.bulk_create(
        Sample(corpus=corpus, image=image, source_id=f"s{10 + k}", position=10 + k)
        for k, image in enumerate(later)
    )
    embed(scorer, later, seed=5)
    twin = embeddings_get(scorer=scorer, modality=IMAGE, ids=[made[0].pk])
    embeddings_put(scorer=scorer, modality=IMAGE, ids=[later[3].pk], vectors=twin)
    after = nearest(scorer, corpus, made[0].pk, 20)
    assert len(after) == 19
    assert after[0] == (later[3].pk, pytest.approx(1.0, abs=1e-6))


def test_a_large_corpus_is_looked_at_again_only_after_recheck_s(project, scorer, monkeypatch):
    monkeypatch.setattr(pool_index, "FLAT_BELOW", 5)
    made = images(10)
    corpus = corpus_of(project, made)
    embed(scorer, made, seed=6)
    nearest(scorer, corpus, made[0].pk, 3)
    built = []
    real = pool_index._build
    monkeypatch.setattr(pool_index, "_build", lambda *a: built.append(a) or real(*a))
    embed(scorer, images(3, start=70), seed=7)  # the cache changes
    nearest(scorer, corpus, made[0].pk, 3)
    assert built == []  # within RECHECK_S: the index held is used
    monkeypatch.setattr(pool_index, "RECHECK_S", 0.0)
    nearest(scorer, corpus, made[0].pk, 3)
    assert len(built) == 1


@pytest.mark.parametrize("flat_below", [pool_index.FLAT_BELOW, 5])
def test_a_cache_cleared_under_a_held_index_gives_no_partners_and_no_error(
    project, scorer, monkeypatch, flat_below
):
    monkeypatch.setattr(pool_index, "FLAT_BELOW", flat_below)
    made = images(10)
    corpus = corpus_of(project, made)
    embed(scorer, made, seed=8)
    assert nearest(scorer, corpus, made[0].pk, 3)
    embeddings_clear(scorer=scorer)  # a large corpus's index is still held (RECHECK_S)
    assert nearest(scorer, corpus, made[0].pk, 3) is None
