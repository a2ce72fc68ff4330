"""Embedding cache: layout, resume after a partial run or a crash, truncation counts, similarity."""

import hashlib
import io

import numpy as np
import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from PIL import Image as PILImage

from annotator.platform.models import Job
from curation import embeddings
from curation.embeddings import (
    EmbeddingsMissing,
    embed_corpus,
    embed_corpus_start,
    embeddings_get,
    similarity,
    similarity_blocks,
)
from curation.models import Caption, Corpus, EmbeddingCache, Image, Sample, Scorer
from curation.scorers import ScorerUnavailable, cache, encode_texts, scorer_load, scorer_tiny
from tests.factories import ProjectFactory

COLOURS = ["red", "green", "blue", "yellow", "purple", "orange", "white", "black"]
LONG = "word " * 100  # 100 BPE tokens + SOT + EOT = 102 > 77


def png_bytes(colour: str, size=(40, 30)) -> bytes:
    buf = io.BytesIO()
    PILImage.new("RGB", size, colour).save(buf, "PNG")
    return buf.getvalue()


def make_image(colour: str) -> Image:
    data = png_bytes(colour)
    sha = hashlib.sha256(data).hexdigest()
    name = default_storage.save(f"images/{sha[:2]}/{sha}.png", ContentFile(data))
    return Image.objects.create(
        sha256=sha, file=name, width=40, height=30, format="PNG", byte_size=len(data)
    )


def add_samples(corpus: Corpus, colours: list[str], captions_per_sample: int = 2) -> None:
    start = Sample.objects.filter(corpus=corpus).count()
    for k, colour in enumerate(colours):
        sample = Sample.objects.create(
            corpus=corpus, image=make_image(colour), source_id=f"s{start + k}", position=start + k
        )
        for p in range(captions_per_sample):
            Caption.objects.create(sample=sample, text=f"a {colour} square, view {p}", position=p)
    corpus.sample_count = Sample.objects.filter(corpus=corpus).count()
    corpus.caption_count = Caption.objects.filter(sample__corpus=corpus).count()
    corpus.save()


def make_corpus(project, colours: list[str], name: str = "Squares") -> Corpus:
    corpus = Corpus.objects.create(project=project, name=name, slug=name.lower())
    add_samples(corpus, colours)
    return corpus


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.BLINDSPOT_EMBEDDINGS_DIR = str(tmp_path / "embeddings")
    return tmp_path


@pytest.fixture
def tiny(db, media):
    return scorer_tiny()


@pytest.fixture
def squares(db, media):
    return make_corpus(ProjectFactory(), COLOURS[:4])


@pytest.fixture
def calls(monkeypatch):
    """Count the items the model is asked to encode (per modality)."""
    seen = {"image": [], "text": []}
    real_images, real_texts = embeddings.encode_images, embeddings.encode_texts

    def images(loaded, pictures):
        seen["image"].append(len(pictures))
        return real_images(loaded, pictures)

    def texts(loaded, strings):
        seen["text"].append(len(strings))
        return real_texts(loaded, strings)

    monkeypatch.setattr(embeddings, "encode_images", images)
    monkeypatch.setattr(embeddings, "encode_texts", texts)
    return seen


def image_ids(corpus):
    return list(
        Sample.objects.filter(corpus=corpus).order_by("position").values_list("image_id", flat=True)
    )


def caption_ids(corpus):
    return list(
        Caption.objects.filter(sample__corpus=corpus).order_by("id").values_list("id", flat=True)
    )


def chunk_files(scorer, modality):
    return sorted(p.name for p in cache.cache_folder(scorer, modality).glob("chunk-*"))


def test_embed_corpus_stores_normalised_float16_per_modality(tiny, squares):
    # Given a corpus of 4 images with 2 captions each and the tiny scorer
    # When the corpus is embedded
    result = embed_corpus(scorer=tiny, corpus=squares)

    # Then every image and caption has an L2-normalised float16 vector of the model's dimension
    imgs = embeddings_get(scorer=tiny, modality="image", ids=image_ids(squares))
    txts = embeddings_get(scorer=tiny, modality="text", ids=caption_ids(squares))
    assert (imgs.dtype, imgs.shape, txts.dtype, txts.shape) == (
        np.float16,
        (4, 32),
        np.float16,
        (8, 32),
    )
    assert np.allclose(np.linalg.norm(imgs.astype(np.float32), axis=1), 1, atol=2e-3)
    # … equal (to float16 precision) to encoding the caption texts now
    loaded = scorer_load(tiny)
    texts = [c.text for c in Caption.objects.filter(sample__corpus=squares).order_by("id")]
    fresh, _ = encode_texts(loaded, texts)
    assert np.abs(txts.astype(np.float32) - fresh).max() < 2e-3
    # … recorded on the cache rows and in the result
    rows = {c.modality: (c.count, c.dim, c.truncated) for c in EmbeddingCache.objects.all()}
    assert rows == {"image": (4, 32, 0), "text": (8, 32, 0)}
    assert (result["images"]["embedded"], result["texts"]["embedded"]) == (4, 8)
    tiny.refresh_from_db()
    assert (tiny.context_length, tiny.embed_dim) == (77, 32)
    # … in one chunk per modality: a vectors file and its ids file, memory-mapped on read
    names = chunk_files(tiny, "image")
    stem = names[0][: -len(".ids.npy")]
    assert names == [f"{stem}.ids.npy", f"{stem}.npy"]
    vectors = np.load(cache.cache_folder(tiny, "image") / f"{stem}.npy", mmap_mode="r")
    assert isinstance(vectors, np.memmap) and vectors.shape == (4, 32)
    meta = np.load(cache.cache_folder(tiny, "image") / f"{stem}.ids.npy")
    assert meta.dtype == np.int64
    assert meta.tolist() == [[i, 0, 0] for i in sorted(image_ids(squares))]


def test_second_run_on_a_grown_corpus_embeds_only_the_new_items(tiny, squares, calls):
    # Given a corpus whose first half is embedded
    embed_corpus(scorer=tiny, corpus=squares)
    first_images = embeddings_get(scorer=tiny, modality="image", ids=image_ids(squares))
    first_texts = embeddings_get(scorer=tiny, modality="text", ids=caption_ids(squares))
    files_before = {p: p.stat().st_mtime_ns for p in cache.scorer_folder(tiny).rglob("chunk-*")}
    old_images, old_texts = image_ids(squares), caption_ids(squares)
    calls["image"].clear()
    calls["text"].clear()

    # When the other half is added and the corpus embedded again
    add_samples(squares, COLOURS[4:8])
    result = embed_corpus(scorer=tiny, corpus=squares)

    # Then only the 4 new images and 8 new captions went through the model
    assert (sum(calls["image"]), sum(calls["text"])) == (4, 8)
    assert result["images"] | {"unreadable_items": []} == {
        "total": 8,
        "embedded": 4,
        "cached_before": 4,
        "unreadable": 0,
        "unreadable_items": [],
        "cache_count": 8,
    }
    assert (result["texts"]["embedded"], result["texts"]["cached_before"]) == (8, 8)
    # … the first half's chunk files were not rewritten and read back identically
    assert {p: p.stat().st_mtime_ns for p in files_before} == files_before
    assert np.array_equal(
        embeddings_get(scorer=tiny, modality="image", ids=old_images), first_images
    )
    assert np.array_equal(embeddings_get(scorer=tiny, modality="text", ids=old_texts), first_texts)
    # … and a third run computes nothing and says so
    calls["image"].clear()
    calls["text"].clear()
    said = []
    embed_corpus(scorer=tiny, corpus=squares, progress=lambda d, t, m: said.append((d, t, m)))
    assert (calls["image"], calls["text"]) == ([], [])
    assert said[-1] == (
        0,
        0,
        "Nothing new: all 8 images and 16 texts were cached; 0 of 16 texts cut at 77 tokens",
    )


def test_a_crash_mid_way_keeps_the_chunks_written_and_the_rerun_finishes(
    tiny, squares, monkeypatch
):
    # Given batches of one image, a chunk per row, and a model that dies on the third image
    Scorer.objects.filter(pk=tiny.pk).update(batch_size=1)
    tiny.refresh_from_db()
    real = embeddings.encode_images
    seen = []

    def dies_on_third(loaded, pictures):
        seen.append(len(pictures))
        if len(seen) == 3:
            raise RuntimeError("worker killed")
        return real(loaded, pictures)

    monkeypatch.setattr(embeddings, "encode_images", dies_on_third)
    with pytest.raises(RuntimeError, match="worker killed"):
        embed_corpus(scorer=tiny, corpus=squares, chunk_rows=1)
    # Then the two images embedded before the crash are in the cache
    assert embeddings.embeddings_cached_ids(scorer=tiny, modality="image").tolist() == sorted(
        image_ids(squares)[:2]
    )

    # When the job runs again with a healthy model
    seen.clear()
    monkeypatch.setattr(
        embeddings,
        "encode_images",
        lambda loaded, pics: seen.append(len(pics)) or real(loaded, pics),
    )
    result = embed_corpus(scorer=tiny, corpus=squares, chunk_rows=1)

    # Then only the last two images are computed, and every vector matches a clean run's
    assert seen == [1, 1]
    assert result["images"]["cached_before"] == 2
    resumed = embeddings_get(scorer=tiny, modality="image", ids=image_ids(squares))
    loaded = scorer_load(tiny)
    clean = real(
        loaded,
        [
            embeddings._open_image(s.image.file.name)
            for s in squares.samples.order_by("position").select_related("image")
        ],
    )
    assert np.abs(resumed.astype(np.float32) - clean).max() < 2e-3


def test_many_small_chunks_are_merged_into_one_with_the_same_vectors(tiny, squares, monkeypatch):
    # Given one chunk per row: 4 image chunks and 8 text chunks (two files each)
    Scorer.objects.filter(pk=tiny.pk).update(batch_size=1)
    tiny.refresh_from_db()
    embed_corpus(scorer=tiny, corpus=squares, chunk_rows=1)
    before = embeddings_get(scorer=tiny, modality="text", ids=caption_ids(squares))
    assert len(chunk_files(tiny, "text")) == 16

    # When the next run tidies the folders with a limit of 3 chunks
    monkeypatch.setattr(embeddings, "MAX_CHUNKS", 3)
    embed_corpus(scorer=tiny, corpus=squares, chunk_rows=1)

    # Then each modality is one chunk holding the same vectors
    assert (len(chunk_files(tiny, "image")), len(chunk_files(tiny, "text"))) == (2, 2)
    after = embeddings_get(scorer=tiny, modality="text", ids=caption_ids(squares))
    assert np.array_equal(after, before)
    assert EmbeddingCache.objects.get(scorer=tiny, modality="text").count == 8


def test_texts_longer_than_the_context_are_counted_as_truncated(tiny, squares):
    # Given two captions of 102 tokens (context 77) and one of exactly 77
    captions = list(Caption.objects.filter(sample__corpus=squares).order_by("id"))
    captions[0].text = LONG
    captions[1].text = "b " + LONG
    captions[2].text = "word " * 75  # 75 + SOT + EOT = 77: fits
    for c in captions[:3]:
        c.save()

    # When the corpus is embedded
    result = embed_corpus(scorer=tiny, corpus=squares)

    # Then exactly two truncations are reported in the result and on the cache row
    assert (result["texts"]["truncated"], result["texts"]["truncated_new"]) == (2, 2)
    assert EmbeddingCache.objects.get(scorer=tiny, modality="text").truncated == 2
    # … and a truncated text embeds like its first 76 tokens + EOT (open_clip's own cut)
    import open_clip
    import torch

    loaded = scorer_load(tiny)
    tokens = open_clip.get_tokenizer(tiny.model_name)([LONG])
    with torch.inference_mode():
        ref = loaded.model.encode_text(tokens).float().numpy()[0]
    got = embeddings_get(scorer=tiny, modality="text", ids=[captions[0].pk])[0]
    assert np.abs(got.astype(np.float32) - ref / np.linalg.norm(ref)).max() < 2e-3


def test_short_text_is_embedded_and_a_changed_caption_is_embedded_again(tiny, squares, calls):
    # Given an embedded corpus
    embed_corpus(scorer=tiny, corpus=squares)
    caption = Caption.objects.filter(sample__corpus=squares).order_by("id").first()
    before = embeddings_get(scorer=tiny, modality="text", ids=[caption.pk])
    calls["text"].clear()

    # When one caption gets a short text and the corpus is embedded again
    caption.short_text = "a small square"
    caption.save()
    embed_corpus(scorer=tiny, corpus=squares)

    # Then only that caption is recomputed, from its short text
    assert calls["text"] == [1]
    after = embeddings_get(scorer=tiny, modality="text", ids=[caption.pk])
    fresh, _ = encode_texts(scorer_load(tiny), ["a small square"])
    assert not np.array_equal(before, after)
    assert np.abs(after.astype(np.float32) - fresh).max() < 2e-3
    assert EmbeddingCache.objects.get(scorer=tiny, modality="text").count == 8


def test_similarity_equals_brute_force_cosine(tiny, squares):
    embed_corpus(scorer=tiny, corpus=squares)
    imgs, txts = image_ids(squares)[::-1], caption_ids(squares)

    S = similarity(scorer=tiny, image_ids=imgs, text_ids=txts)

    I = embeddings_get(scorer=tiny, modality="image", ids=imgs).astype(np.float64)  # noqa: E741
    T = embeddings_get(scorer=tiny, modality="text", ids=txts).astype(np.float64)
    brute = np.array([[a @ b / (np.linalg.norm(a) * np.linalg.norm(b)) for b in T] for a in I])
    assert S.dtype == np.float32 and S.shape == (4, 8)
    assert np.abs(S - brute).max() < 1e-6


def test_similarity_blocks_reassemble_to_the_full_matrix(tiny, squares):
    embed_corpus(scorer=tiny, corpus=squares)
    imgs, txts = image_ids(squares), caption_ids(squares)
    full = similarity(scorer=tiny, image_ids=imgs, text_ids=txts)

    blocks = list(similarity_blocks(scorer=tiny, image_ids=imgs, text_ids=txts, block=3))

    assert [(i0, j0, b.shape) for i0, j0, b in blocks] == [
        (0, 0, (3, 3)),
        (0, 3, (3, 3)),
        (0, 6, (3, 2)),
        (3, 0, (1, 3)),
        (3, 3, (1, 3)),
        (3, 6, (1, 2)),
    ]
    rebuilt = np.zeros_like(full)
    for i0, j0, b in blocks:
        rebuilt[i0 : i0 + b.shape[0], j0 : j0 + b.shape[1]] = b
    # BLAS may sum in another order for another block shape: equal up to float32 rounding.
    assert np.abs(rebuilt - full).max() < 1e-6


def test_ids_without_embeddings_raise_a_message_that_says_what_to_run(tiny, squares):
    embed_corpus(scorer=tiny, corpus=squares)
    with pytest.raises(EmbeddingsMissing) as err:
        embeddings_get(scorer=tiny, modality="text", ids=[*caption_ids(squares), 999999])
    assert str(err.value) == (
        f"1 of 9 text ids have no embedding from scorer 'tiny (random weights)' (e.g. 999999). "
        f"Embed their corpus first: the scorers page's Embed button, or "
        f"`manage.py embed --scorer {tiny.pk} --corpus <id>`."
    )
    with pytest.raises(EmbeddingsMissing):
        next(similarity_blocks(scorer=tiny, image_ids=[999999], text_ids=caption_ids(squares)))


def test_an_unreadable_image_is_skipped_and_reported(tiny, squares):
    broken = squares.samples.order_by("position").first().image
    default_storage.delete(broken.file.name)

    result = embed_corpus(scorer=tiny, corpus=squares)

    assert (result["images"]["embedded"], result["images"]["unreadable"]) == (3, 1)
    assert result["images"]["unreadable_items"][0]["image_id"] == broken.pk
    assert EmbeddingCache.objects.get(scorer=tiny, modality="image").count == 3


def test_embed_job_runs_through_celery_and_reports_progress(
    tiny, squares, eager, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = embed_corpus_start(scorer=tiny, corpus=squares)
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert (job.kind, job.done, job.total, job.project_id) == (
        "curation.embed_corpus",
        12,
        12,
        squares.project_id,
    )
    assert job.result["texts"]["cache_count"] == 8
    # in chunk jobs (annotator.platform.chunks): one per modality at the default chunk size
    assert job.message == "Embedded 4 images and 8 texts in 2 chunk jobs; 0 texts cut at 77 tokens"
    assert sorted(job.chunks.values_list("params__modality", "status")) == [
        ("image", "succeeded"),
        ("text", "succeeded"),
    ]


def test_an_unfinished_job_is_returned_instead_of_a_second_one(tiny, squares):
    first = embed_corpus_start(scorer=tiny, corpus=squares)
    again = embed_corpus_start(scorer=tiny, corpus=squares)
    assert again.pk == first.pk
    assert Job.objects.count() == 1


def test_no_job_is_queued_when_the_weights_are_missing(db, media, squares):
    scorer = Scorer.objects.create(
        label="B/32 file", model_name="ViT-B-32", checkpoint_path="/nonexistent/b32.pt"
    )
    with pytest.raises(ScorerUnavailable, match="Put the checkpoint at /nonexistent/b32.pt"):
        embed_corpus_start(scorer=scorer, corpus=squares)
    assert Job.objects.count() == 0
