"""Chunk jobs (``annotator.platform.chunks``), run in-process: a job fans out, its chunks' progress
adds up on it, it goes on with their results; a failed chunk fails it; the lost-job sweep leaves
a parked job to its chunks; the jobs pages list chunks under their job."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotator.platform.chunks import FanOut
from annotator.platform.jobs import job_enqueue, jobs_inline
from annotator.platform.models import Job
from annotator.platform.worker import jobs_sweep_lost
from tests.annotator import chunk_jobs

pytestmark = pytest.mark.django_db


def start(project, curator, **params) -> Job:
    return job_enqueue(kind=chunk_jobs.PARENT, params=params, created_by=curator, project=project)


def test_a_job_fans_out_chunk_jobs_and_goes_on_with_their_results(
    eager, project, curator, django_capture_on_commit_callbacks
):
    # Given a job that sums 0…99 in chunks of 30
    with django_capture_on_commit_callbacks(execute=True):
        job = start(project, curator, n=100, size=30)

    # Then it ran four chunk jobs, then went on and summed their results
    job.refresh_from_db()
    assert (job.status, job.result) == ("succeeded", {"sum": 4950, "chunks": 4})
    assert (job.done, job.total, job.waiting_for, job.attempts) == (100, 100, 0, 1)
    chunks = list(job.chunks.order_by("part"))
    assert [(c.kind, c.part, c.status) for c in chunks] == [
        (chunk_jobs.CHUNK, p, "succeeded") for p in range(4)
    ]
    assert [c.result["sum"] for c in chunks] == [435, 1335, 2235, 945]
    assert [(c.done, c.total) for c in chunks] == [(30, 30), (30, 30), (30, 30), (10, 10)]
    # each chunk is the parent's project's and author's, so the same people see it
    assert {(c.project_id, c.created_by_id) for c in chunks} == {(project.pk, curator.pk)}


def test_a_failed_chunk_fails_its_job_saying_which_and_why(
    eager, project, curator, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = start(project, curator, n=90, size=30, refuse=[30])
    job.refresh_from_db()
    assert job.status == "failed"
    assert job.error == (
        f"Chunk 2 of 3 ({chunk_jobs.CHUNK}) failed: ValueError: chunk starting at 30 refused"
    )
    assert job.result is None
    assert job.waiting_for == 0
    assert list(job.chunks.order_by("part").values_list("status", flat=True)) == [
        "succeeded",
        "failed",
        "succeeded",
    ]


def test_a_command_runs_a_job_and_its_chunks_in_its_own_process(
    project, curator, django_capture_on_commit_callbacks
):
    # Given no eager mode and no broker: a command runs the job inline
    job = Job.objects.create(
        kind=chunk_jobs.PARENT, params={"n": 10, "size": 4}, project=project, created_by=curator
    )
    with jobs_inline(), django_capture_on_commit_callbacks(execute=True):
        chunk_jobs.sum_parent.apply(args=[job.pk])
    job.refresh_from_db()
    assert (job.status, job.result) == ("succeeded", {"sum": 45, "chunks": 3})
    assert job.chunks.filter(status="succeeded").count() == 3


def test_the_lost_job_sweep_leaves_a_parked_job_to_its_chunks(project, curator):
    # Given a job parked an hour ago (running, no heartbeat) waiting for two chunks
    long_ago = timezone.now() - timedelta(hours=1)
    job = Job.objects.create(
        kind=chunk_jobs.PARENT,
        status="running",
        started_at=long_ago,
        waiting_for=2,
        attempt_token="t",
        project=project,
    )
    # When the sweep runs
    counts = jobs_sweep_lost()
    # Then it is left alone
    job.refresh_from_db()
    assert counts == {"rerun": 0, "failed": 0}
    assert (job.status, job.attempt_token, job.is_parked) == ("running", "t", True)


def test_a_fan_out_needs_a_chunk_and_one_total_per_chunk():
    with pytest.raises(ValueError, match="at least one chunk"):
        FanOut(kind=chunk_jobs.CHUNK, params=[])
    with pytest.raises(ValueError, match="one total per chunk"):
        FanOut(kind=chunk_jobs.CHUNK, params=[{}, {}], totals=[1])


def test_the_jobs_list_shows_the_job_and_its_page_its_chunks(
    eager, client, project, curator, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = start(project, curator, n=20, size=10)
    client.force_login(curator)
    listing = client.get(reverse("curator-jobs")).content.decode()
    assert f'id="job-{job.pk}"' in listing
    chunk_ids = list(job.chunks.values_list("pk", flat=True))
    assert not any(f'id="job-{pk}"' in listing for pk in chunk_ids)
    page = client.get(reverse("curator-job", args=[job.pk])).content.decode()
    assert 'data-testid="job-chunks"' in page
    assert all(f'id="job-{pk}"' in page for pk in chunk_ids)
    chunk_page = client.get(reverse("curator-job", args=[chunk_ids[0]])).content.decode()
    assert reverse("curator-job", args=[job.pk]) in chunk_page
