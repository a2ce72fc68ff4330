"""Corpus scale with real Celery workers against Redis (issue 25): two worker processes embed a
corpus and mine it exactly in chunk jobs with the same pairs as one process; a worker SIGKILLed
in the middle of a mining chunk loses nothing: the chunk runs again on another worker and the
result is identical to the one-process miner's."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest
from django.db.models import F
from threadpoolctl import threadpool_limits

from annotator.platform.jobs import job_enqueue
from annotator.platform.models import Job
from curation import mining
from curation.embeddings import IMAGE, TEXT, embeddings_get, embeddings_put
from curation.mining_chunks import MINE_CHUNK_JOB
from curation.recipes.framework.registry import recipe_of
from curation.recipes.framework.stages import stage_start
from curation.recipes.naturalbench import mining as nb_mining
from curation.scorers import scorer_tiny
from curation.scorers.cache import embeddings_clear
from tests.annotator.celery_worker import (
    broker_for_tests,
    process_group,
    start_worker,
    stop_worker,
    wait_for,
)
from tests.curation import scale_jobs
from tests.curation.recipes.naturalbench.helpers import make_corpus, make_pipeline

pytestmark = [
    pytest.mark.celery,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(1200),  # worker start-ups (torch) take minutes on a loaded machine
]

FAST = {
    "BLINDSPOT_JOB_HEARTBEAT_S": "0.5",
    "BLINDSPOT_JOB_LOST_AFTER_S": "3",
    "BLINDSPOT_JOB_SWEEP_S": "1",
    "BLINDSPOT_MINING_THREADS": "1",
    "BLINDSPOT_TORCH_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
}
ROUTES = ("annotator.*", "curation.*", "naturalbench.*", "tests.*")
ONE_PROCESS = ["--pool=prefork", "--concurrency=1"]


@pytest.fixture
def storage(settings, tmp_path):
    """Media and embeddings folders shared by this process and the workers (by environment)."""
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.BLINDSPOT_EMBEDDINGS_DIR = str(tmp_path / "embeddings")
    settings.BLINDSPOT_PROTECTED_MEDIA_REDIRECT = ""
    return {
        **FAST,
        "MEDIA_ROOT": settings.MEDIA_ROOT,
        "BLINDSPOT_EMBEDDINGS_DIR": settings.BLINDSPOT_EMBEDDINGS_DIR,
    }


def test_two_workers_embed_and_mine_a_corpus_with_the_pairs_of_one_process(
    tmp_path, storage, settings, project, curator
):
    # Given a corpus of 10 samples, two tiny scorers, and the pairs one process mines
    corpus = make_corpus(project, n=10)
    scorers = [scorer_tiny(label="tiny A"), scorer_tiny(label="tiny B")]
    direct = make_pipeline(project, corpus, name="direct", method="eq1", scorers=scorers, seed=4)
    nb_mining.pairs_mine(direct)
    for scorer in scorers:
        embeddings_clear(scorer=scorer)
    chunked = make_pipeline(project, corpus, name="chunked", method="eq1", scorers=scorers, seed=4)
    env = {
        **storage,
        "BLINDSPOT_EMBED_CHUNK_ITEMS": "4",
        "BLINDSPOT_MINING_BLOCK": "2",
        "BLINDSPOT_MINING_CHUNKS": "6",
    }
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    with broker_for_tests(routes=ROUTES):
        # and two workers, one process each
        workers = [
            start_worker(logs[0], *ONE_PROCESS, "-n", "pytest-scale-a@%h", env=env),
            start_worker(logs[1], *ONE_PROCESS, "-n", "pytest-scale-b@%h", env=env),
        ]
        try:
            # When the mine stage runs as a job
            job = stage_start(recipe_of("naturalbench"), "mine", chunked, created_by=curator)
            wait_for(
                lambda: Job.objects.get(pk=job.pk).is_finished,
                logs[0],
                "the mine job to end",
                timeout=300,
            )
        finally:
            for worker in workers:
                stop_worker(worker)

    # Then it succeeded, its chunk jobs run by both workers
    job.refresh_from_db()
    assert job.status == "succeeded", (job.error, logs[0].read_text()[-3000:])
    chunks = list(job.chunks.all())
    assert {c.status for c in chunks} == {"succeeded"}
    assert {c.kind for c in chunks} == {"curation.embed_chunk", MINE_CHUNK_JOB}
    assert len({c.worker for c in chunks}) == 2, sorted({c.worker for c in chunks})
    # and kept exactly the pairs of the one-process run, with the same S values
    fields = ("sample_0_id", "sample_1_id", "caption_0_id", "caption_1_id", "scores")
    got = list(chunked.pairs.order_by("position").values_list(*fields))
    want = list(direct.pairs.order_by("position").values_list(*fields))
    assert got == want and len(got) > 0


def test_a_worker_killed_mid_chunk_loses_nothing_and_the_result_is_identical(
    tmp_path, storage, project, curator
):
    # Given 16,000 samples' embeddings in the cache (D = 32): chunks of several seconds each
    scorer = scorer_tiny()
    n, dim, seed = 16_000, 32, 11
    rng = np.random.default_rng(2)
    ids = np.arange(1, n + 1)
    embeddings_put(scorer=scorer, modality=IMAGE, ids=ids, vectors=rng.standard_normal((n, dim)))
    embeddings_put(scorer=scorer, modality=TEXT, ids=ids, vectors=rng.standard_normal((n, dim)))
    arrays = [
        (
            embeddings_get(scorer=scorer, modality=IMAGE, ids=ids),
            embeddings_get(scorer=scorer, modality=TEXT, ids=ids),
        )
    ]
    # (the workers' arithmetic: one BLAS thread; two threads can round an S value 1 ulp apart)
    with threadpool_limits(1):
        reference = mining.mine_mismatches(
            arrays, seed=seed, groups=ids, normalise=True, block=256, threads=1
        )
    env = {**storage, "BLINDSPOT_MINING_BLOCK": "256", "BLINDSPOT_MINING_CHUNKS": "3"}
    extra = ["-I", "tests.curation.scale_jobs", *ONE_PROCESS]
    log, log2 = tmp_path / "first.log", tmp_path / "second.log"
    with broker_for_tests(routes=ROUTES):
        first = start_worker(log, *extra, "-n", "pytest-kill-first@%h", env=env)
        try:
            job = job_enqueue(
                kind=scale_jobs.MINE_SYNTHETIC,
                params={"scorer_id": scorer.pk, "n": n, "seed": seed},
                project=project,
                created_by=curator,
            )

            def chunk_under_way():
                return Job.objects.filter(
                    parent=job, status="running", done__gt=0, done__lt=F("total")
                ).first()

            # When the worker is SIGKILLed (main process and pool child) mid-chunk
            victim = wait_for(chunk_under_way, log, "a chunk to be under way", timeout=120)
            os.killpg(first.pid, signal.SIGKILL)
            first.wait(timeout=10)
            wait_for(lambda: not process_group(first.pid), log, "the killed worker to be gone")
            victim.refresh_from_db()
            assert victim.status == "running" and 0 < victim.done < victim.total, victim.done
            killed_worker = victim.worker
            killed_at = time.monotonic()
        finally:
            stop_worker(first)
        # and another worker, with the beat, takes over
        second = start_worker(
            log2, *extra, "-B", "-s", str(tmp_path / "beat"), "-n", "pytest-kill-second@%h", env=env
        )
        try:
            wait_for(
                lambda: Job.objects.get(pk=job.pk).is_finished,
                log2,
                "the mining job to end",
                timeout=300,
            )
        finally:
            stop_worker(second)
    elapsed = time.monotonic() - killed_at

    # Then the killed chunk ran again on the new worker, and the job's result is the
    # one-process miner's, bit for bit
    job.refresh_from_db()
    assert job.status == "succeeded", (job.error, log2.read_text()[-3000:])
    victim.refresh_from_db()
    assert (victim.status, victim.attempts) == ("succeeded", 2)
    assert victim.worker != killed_worker
    assert job.chunks.filter(status="succeeded").count() == 3
    assert job.result == {
        "digest": reference.digest(),
        "pairs": len(reference),
        "mismatched_pairs": reference.n_mismatched_pairs,
    }
    print(f"recovered {elapsed:.1f} s after the kill")
