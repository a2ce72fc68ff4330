"""A whole Celery worker killed mid-job (main process and pool children, ``kill -9``): a new
worker with the beat sees the job end, run again once or failed with "The worker stopped".

Small thresholds reach the workers through the environment: a heartbeat every 0.5 s, lost
after 3 s of silence, a sweep every second (production: 10 s, 60 s, 30 s).
"""

from __future__ import annotations

import os
import signal
import time

import pytest
from django.urls import reverse

from annotator.models import Task
from annotator.platform import roles
from annotator.platform.jobs import job_enqueue
from annotator.platform.models import Job
from tests.annotator import slow_jobs
from tests.annotator.celery_worker import (
    broker_for_tests,
    process_group,
    start_worker,
    stop_worker,
    wait_for,
)
from tests.factories import ProjectFactory, QueueFactory, UserFactory, vqa_payload

pytestmark = [pytest.mark.celery, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

FAST = {
    "BLINDSPOT_JOB_HEARTBEAT_S": "0.5",
    "BLINDSPOT_JOB_LOST_AFTER_S": "3",
    "BLINDSPOT_JOB_SWEEP_S": "1",
}
WORKER = ["-I", "tests.annotator.slow_jobs", "--pool=prefork", "--concurrency=2"]


def enqueue(kind: str, queue, curator, *, n: int, sleep_s: float) -> Job:
    rows = [{"payload": vqa_payload(i), "gold": None, "id": f"item-{i}"} for i in range(n)]
    return job_enqueue(
        kind=kind,
        params={"queue_id": queue.pk, "rows": rows, "sleep_s": sleep_s},
        created_by=curator,
        project=queue.project,
        total=n,
    )


def test_a_killed_worker_s_jobs_run_again_or_fail_and_nothing_is_written_twice(tmp_path, client):
    curator = UserFactory(username="lost-curator", role=roles.CURATOR)
    project = ProjectFactory(members=[curator])
    safe_queue, unsafe_queue = QueueFactory(project=project), QueueFactory(project=project)
    log = tmp_path / "worker.log"
    with broker_for_tests(routes=("tests.*",)):
        # Given a prefork worker (a main process and two pool children in their own group)
        first = start_worker(log, *WORKER, "-n", "pytest-first@%h", env=FAST)
        try:
            # running an import that is safe to run again and one that is not
            safe = enqueue(slow_jobs.SAFE, safe_queue, curator, n=5, sleep_s=4)
            unsafe = enqueue(slow_jobs.UNSAFE, unsafe_queue, curator, n=5, sleep_s=30)

            def both_beating():
                rows = list(Job.objects.filter(pk__in=[safe.pk, unsafe.pk]))
                return len(rows) == 2 and all(
                    j.status == "running" and j.heartbeat_at and j.heartbeat_at > j.started_at
                    for j in rows
                )

            wait_for(both_beating, log, "both jobs to run and beat")
            group = process_group(first.pid)
            assert len(group) >= 3, group
            safe.refresh_from_db()
            unsafe.refresh_from_db()
            first_worker, unsafe_worker = safe.worker, unsafe.worker
            first_token = safe.attempt_token
            children = {int(w.rsplit(" ", 1)[1]) for w in (first_worker, unsafe_worker)}
            assert children <= group - {first.pid}  # pool children ran them

            # When the whole worker is killed mid-job
            os.killpg(first.pid, signal.SIGKILL)
            first.wait(timeout=10)
            wait_for(lambda: not process_group(first.pid), log, "the killed group to be gone")
            killed_at = time.monotonic()
        finally:
            stop_worker(first)
        assert Job.objects.get(pk=safe.pk).status == "running"  # what it stayed forever before

        # And a new worker starts, with the beat
        second = start_worker(
            log, *WORKER, "-B", "-s", str(tmp_path / "beat"), "-n", "pytest-second@%h", env=FAST
        )
        try:

            def both_finished():
                return all(j.is_finished for j in Job.objects.filter(pk__in=[safe.pk, unsafe.pk]))

            wait_for(both_finished, log, "both jobs to end")
            elapsed = time.monotonic() - killed_at
            # and the new worker, having swept, still hands out work
            after = enqueue(slow_jobs.SAFE, QueueFactory(project=project), curator, n=1, sleep_s=0)
            wait_for(
                lambda: Job.objects.get(pk=after.pk).status == "succeeded",
                log,
                "a job enqueued after the sweep to succeed",
            )
        finally:
            stop_worker(second)

    # Then both ended well within two minutes of the worker's death
    assert elapsed < 60, elapsed
    # the safe import ran again, on the new worker, once
    safe.refresh_from_db()
    assert safe.status == "succeeded", (safe.error, log.read_text())
    assert safe.attempts == 2
    assert safe.worker != first_worker
    assert safe.heartbeat_at is None
    assert safe.result == {"created": 5, "queue_id": safe_queue.pk}
    assert safe.message == "Imported 5 tasks"
    # (sent again by the sweeper under a new token; the old message waits for the one-hour
    # visibility timeout, and will be dropped as stale then)
    assert safe.attempt_token != first_token
    # and wrote every task exactly once
    assert sorted(Task.objects.filter(queue=safe_queue).values_list("external_id", flat=True)) == [
        f"item-{i}" for i in range(5)
    ]
    # the other one failed, saying why, and wrote nothing
    unsafe.refresh_from_db()
    assert unsafe.status == "failed"
    assert unsafe.error.startswith(
        f"The worker stopped: no sign of life from {unsafe_worker} since "
    )
    assert unsafe.error.endswith(
        "This kind of job is not run again automatically. Retry it to run it again."
    )
    assert unsafe.attempts == 1
    assert not Task.objects.filter(queue=unsafe_queue).exists()
    # and its page offers the curator a retry
    client.force_login(curator)
    page = client.get(reverse("curator-job", args=[unsafe.pk])).content.decode()
    assert 'data-testid="job-retry"' in page
    assert "The worker stopped" in page


def test_a_killed_pool_child_s_job_runs_again_at_once_or_fails(tmp_path):
    # Given a worker whose two pool children run a rerun-safe import and one that is not
    curator = UserFactory(username="child-curator", role=roles.CURATOR)
    project = ProjectFactory(members=[curator])
    safe_queue, unsafe_queue = QueueFactory(project=project), QueueFactory(project=project)
    log = tmp_path / "worker.log"
    # No sweeps here (one a minute): what follows is the redelivery's own doing.
    env = {**FAST, "BLINDSPOT_JOB_LOST_AFTER_S": "60", "BLINDSPOT_JOB_SWEEP_S": "60"}
    with broker_for_tests(routes=("tests.*",)):
        worker = start_worker(log, *WORKER, "-n", "pytest-children@%h", env=env)
        try:
            safe = enqueue(slow_jobs.SAFE, safe_queue, curator, n=3, sleep_s=3)
            unsafe = enqueue(slow_jobs.UNSAFE, unsafe_queue, curator, n=3, sleep_s=30)

            def both_running():
                rows = list(Job.objects.filter(pk__in=[safe.pk, unsafe.pk], status="running"))
                return rows if len(rows) == 2 else None

            first = {j.pk: j.worker for j in wait_for(both_running, log, "both jobs to run")}
            # When the pool children running them are killed (the main process lives on, puts
            # the messages back, and starts new children)
            for worker_name in first.values():
                os.kill(int(worker_name.rsplit(" ", 1)[1]), signal.SIGKILL)

            # Then, well before any sweep, the safe import runs again on a new child, and the
            # other fails: its child is gone, so nobody runs it
            def both_finished():
                return all(j.is_finished for j in Job.objects.filter(pk__in=[safe.pk, unsafe.pk]))

            wait_for(both_finished, log, "both jobs to end", timeout=40)
        finally:
            stop_worker(worker)
    safe.refresh_from_db()
    assert (safe.status, safe.attempts) == ("succeeded", 2), (safe.error, log.read_text())
    assert safe.worker != first[safe.pk]
    assert Task.objects.filter(queue=safe_queue).count() == 3
    unsafe.refresh_from_db()
    assert unsafe.status == "failed"
    assert unsafe.error.startswith(f"The worker stopped: no sign of life from {first[unsafe.pk]}")
    assert not Task.objects.filter(queue=unsafe_queue).exists()
