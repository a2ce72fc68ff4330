"""Corpus scale in chunk jobs, in-process (issue 25): the NaturalBench mine stage as a job (its
embeddings and its exact Eq. 1 mining in chunk jobs) keeps exactly the pairs of the one-process
run; a synthetic mining in chunks equals ``mine_mismatches``; chunk answers live on the storage."""

from __future__ import annotations

import numpy as np
import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from annotator.platform.chunks import job_work_dir, jobs_work_sweep
from annotator.platform.jobs import job_enqueue
from annotator.platform.models import Job
from annotator.platform.worker import sweep_lost_jobs
from curation import mining
from curation.embeddings import IMAGE, TEXT, embeddings_get, embeddings_put
from curation.mining_chunks import MINE_CHUNK_JOB
from curation.recipes.framework.registry import recipe_of
from curation.recipes.framework.stages import stage_run_now, stage_start
from curation.recipes.naturalbench import mining as nb_mining
from curation.scorers import scorer_tiny
from curation.scorers.cache import embeddings_clear
from tests.curation import scale_jobs
from tests.curation.recipes.naturalbench.helpers import make_corpus, make_pipeline

pytestmark = pytest.mark.django_db


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.BLINDSPOT_EMBEDDINGS_DIR = str(tmp_path / "embeddings")
    settings.BLINDSPOT_PROTECTED_MEDIA_REDIRECT = ""
    return tmp_path


@pytest.fixture
def small_chunks(settings):
    """Many chunks for a small corpus: 3 items per embedding chunk, 2-row blocks, 3 chunks."""
    settings.BLINDSPOT_EMBED_CHUNK_ITEMS = 3
    settings.BLINDSPOT_MINING_BLOCK = 2
    settings.BLINDSPOT_MINING_CHUNKS = 3


def pairs_of(pipeline) -> list[tuple]:
    return list(
        pipeline.pairs.order_by("position").values_list(
            "sample_0_id", "sample_1_id", "caption_0_id", "caption_1_id", "scores"
        )
    )


def test_the_mine_stage_as_a_job_keeps_the_pairs_of_the_one_process_run(
    eager, media, small_chunks, project, curator, django_capture_on_commit_callbacks
):
    # Given a corpus of 8 samples and two tiny scorers; one pipeline mined in this process
    corpus = make_corpus(project, n=8)
    scorers = [scorer_tiny(label="tiny A"), scorer_tiny(label="tiny B")]
    direct = make_pipeline(project, corpus, name="direct", method="eq1", scorers=scorers, seed=3)
    expected = nb_mining.pairs_mine(direct)
    # (that run embedded everything: the job starts from an empty cache)
    for scorer in scorers:
        embeddings_clear(scorer=scorer)
    chunked = make_pipeline(project, corpus, name="chunked", method="eq1", scorers=scorers, seed=3)

    # When the other pipeline's mine stage runs as a job
    with django_capture_on_commit_callbacks(execute=True):
        job = stage_start(recipe_of("naturalbench"), "mine", chunked, created_by=curator)
    job.refresh_from_db()

    # Then it embedded in chunk jobs (8 images + 8 texts, 3 a chunk, per scorer), mined in 3
    assert job.status == "succeeded", job.error
    kinds = list(job.chunks.values_list("kind", flat=True))
    assert kinds.count("curation.embed_chunk") == 2 * (3 + 3)
    assert kinds.count(MINE_CHUNK_JOB) == 3
    assert set(job.chunks.values_list("status", flat=True)) == {"succeeded"}
    # and its pairs are the direct run's
    got = [(a, b, c, d) for a, b, c, d, _s in pairs_of(chunked)]
    assert got == [(a, b, c, d) for a, b, c, d, _s in pairs_of(direct)]
    assert [[x["s"] for x in s] for *_r, s in pairs_of(chunked)] == [
        [x["s"] for x in s] for *_r, s in pairs_of(direct)
    ]
    chunked.refresh_from_db()
    assert chunked.mining["mismatched_pairs"] == expected["mismatched_pairs"]
    assert chunked.mining["pairs"] == expected["pairs"] > 0


@pytest.mark.django_db(transaction=True)  # a command's autocommit: sent at once, inline
def test_a_command_runs_the_mine_stage_and_its_chunks_in_its_process(
    media, small_chunks, project, curator
):
    corpus = make_corpus(project, n=5)
    pipeline = make_pipeline(project, corpus, method="eq1", scorers=[scorer_tiny()], seed=1)
    job = stage_run_now(nb_mining.pairs_mine, pipeline, created_by=curator)
    assert job.status == "succeeded", job.error
    assert job.chunks.filter(kind=MINE_CHUNK_JOB, status="succeeded").count() == 3
    assert pipeline.pairs.count() == job.result["pairs"] > 0


def test_chunked_mining_of_stored_embeddings_equals_the_one_process_miner(
    eager, media, project, curator, settings, django_capture_on_commit_callbacks
):
    # Given 600 samples' embeddings (D = 16) stored in the cache, 128-row blocks, 4 chunks
    settings.BLINDSPOT_MINING_BLOCK = 128
    settings.BLINDSPOT_MINING_CHUNKS = 4
    scorer = scorer_tiny()
    n = 600
    rng = np.random.default_rng(5)
    ids = np.arange(1, n + 1)
    embeddings_put(scorer=scorer, modality=IMAGE, ids=ids, vectors=rng.standard_normal((n, 16)))
    embeddings_put(scorer=scorer, modality=TEXT, ids=ids, vectors=rng.standard_normal((n, 16)))
    # When a job mines them in chunk jobs
    with django_capture_on_commit_callbacks(execute=True):
        job = job_enqueue(
            kind=scale_jobs.MINE_SYNTHETIC,
            params={"scorer_id": scorer.pk, "n": n, "seed": 9},
            project=project,
            created_by=curator,
        )
    job.refresh_from_db()
    # Then the result is the one-process miner's, bit for bit
    arrays = [
        (
            embeddings_get(scorer=scorer, modality=IMAGE, ids=ids),
            embeddings_get(scorer=scorer, modality=TEXT, ids=ids),
        )
    ]
    reference = mining.mine_mismatches(arrays, seed=9, groups=ids, normalise=True, block=128)
    assert job.status == "succeeded", job.error
    assert job.result == {
        "digest": reference.digest(),
        "pairs": len(reference),
        "mismatched_pairs": reference.n_mismatched_pairs,
    }
    # and each chunk's answer was a file on the storage, under the job's folder, with the input
    # prepared once for all chunks; the folder is deleted now that the job has ended
    chunks = list(Job.objects.filter(parent=job).order_by("part"))
    assert [c.part for c in chunks] == [0, 1, 2, 3]
    run = chunks[0].params["prepared"].rsplit("/", 1)[0]
    assert run.startswith(f"work/jobs/{job.pk}/mining-")
    for chunk in chunks:
        assert chunk.params["prepared"] == f"{run}/prepared"
        assert chunk.result["file"].startswith(f"{run}/chunk-{chunk.part}-of-4-")
    assert not (media / "media" / "work" / "jobs" / str(job.pk)).exists()
    assert (media / "media" / "work" / "jobs").is_dir()
    assert sum(c.result["mismatched_pairs"] for c in chunks) == reference.n_mismatched_pairs


def test_the_sweep_deletes_the_work_files_of_ended_jobs_only(media, project, curator):
    # Given work files of a running job, a failed job and a job that no longer exists
    running = Job.objects.create(kind="x", status="running", project=project, created_by=curator)
    failed = Job.objects.create(kind="x", status="failed", project=project, created_by=curator)
    for pk in (running.pk, failed.pk, 999_999):
        default_storage.save(f"{job_work_dir(pk)}/run/chunk-0.npz", ContentFile(b"x"))
        default_storage.save(f"{job_work_dir(pk)}/input.npz", ContentFile(b"x"))
    # When the lost-job sweep runs
    result = sweep_lost_jobs()
    # Then the ended jobs' files are gone, the running job's stay
    assert result["work_files_deleted"] == 4
    assert default_storage.exists(f"{job_work_dir(running.pk)}/run/chunk-0.npz")
    for pk in (failed.pk, 999_999):
        assert not (media / "media" / job_work_dir(pk)).exists()
    assert jobs_work_sweep() == 0
