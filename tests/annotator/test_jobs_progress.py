"""Progress that tells the truth: a finished job shows its final count, and in the demo's mode
(eager jobs in the server's embedded worker, ``BLINDSPOT_JOBS_IN_BACKGROUND``) a button's
request answers at once while the job's card follows it step by step to the end.

The job kind ``tests.stepped`` (``stepped_jobs.py``) takes one step each time the test opens
its gate, so every intermediate state is observed, not guessed with sleeps.
"""

from __future__ import annotations

import time

import pytest
from django.db import transaction
from django.urls import reverse

from annotator.platform import background
from annotator.platform.jobs import job_enqueue, job_task
from annotator.platform.models import Job
from annotator.platform.worker import FINISHED
from tests.annotator import stepped_jobs
from tests.curation.recipes.toy.models import ToyRun

HTMX = {"HTTP_HX_REQUEST": "true"}


def _job(project, **params) -> Job:
    return Job.objects.create(kind=stepped_jobs.STEPPED, params=params, project=project)


def _run_here(job: Job) -> Job:
    job_task(job.kind).apply(args=[job.pk])
    job.refresh_from_db()
    return job


def _card(client, job: Job) -> str:
    response = client.get(reverse("curator-job", args=[job.pk]) + "?part=card", **HTMX)
    assert response.status_code == 200
    return response.content.decode()


def _count(html: str) -> str:
    """The card's "done / total · message" line, whitespace collapsed."""
    start = html.index('data-testid="job-count">') + len('data-testid="job-count">')
    line = html[start : html.index("</p>", start)]
    line = line.replace('<span dir="auto">', "").replace("</span>", "")
    return " ".join(line.split())


@pytest.mark.django_db
def test_a_job_whose_last_report_was_a_step_ends_at_its_total_saying_finished(
    eager, client, curator, project
):
    # Given a job whose work returns after reporting 2 of 3 (its last step unreported)
    job = _job(project, steps=3, stop_short=True)
    stepped_jobs.step(job.pk, 3)
    # When it succeeds
    job = _run_here(job)
    # Then its row and card show the final count and "Finished", not the step in progress
    assert (job.status, job.done, job.total, job.message) == ("succeeded", 3, 3, FINISHED)
    client.force_login(curator)
    assert _count(_card(client, job)) == "3 / 3 · Finished"


@pytest.mark.django_db
def test_a_final_report_is_kept_and_a_job_without_a_count_shows_no_zero_of_zero(
    eager, client, curator, project
):
    counted = _job(project, steps=2)
    stepped_jobs.step(counted.pk, 2)
    counted = _run_here(counted)
    assert (counted.done, counted.total, counted.message) == (2, 2, "Step 2 of 2")
    uncounted = _job(project, steps=0)
    uncounted = _run_here(uncounted)
    assert (uncounted.status, uncounted.done, uncounted.total) == ("succeeded", 0, 0)
    assert uncounted.message == FINISHED
    client.force_login(curator)
    assert _count(_card(client, counted)) == "2 / 2 · Step 2 of 2"
    assert _count(_card(client, uncounted)) == "Finished"
    assert 'hx-trigger="every 1s"' not in _card(client, counted)


@pytest.mark.django_db
def test_a_failed_job_keeps_the_count_it_reached(eager, project, settings):
    # Given a job that takes one step of three and then waits for a gate that never opens
    stepped_jobs.WAIT_S, wait = 0.2, stepped_jobs.WAIT_S
    try:
        job = _job(project, steps=3)
        stepped_jobs.step(job.pk, 1)
        job = _run_here(job)
    finally:
        stepped_jobs.WAIT_S = wait
    assert (job.status, job.done, job.total) == ("failed", 1, 3)
    assert "did not open the gate of step 2" in job.error


# --------------------------------------------------------------------------------------------
# The demo's mode: jobs in the embedded worker
# --------------------------------------------------------------------------------------------
@pytest.fixture
def in_background(eager, settings):
    settings.BLINDSPOT_JOBS_IN_BACKGROUND = True
    yield background.WORKER
    background.WORKER.wait_idle(60)
    background.WORKER.stop()


def _until(check, timeout_s: float = 30):
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def _row(job: Job) -> Job:
    job.refresh_from_db()
    return job


@pytest.mark.django_db(transaction=True)
def test_in_the_demo_mode_a_button_answers_at_once_and_the_card_follows_the_job(
    in_background, client, curator, project
):
    client.force_login(curator)
    # Given the embedded worker busy with a job that moves only when the test says so
    with transaction.atomic():
        held = job_enqueue(kind=stepped_jobs.STEPPED, params={"steps": 3}, project=project)
    _until(lambda: _row(held).status == Job.Status.RUNNING)
    assert _count(_card(client, held)) == "0 / 3 · Waiting for the test"

    # When the curator presses a stage button, the page answers at once: the job waits its
    # turn and the flash says it started (not finished)
    run = ToyRun.objects.create(project=project, name="Run 1", created_by=curator)
    started = time.monotonic()
    response = client.post(reverse("toy-stage", args=[run.pk, "send"]), follow=True)
    assert time.monotonic() - started < 5
    send = Job.objects.get(kind="toy.send")
    assert send.status == Job.Status.QUEUED
    flashes = [str(m) for m in response.context["messages"]]
    assert flashes == [f"Send the items (job #{send.pk}) started."]
    assert f'id="job-{send.pk}"' in response.content.decode()

    # Then the held job's card moves one step at a time and polls until it ends
    for done in (1, 2):
        stepped_jobs.step(held.pk)
        _until(lambda done=done: _row(held).done == done)
        card = _card(client, held)
        assert _count(card) == f"{done} / 3 · Step {done} of 3"
        assert 'hx-trigger="every 1s"' in card
    stepped_jobs.step(held.pk)
    assert in_background.wait_idle(30)
    card = _card(client, held)
    assert _count(card) == "3 / 3 · Step 3 of 3"
    assert "100<small>%</small>" in card and 'hx-trigger="every 1s"' not in card
    # and the stage's job ran after it, in the same worker
    send = _row(send)
    assert (send.status, send.result) == (Job.Status.SUCCEEDED, {"sent": 3})
    assert send.started_at >= _row(held).finished_at
