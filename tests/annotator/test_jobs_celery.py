"""Jobs through a REAL Celery worker (``celery -A blindspot worker --pool=solo``), started for
this module by ``tests.annotator.celery_worker`` and terminated in teardown."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from annotator import jobs, services
from annotator.models import Assignment, Task
from annotator.platform.jobs import job_enqueue
from annotator.platform.models import Job
from tests.annotator.celery_worker import broker_for_tests, start_worker, stop_worker, wait_for
from tests.factories import ProjectFactory, QueueFactory, TaskFactory, UserFactory, vqa_payload

pytestmark = [pytest.mark.celery, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def celery_worker(django_db_setup, django_db_blocker, tmp_path_factory):
    with broker_for_tests():
        log = tmp_path_factory.mktemp("celery") / "worker.log"
        proc = start_worker(log, "--pool=solo", "-n", "pytest-solo@%h")
        try:
            yield log
        finally:
            stop_worker(proc)


def finished(job: Job, log: Path) -> Job:
    def check():
        job.refresh_from_db()
        return job if job.is_finished else None

    return wait_for(check, log, f"job {job.pk} to finish")


@pytest.fixture
def curator_queue():
    curator = UserFactory(username="jobs-curator")
    queue = QueueFactory(project=ProjectFactory(members=[curator]))
    return curator, queue


def import_job(curator, queue, rows, *, total: int):
    """Enqueue the import of ``rows`` into ``queue`` as the curator upload does."""
    return job_enqueue(
        kind="annotator.import_tasks",
        params={"queue_id": queue.pk, "rows": rows},
        created_by=curator,
        project=queue.project,
        total=total,
    )


def test_import_job_succeeds_with_progress(celery_worker, curator_queue):
    # Given 250 rows in the shape the curator upload sends
    curator, queue = curator_queue
    rows = [{"payload": vqa_payload(i), "gold": None, "id": f"item-{i}"} for i in range(250)]
    rows[7]["gold"] = {"answer": "No"}
    # When the import is enqueued through the service layer
    job = import_job(curator, queue, rows, total=len(rows))
    assert job.status == Job.Status.QUEUED
    # Then the worker runs it to success with full progress
    job = finished(job, celery_worker)
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert (job.done, job.total, job.percent) == (250, 250, 100)
    assert job.message == "Imported 250 tasks"
    assert job.result == {"created": 250, "queue_id": queue.pk}
    assert job.error == ""
    assert job.attempts == 1
    assert job.started_at is not None and job.finished_at >= job.started_at
    tasks = Task.objects.filter(queue=queue)
    assert tasks.count() == 250
    assert tasks.filter(is_gold=True).count() == 1
    assert tasks.get(external_id="item-7").gold == {"answer": "No"}
    # And a redelivered message leaves the finished job alone (idempotent)
    jobs.import_tasks.apply(args=[job.pk])
    job.refresh_from_db()
    assert (job.status, job.attempts) == (Job.Status.SUCCEEDED, 1)
    assert tasks.count() == 250


def test_import_job_with_invalid_rows_fails_with_line_numbers(celery_worker, curator_queue):
    curator, queue = curator_queue
    rows = [{"payload": vqa_payload(i)} for i in range(5)]
    rows[1]["payload"]["choices"] = ["Only one"]
    rows[3]["payload"].pop("question")
    job = import_job(curator, queue, rows, total=len(rows))
    job = finished(job, celery_worker)
    assert job.status == Job.Status.FAILED
    lines = job.error.splitlines()
    assert lines[0] == "2 of 5 task(s) do not fit the vqa_choice kind; nothing was imported."
    assert lines[1].startswith("line 2: payload.choices: ")
    assert lines[2].startswith("line 4: payload: 'question' is a required property")
    assert len(lines) == 3
    assert job.finished_at is not None
    assert job.result is None
    assert not Task.objects.filter(queue=queue).exists()


def test_import_job_with_malformed_jsonl_fails_with_line_numbers(celery_worker, curator_queue):
    curator, queue = curator_queue
    text = "\n".join(
        [json.dumps(vqa_payload(0)), json.dumps(vqa_payload(1)), "{not json", "[1, 2]"]
    )
    job = import_job(curator, queue, text, total=4)
    job = finished(job, celery_worker)
    assert job.status == Job.Status.FAILED
    lines = job.error.splitlines()
    assert lines[0] == "2 line(s) could not be read."
    assert lines[1].startswith("line 3: not valid JSON: ")
    assert lines[2] == "line 4: each line must be a JSON object"
    assert not Task.objects.filter(queue=queue).exists()


def test_expire_leases_job_returns_leases(celery_worker, curator_queue):
    # Given a live lease, then two leases that ran out long ago (closed tabs)
    _curator, queue = curator_queue
    first, second = TaskFactory(queue=queue), TaskFactory(queue=queue)
    p1, p2, p3 = (UserFactory(username=f"jobs-worker-{i}") for i in range(3))
    assert services.assignment_claim(queue=queue, annotator=p3).assignment.task_id == first.id
    long_ago = timezone.now() - 3 * queue.lease_ttl
    assert services.assignment_claim(queue=queue, annotator=p1, now=long_ago).task == first
    assert services.assignment_claim(queue=queue, annotator=p2, now=long_ago).task == second
    assert [t.active_count for t in Task.objects.order_by("id")] == [2, 1]
    # When the beat job runs in the worker
    jobs.expire_leases.delay()

    # Then both stale leases go back to the pool; the live one stays
    def returned():
        return list(Task.objects.order_by("id").values_list("active_count", flat=True)) == [1, 0]

    wait_for(returned, celery_worker, "expire_leases to return the stale leases")
    states = dict(Assignment.objects.values_list("annotator__username", "state"))
    assert states == {
        "jobs-worker-0": "expired",
        "jobs-worker-1": "expired",
        "jobs-worker-2": "leased",
    }
    # And run in-process, the job reports how many it returned (none left now, then one)
    assert jobs.expire_leases() == 0
    Assignment.objects.filter(annotator=p3).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert jobs.expire_leases() == 1
    first.refresh_from_db()
    assert first.active_count == 0
