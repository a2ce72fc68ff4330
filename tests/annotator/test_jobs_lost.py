"""Lost jobs without a worker: heartbeats, stale deliveries, the sweeper, re-runs and the retry.

``run_job`` is driven with a stand-in for Celery's task (its ``request`` says which delivery this
is), so each case (a stale message, a second copy, a dead holder) is set up exactly. The real
worker killed mid-job is in ``test_jobs_worker_lost.py``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.conf import settings as django_settings
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from annotator import jobs
from annotator.models import Task
from annotator.platform import roles
from annotator.platform.jobs import job_enqueue, job_task
from annotator.platform.models import Job
from annotator.platform.worker import (
    JOB_OPTIONS,
    _rerun_safe,
    heartbeats,
    jobs_sweep_lost,
    run_job,
    sweep_lost_jobs,
)
from tests.factories import ProjectFactory, UserFactory, vqa_payload

NOW = timezone.now()


def delivery(task_id: str, *, rerun_safe: bool = True) -> SimpleNamespace:
    """What ``run_job`` reads from a bound Celery task, for a message taken from the broker."""
    return SimpleNamespace(
        request=SimpleNamespace(id=task_id, is_eager=False, retries=0), rerun_safe=rerun_safe
    )


def import_job(queue, n: int = 3, **fields) -> Job:
    rows = [{"payload": vqa_payload(i), "gold": None, "id": f"item-{i}"} for i in range(n)]
    return Job.objects.create(
        kind="annotator.import_tasks",
        params={"queue_id": queue.pk, "rows": rows},
        project=queue.project,
        total=n,
        **fields,
    )


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def running(job: Job, *, worker: str, heartbeat_ago: float, attempts: int = 1) -> Job:
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.RUNNING,
        worker=worker,
        heartbeat_at=timezone.now() - timedelta(seconds=heartbeat_ago),
        started_at=timezone.now() - timedelta(seconds=heartbeat_ago + 5),
        attempts=attempts,
    )
    job.refresh_from_db()
    return job


def test_settings_configure_the_broker_and_the_sweep_deliberately():
    assert django_settings.CELERY_TASK_ACKS_LATE is True
    assert django_settings.CELERY_TASK_REJECT_ON_WORKER_LOST is True
    assert django_settings.CELERY_WORKER_PREFETCH_MULTIPLIER == 1
    timeout = django_settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"]
    # Above the longest retry countdown, so a countdown message is never handed out twice.
    assert timeout > JOB_OPTIONS["retry_backoff_max"]
    sweep = django_settings.CELERY_BEAT_SCHEDULE["sweep-lost-jobs"]
    assert sweep["task"] == "annotator.sweep_lost_jobs"
    # A job's worker dies right after a beat: lost after LOST_AFTER, seen at the next sweep.
    worst = django_settings.BLINDSPOT_JOB_LOST_AFTER_S + sweep["schedule"].total_seconds()
    assert worst <= 120
    assert (
        django_settings.BLINDSPOT_JOB_HEARTBEAT_S * 3 <= django_settings.BLINDSPOT_JOB_LOST_AFTER_S
    )


def test_job_kinds_declare_whether_a_rerun_is_safe():
    # The kinds that write nothing twice when run again (all or nothing with the job's result,
    # update_or_create on unique rows, or skipping what is done); any other kind whose worker
    # stops fails with "The worker stopped" and waits for a person's retry.
    from celery import current_app

    current_app.loader.import_default_modules()
    safe = sorted(
        name
        for name, task in current_app.tasks.items()
        if getattr(task, "rerun_safe", False) and not name.startswith("tests.")  # slow_jobs
    )
    assert safe == [
        "annotator.import_tasks",
        "annotator.settle_selection",
        "annotator.settle_tasks",
        "curation.embed_chunk",
        "curation.embed_corpus",
        "curation.generate_batch",
        "curation.make_thumbnails",
        "curation.mine_chunk",
        "evaluation.compute_metrics",
        "evaluation.run_model",
    ]
    assert _rerun_safe("annotator.import_tasks") is True
    assert _rerun_safe("evaluation.import_file") is False
    assert _rerun_safe("evaluation.nothing_by_that_name") is False


def test_a_worker_never_imports_the_job_modules_again(monkeypatch):
    # In a worker the import signal runs django.setup() and the checks again, after which the
    # pool child stays silent and the worker hands out no more tasks (seen with a real worker).
    from celery import current_app

    def imported():
        raise AssertionError("imported the job modules again")

    monkeypatch.setattr(current_app.loader, "worker_initialized", True)
    monkeypatch.setattr(current_app.loader, "import_default_modules", imported)
    assert job_task("curation.no_such_kind") is None
    assert job_task("annotator.import_tasks").name == "annotator.import_tasks"
    assert _rerun_safe("curation.no_such_kind") is False


@pytest.mark.django_db
def test_enqueue_sends_the_attempt_token_as_the_celery_id(
    queue, django_capture_on_commit_callbacks, monkeypatch
):
    sent = []
    monkeypatch.setattr(
        jobs.import_tasks, "apply_async", lambda args, task_id: sent.append((args, task_id))
    )
    with django_capture_on_commit_callbacks(execute=True):
        job = job_enqueue(kind="annotator.import_tasks", params={"queue_id": queue.pk, "rows": []})
    assert len(job.attempt_token) == 36
    assert sent == [([job.pk], job.attempt_token)]


@pytest.mark.django_db(transaction=True)
def test_run_job_beats_while_working_and_clears_the_heartbeat_at_the_end(settings):
    # Given heartbeats every 50 ms and a job whose work goes 0.6 s without a progress update
    settings.BLINDSPOT_JOB_HEARTBEAT_S = 0.05
    job = Job.objects.create(kind="annotator.test", attempt_token="token-1")
    seen = []

    def work(job):
        for _ in range(3):
            time.sleep(0.2)
            seen.append(Job.objects.values_list("heartbeat_at", flat=True).get(pk=job.pk))
        return {"ok": True}

    # When a broker delivery carrying the job's token runs it
    run_job(delivery("token-1"), job.pk, work)

    # Then the heartbeat moved on while it worked, and the finished row keeps no heartbeat
    assert seen[0] < seen[1] < seen[2]
    job.refresh_from_db()
    assert (job.status, job.result, job.attempts) == ("succeeded", {"ok": True}, 1)
    assert job.heartbeat_at is None
    assert job.worker == f"{socket.gethostname()} {os.getpid()}"
    assert job.attempt_token == "token-1"


def _until(check, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _beaters() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "job-heartbeats" and t.is_alive()]


@pytest.mark.django_db(transaction=True)
def test_one_thread_beats_for_every_job_the_process_runs(settings):
    # Given heartbeats every 50 ms and two running jobs of this process, silent for 5 minutes
    settings.BLINDSPOT_JOB_HEARTBEAT_S = 0.05
    old = timezone.now() - timedelta(minutes=5)
    held = [
        Job.objects.create(
            kind="annotator.test", attempt_token=f"t{i}", status="running", heartbeat_at=old
        )
        for i in range(2)
    ]
    try:
        # When both are held
        for job in held:
            heartbeats.hold(job.pk, job.attempt_token)

        # Then both beat, from one thread
        def beaten():
            beats = Job.objects.filter(pk__in=[j.pk for j in held]).values_list(
                "heartbeat_at", flat=True
            )
            return all(beat > old for beat in beats)

        assert _until(beaten)
        assert len(_beaters()) == 1
    finally:
        for job in held:
            heartbeats.release(job.pk, job.attempt_token)
    # And with nothing held the thread ends (its connection closed with it)
    assert _until(lambda: not _beaters())


@pytest.mark.django_db(transaction=True)
def test_a_job_another_run_took_over_is_no_longer_beaten(settings):
    # Given a held job that the sweeper then gave to another run (a new attempt token)
    settings.BLINDSPOT_JOB_HEARTBEAT_S = 0.05
    old = timezone.now() - timedelta(minutes=5)
    job = Job.objects.create(kind="annotator.test", attempt_token="mine", status="running")
    heartbeats.hold(job.pk, "mine")
    try:
        Job.objects.filter(pk=job.pk).update(attempt_token="theirs", heartbeat_at=old)
        # Then this process lets it go at its next beat, and never writes its heartbeat
        assert _until(lambda: job.pk not in heartbeats.held())
        assert Job.objects.values_list("heartbeat_at", flat=True).get(pk=job.pk) == old
    finally:
        heartbeats.release(job.pk, "mine")


@pytest.mark.django_db
def test_a_queued_job_runs_in_few_statements(project, curator, django_assert_num_queries):
    # Given a job of a project without webhooks, queued with its message's token
    job = Job.objects.create(
        kind="annotator.test", attempt_token="t", project=project, created_by=curator
    )
    seen, read = [], []

    def work(job):
        seen.append(job.created_by.username)
        read.append((job, Job.objects.select_related("created_by").get(pk=job.pk)))
        return {}

    # When its message is delivered: the claim with the row and who started it (PostgreSQL: one
    # statement; else the UPDATE, then the row), the work's own read, then the end: BEGIN,
    # "succeeded", whether any hook listens, COMMIT
    with django_assert_num_queries(6 if connection.vendor == "postgresql" else 7):
        run_job(delivery("t"), job.pk, work)
    # Then it ran once, as its starter
    assert seen == [curator.username]
    # And the row it was handed is the row as claimed, field for field, with its starter
    (given, stored), fields = read[0], Job._meta.concrete_fields
    assert [getattr(given, f.attname) for f in fields] == [
        getattr(stored, f.attname) for f in fields
    ]
    assert given.created_by == stored.created_by and given.created_by.username == curator.username
    assert given.status == "running" and given.attempts == 1
    job.refresh_from_db()
    assert (job.status, job.attempts, job.attempt_token) == ("succeeded", 1, "t")
    assert job.started_at is not None and job.worker


@pytest.mark.django_db
def test_a_stale_delivery_is_dropped():
    # Given a job the sweeper sent again under a new token
    job = Job.objects.create(kind="annotator.test", attempt_token="new")
    calls = []
    # When the old message comes back
    run_job(delivery("old"), job.pk, calls.append)
    # Then it does not run, and the job waits for its own message
    assert calls == []
    job.refresh_from_db()
    assert (job.status, job.attempts, job.worker) == ("queued", 0, "")
    # And the right message runs it
    run_job(delivery("new"), job.pk, lambda job: {"ran": True})
    job.refresh_from_db()
    assert (job.status, job.result, job.attempts) == ("succeeded", {"ran": True}, 1)


@pytest.mark.django_db
def test_a_second_copy_of_a_job_running_elsewhere_is_dropped():
    # Given a job another machine runs and beat for a second ago
    job = running(
        Job.objects.create(kind="annotator.test", attempt_token="t"),
        worker="other-host 4242",
        heartbeat_ago=1,
    )
    calls = []
    # When the same message is delivered again (the visibility timeout ran out meanwhile)
    run_job(delivery("t"), job.pk, calls.append)
    # Then it is dropped and the running job is left alone
    assert calls == []
    job.refresh_from_db()
    assert (job.status, job.attempts, job.worker) == ("running", 1, "other-host 4242")


@pytest.mark.django_db
def test_a_redelivery_after_the_pool_child_died_runs_a_rerun_safe_job_at_once(queue):
    # Given an import whose pool child on this machine was killed a moment ago
    job = running(
        import_job(queue, attempt_token="t"),
        worker=f"{socket.gethostname()} {dead_pid()}",
        heartbeat_ago=1,
    )
    # When Celery puts its message back (reject_on_worker_lost) and another child takes it
    run_job(delivery("t"), job.pk, jobs.import_tasks_work)
    # Then the job runs again here, once
    job.refresh_from_db()
    assert (job.status, job.attempts, job.result) == (
        "succeeded",
        2,
        {"created": 3, "queue_id": queue.pk},
    )
    assert Task.objects.filter(queue=queue).count() == 3


@pytest.mark.django_db
def test_a_redelivery_of_a_job_that_is_not_rerun_safe_fails_it():
    job = running(
        Job.objects.create(kind="annotator.test", attempt_token="t"),
        worker="other-host 4242",
        heartbeat_ago=django_settings.BLINDSPOT_JOB_LOST_AFTER_S + 5,
    )
    calls = []
    run_job(delivery("t", rerun_safe=False), job.pk, calls.append)
    assert calls == []
    job.refresh_from_db()
    assert job.status == "failed"
    assert job.error.startswith("The worker stopped: no sign of life from other-host 4242 since ")
    assert job.error.endswith(
        " UTC. This kind of job is not run again automatically. Retry it to run it again."
    )
    assert job.finished_at is not None and job.heartbeat_at is None


@pytest.mark.django_db
def test_sweeper_sends_a_silent_rerun_safe_job_again_and_it_imports_once(
    queue, django_capture_on_commit_callbacks, monkeypatch
):
    # Given an import whose worker died after committing the tasks but before writing
    # "succeeded" (the worst moment), silent for longer than the threshold
    job = import_job(queue, n=4, attempt_token="first")
    run_job(delivery("first"), job.pk, lambda job: (jobs.import_tasks_work(job), 1 / 0))
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING, error="", finished_at=None)
    job = running(
        job, worker="gone-host 7", heartbeat_ago=django_settings.BLINDSPOT_JOB_LOST_AFTER_S + 1
    )
    assert Task.objects.filter(queue=queue).count() == 4
    sent = []
    monkeypatch.setattr(
        jobs.import_tasks, "apply_async", lambda args, task_id: sent.append((args, task_id))
    )

    # When the sweeper runs
    with django_capture_on_commit_callbacks(execute=True):
        counts = sweep_lost_jobs()

    # Then the job is queued again under a new token, and its message carries that token
    assert counts == {"rerun": 1, "failed": 0, "sent": 0, "work_files_deleted": 0}
    job.refresh_from_db()
    assert job.status == "queued"
    assert job.attempt_token not in ("", "first")
    assert sent == [([job.pk], job.attempt_token)]
    assert job.message == ("The worker stopped (gone-host 7); running it again (attempt 2 of 3).")
    # And the old message, if it comes back, is dropped; the new one finishes the job
    run_job(delivery("first"), job.pk, jobs.import_tasks_work)
    assert Job.objects.get(pk=job.pk).status == "queued"
    run_job(delivery(job.attempt_token), job.pk, jobs.import_tasks_work)
    job.refresh_from_db()
    assert (job.status, job.attempts) == ("succeeded", 2)
    assert job.result == {"created": 4, "queue_id": queue.pk}
    assert job.message == "Imported 4 tasks"
    # And no task was written twice
    assert Task.objects.filter(queue=queue).count() == 4
    assert sorted(Task.objects.values_list("external_id", flat=True)) == [
        f"item-{i}" for i in range(4)
    ]


@pytest.mark.django_db
def test_sweeper_fails_what_it_may_not_run_again_and_leaves_live_jobs_alone(queue, settings):
    settings.BLINDSPOT_JOB_LOST_AFTER_S = 60
    lost = 61
    not_safe = running(
        Job.objects.create(kind="curation.some_unsafe_kind"), worker="h 1", heartbeat_ago=lost
    )
    worn_out = running(import_job(queue), worker="h 2", heartbeat_ago=lost, attempts=3)
    alive = running(import_job(queue), worker="h 3", heartbeat_ago=30)
    legacy = Job.objects.create(
        kind="curation.some_unsafe_kind",
        status=Job.Status.RUNNING,
        started_at=timezone.now() - timedelta(hours=2),
    )
    # queued for a retry (countdown up to 300 s) by a worker that then died
    waiting = import_job(
        queue,
        status=Job.Status.QUEUED,
        started_at=timezone.now() - timedelta(seconds=200),
        heartbeat_at=timezone.now() - timedelta(seconds=200),
    )
    waited_too_long = Job.objects.create(
        kind="curation.some_unsafe_kind",
        status=Job.Status.QUEUED,
        started_at=timezone.now() - timedelta(seconds=400),
        heartbeat_at=timezone.now() - timedelta(seconds=400),
    )
    never_started = import_job(queue)

    assert jobs_sweep_lost() == {"rerun": 0, "failed": 4}

    status = dict(Job.objects.values_list("pk", "status"))
    assert status == {
        not_safe.pk: "failed",
        worn_out.pk: "failed",
        alive.pk: "running",
        legacy.pk: "failed",
        waiting.pk: "queued",
        waited_too_long.pk: "failed",
        never_started.pk: "queued",
    }
    worn_out.refresh_from_db()
    assert "It was not run again after 3 attempts. Retry it to run it again." in worn_out.error
    legacy.refresh_from_db()
    assert legacy.error.startswith("The worker stopped: no sign of life from its worker since ")
    assert not Task.objects.exists()


# --- the retry ---------------------------------------------------------------------------------
@pytest.fixture
def stopped_job(project):
    return Job.objects.create(
        kind="annotator.import_tasks",
        params={"queue_id": 1, "rows": []},
        project=project,
        status=Job.Status.FAILED,
        error="The worker stopped: no sign of life from h 1 since 2026-01-01 00:00:00 UTC.",
    )


@pytest.mark.django_db
def test_curator_of_the_project_sees_the_retry_on_the_card_and_retries(
    client, curator, stopped_job, django_capture_on_commit_callbacks
):
    client.force_login(curator)
    page = client.get(reverse("curator-job", args=[stopped_job.pk])).content.decode()
    assert page.count('data-testid="job-retry"') == 1
    card = client.get(reverse("curator-job", args=[stopped_job.pk]), HTTP_HX_REQUEST="true")
    assert 'data-testid="job-retry"' in card.content.decode()

    with django_capture_on_commit_callbacks(execute=False):
        response = client.post(reverse("curator-job-retry", args=[stopped_job.pk]))

    copy = Job.objects.exclude(pk=stopped_job.pk).get()
    assert response.url == reverse("curator-job", args=[copy.pk])
    assert (copy.kind, copy.status, copy.params, copy.project, copy.created_by) == (
        "annotator.import_tasks",
        "queued",
        {"queue_id": 1, "rows": []},
        stopped_job.project,
        curator,
    )
    assert copy.attempt_token and copy.attempt_token != stopped_job.attempt_token
    stopped_job.refresh_from_db()
    assert stopped_job.status == "failed"


@pytest.mark.django_db
def test_only_a_failed_job_is_retried(client, curator, project):
    client.force_login(curator)
    live = Job.objects.create(kind="annotator.import_tasks", project=project)
    response = client.post(reverse("curator-job-retry", args=[live.pk]), follow=True)
    assert "Only a failed job can be retried." in response.content.decode()
    assert Job.objects.count() == 1


@pytest.mark.django_db
def test_no_retry_outside_the_curators_of_the_jobs_project(client, researcher, stopped_job):
    # A researcher of the project sees the job but gets no retry
    client.force_login(researcher)
    page = client.get(reverse("curator-job", args=[stopped_job.pk])).content.decode()
    assert "The worker stopped" in page
    assert 'data-testid="job-retry"' not in page
    assert client.post(reverse("curator-job-retry", args=[stopped_job.pk])).status_code == 404
    # A curator of another project gets 404, even for a job they started themselves
    stranger = UserFactory(username="stranger", role=roles.CURATOR)
    ProjectFactory(members=[stranger])
    Job.objects.filter(pk=stopped_job.pk).update(created_by=stranger)
    client.force_login(stranger)
    assert client.post(reverse("curator-job-retry", args=[stopped_job.pk])).status_code == 404
    assert Job.objects.count() == 1


@pytest.mark.django_db
def test_failed_card_on_a_recipe_page_links_to_the_job_page(stopped_job):
    from django.template.loader import render_to_string

    html = render_to_string("annotator/curator/_job_card.html", {"job": stopped_job})
    assert reverse("curator-job", args=[stopped_job.pk]) in html
    assert 'data-testid="job-retry"' not in html
