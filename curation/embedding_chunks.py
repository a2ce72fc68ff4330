"""A corpus's embeddings in parallel chunk jobs (issue 25): the items not cached yet are cut into
chunks of ``BLINDSPOT_EMBED_CHUNK_ITEMS`` ids of one modality, each a chunk job any worker takes
(``annotator.platform.chunks``); the job that fanned them out tidies and counts the cache when
they have all ended.

A chunk embeds the uncached items of its id range and writes them as chunk files of the cache
(``curation.embeddings``: vectors then ids file, each renamed into place), so a chunk killed
mid-way keeps what it wrote and its re-run embeds only the rest. Chunk jobs are of the kind
``curation.embed_chunk``: route it to a queue of GPU workers with
``BLINDSPOT_JOB_QUEUES=curation.embed_chunk=gpu`` and ``celery -A blindspot worker -Q gpu``; a
scorer whose device is "auto" runs on the worker's GPU when it has one, on its CPU otherwise, and
each chunk's result says which.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings

from annotator.platform.chunks import FanOut, chunk_progress, chunk_results
from annotator.platform.jobs import job_progress
from annotator.platform.models import Job

from .embeddings import IMAGE, TEXT, EmbedPart, embed_corpus, embed_finish, embed_todo
from .models import Corpus, Scorer

EMBED_CHUNK_JOB = "curation.embed_chunk"


def chunk_items() -> int:
    return max(1, int(settings.BLINDSPOT_EMBED_CHUNK_ITEMS))


def embedding_fan_out(*, work: Sequence[tuple[Scorer, Corpus]]) -> FanOut | None:
    """Chunk jobs for everything the (scorer, corpus) pairs have not embedded yet; None when
    everything is cached."""
    size = chunk_items()
    params: list[dict] = []
    totals: list[int] = []
    for scorer, corpus in work:
        images, texts = embed_todo(scorer=scorer, corpus=corpus)
        for modality, ids in ((IMAGE, images), (TEXT, texts)):
            for start in range(0, len(ids), size):
                part = ids[start : start + size]
                params.append(
                    {
                        "scorer_id": scorer.pk,
                        "corpus_id": corpus.pk,
                        "modality": str(modality),
                        "first": int(part[0]),
                        "last": int(part[-1]),
                    }
                )
                totals.append(len(part))
    if not params:
        return None
    return FanOut(
        kind=EMBED_CHUNK_JOB,
        params=params,
        totals=totals,
        message=f"Embedding {sum(totals)} items in {len(params)} chunk jobs",
    )


def embed_chunk_run(job: Job) -> dict:
    """The work of one chunk job: embed its part, reporting progress on it and its parent."""
    p = job.params
    scorer = Scorer.objects.get(pk=p["scorer_id"])
    corpus = Corpus.objects.get(pk=p["corpus_id"])
    result = embed_corpus(
        scorer=scorer,
        corpus=corpus,
        part=EmbedPart(p["modality"], int(p["first"]), int(p["last"])),
        progress=lambda done, total, message: chunk_progress(
            chunk=job, done=done, total=total, message=message
        ),
    )
    return {
        key: result[key]
        for key in ("scorer_id", "corpus_id", "device", "dim", "context_length", "images", "texts")
    }


def embedding_results(*, job: Job) -> list[dict] | None:
    """The job's embedding chunks' results (None: it has not fanned them out)."""
    return chunk_results(job=job, kind=EMBED_CHUNK_JOB)


def embed_corpus_chunked(*, job: Job, scorer: Scorer, corpus: Corpus) -> dict | FanOut:
    """The corpus embedding job (``curation.embed_corpus``): fan the uncached items out as chunk
    jobs; once they have ended, tidy and count the cache and sum what the chunks did."""
    parts = embedding_results(job=job)
    if parts is None:
        fan_out = embedding_fan_out(work=[(scorer, corpus)])
        if fan_out is not None:
            return fan_out
        parts = []
    image_cache, text_cache = embed_finish(scorer=scorer)
    images = sum(p["images"]["embedded"] for p in parts)
    texts = sum(p["texts"]["embedded"] for p in parts)
    unreadable = [u for p in parts for u in p["images"]["unreadable_items"]]
    cut = sum(p["texts"]["truncated_new"] for p in parts)
    if parts:
        message = f"Embedded {images} images and {texts} texts in {len(parts)} chunk jobs"
        message += f"; {cut} texts cut at {parts[0]['context_length']} tokens"
        n_unreadable = sum(p["images"]["unreadable"] for p in parts)
        if n_unreadable:
            message += f"; {n_unreadable} images could not be read"
    else:
        message = "Nothing new: every image and text was cached"
    job_progress(job_id=job.pk, done=job.total, message=message)
    return {
        "scorer_id": scorer.pk,
        "corpus_id": corpus.pk,
        "random_weights": scorer.random_weights,
        "chunks": len(parts),
        "devices": sorted({p["device"] for p in parts}),
        "images": {
            "embedded": images,
            "unreadable": sum(p["images"]["unreadable"] for p in parts),
            "unreadable_items": unreadable[:50],
            "cache_count": image_cache.count,
        },
        "texts": {
            "embedded": texts,
            "cache_count": text_cache.count,
            "cache_truncated": text_cache.truncated,
        },
    }
