"""Celery jobs of the curation scorers area (thin, id-taking, idempotent)."""

from __future__ import annotations

from celery import shared_task

from annotator.platform.models import Job
from annotator.platform.worker import JOB_OPTIONS, run_job

from .embeddings import embed_corpus
from .models import Corpus, Scorer

__all__ = ["embed_corpus_job"]


@shared_task(name="curation.embed_corpus", rerun_safe=True, **JOB_OPTIONS)
def embed_corpus_job(self, job_id: int) -> None:
    """Embed a corpus's images and texts with a scorer; a redelivery resumes from the cache."""

    def work(job: Job) -> dict:
        scorer = Scorer.objects.get(pk=job.params["scorer_id"])
        corpus = Corpus.objects.get(pk=job.params["corpus_id"])
        return embed_corpus(scorer=scorer, corpus=corpus, job_id=job.pk)

    run_job(self, job_id, work)
