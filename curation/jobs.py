"""Celery jobs of the curation app (autodiscovered as ``curation.jobs``): thin, id-taking,
idempotent, each ``run_job(self, job_id, <work>)`` around a module-level ``<work>(job) -> dict``
that calls one service — corpora, thumbnails, embeddings, LLM batches — the style of every job
(evaluation's, and the recipes' one dispatcher, ``recipes/framework/jobs.py``)."""

from __future__ import annotations

from celery import shared_task

from annotator.platform.models import Job
from annotator.platform.worker import JOB_OPTIONS, run_job

from . import assets, corpora
from .embedding_chunks import EMBED_CHUNK_JOB, embed_chunk_run, embed_corpus_chunked
from .embeddings import EMBED_JOB
from .gateway.batch import JOB_KIND as BATCH_JOB
from .gateway.batch import batch_run
from .mining_chunks import MINE_CHUNK_JOB, mine_chunk_run
from .models import Corpus, Scorer


def corpus_import_work(job: Job) -> dict:
    """Import a stored archive (+ manifest) as a corpus, all or nothing."""
    return corpora.corpus_import_run(params=job.params, created_by=job.created_by, job_id=job.pk)


def thumbnails_work(job: Job) -> dict:
    """256 px WEBP thumbnails for ``params["image_ids"]``; images that have one are skipped."""
    return assets.thumbnails_make(image_ids=job.params.get("image_ids", []), job_id=job.pk)


def embed_work(job: Job) -> dict:
    """Embed a corpus's images and texts with a scorer, in chunk jobs that any worker takes; a
    redelivery resumes from the cache."""
    scorer = Scorer.objects.get(pk=job.params["scorer_id"])
    corpus = Corpus.objects.get(pk=job.params["corpus_id"])
    return embed_corpus_chunked(job=job, scorer=scorer, corpus=corpus)


def batch_work(job: Job) -> dict:
    """Run a batch of generations (``curation.gateway.batch``); items already done are skipped."""
    return batch_run(job=job)


@shared_task(name=corpora.IMPORT_JOB, **JOB_OPTIONS)
def import_corpus(self, job_id: int) -> None:
    run_job(self, job_id, corpus_import_work)


@shared_task(name=assets.THUMBNAIL_JOB, rerun_safe=True, **JOB_OPTIONS)
def make_thumbnails(self, job_id: int) -> None:
    run_job(self, job_id, thumbnails_work)


@shared_task(name=EMBED_JOB, rerun_safe=True, **JOB_OPTIONS)
def embed_corpus_job(self, job_id: int) -> None:
    run_job(self, job_id, embed_work)


@shared_task(name=EMBED_CHUNK_JOB, rerun_safe=True, **JOB_OPTIONS)
def embed_chunk(self, job_id: int) -> None:
    """One chunk of an embedding: the uncached items of one id range and modality."""
    run_job(self, job_id, embed_chunk_run)


@shared_task(name=MINE_CHUNK_JOB, rerun_safe=True, **JOB_OPTIONS)
def mine_chunk(self, job_id: int) -> None:
    """One chunk of an exact Eq. 1 mining: every n-th block pair, its answer on the storage."""
    run_job(self, job_id, mine_chunk_run)


@shared_task(name=BATCH_JOB, rerun_safe=True, **JOB_OPTIONS)
def generate_batch(self, job_id: int) -> None:
    run_job(self, job_id, batch_work)
