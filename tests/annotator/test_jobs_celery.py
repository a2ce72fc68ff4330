"""Jobs through a REAL Celery worker: Redis broker, the pytest PostgreSQL database.

A worker (``celery -A blindspot worker --pool=solo``) is started as a subprocess for this module,
pointed at the test database by name and at its own Redis database number, and terminated in
teardown. Needs PostgreSQL (an in-memory SQLite test database cannot be shared with another
process) and Redis on 127.0.0.1:6379; in CI (``CI=true``) a missing Redis is a failure.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

import pytest
from django.db import connection
from django.utils import timezone

from annotator import jobs, services
from annotator.models import Assignment, Job, Task
from tests.factories import ProjectFactory, QueueFactory, TaskFactory, UserFactory, vqa_payload

pytestmark = [pytest.mark.celery, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
REDIS_DB = int(os.environ.get("BLINDSPOT_TEST_REDIS_DB", "14"))
BROKER = f"redis://127.0.0.1:6379/{REDIS_DB}"
# A queue of our own: test runs happening at the same time never take each other's messages.
QUEUE = f"blindspot-pytest-{os.getpid()}"
WAIT_S = 60


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI needs this test to run: {reason}")
    pytest.skip(reason)


def _database_url() -> str:
    s = connection.settings_dict
    auth = quote(s["USER"] or "", safe="")
    if s.get("PASSWORD"):
        auth += ":" + quote(s["PASSWORD"], safe="")
    host = s["HOST"] or "127.0.0.1"
    port = f":{s['PORT']}" if s.get("PORT") else ""
    return f"postgres://{auth}{'@' if auth else ''}{host}{port}/{s['NAME']}"


def _reset_celery_producer(app) -> None:
    """Forget cached broker pools so a changed ``broker_url`` takes effect.

    The old pools are only dropped, not closed: kombu's registries may still hand them to
    code that holds a reference, and a closed pool fails with "Acquire on closed pool".
    """
    app._pool = None
    app.amqp._producer_pool = None
    app.amqp.flush_routes()


@pytest.fixture(scope="module")
def celery_worker(django_db_setup, django_db_blocker, tmp_path_factory):
    if connection.vendor != "postgresql":
        _unavailable(
            "the Celery job tests need PostgreSQL: the worker process must share the test "
            "database (set DATABASE_URL=postgres://…)"
        )
    import redis

    try:
        broker = redis.Redis.from_url(BROKER, socket_connect_timeout=2)
        broker.ping()
    except redis.RedisError as exc:
        _unavailable(f"Redis does not answer at {BROKER}: {exc}")
    broker.delete(QUEUE)

    from blindspot.celery import app

    saved = {k: app.conf[k] for k in ("broker_url", "task_always_eager", "task_routes")}
    # Celery prefers the CELERY_BROKER_URL environment variable (CI exports it) to
    # ``conf.broker_url``: point both at the test's Redis database while the worker runs.
    saved_env = os.environ.get("CELERY_BROKER_URL")
    os.environ["CELERY_BROKER_URL"] = BROKER
    app.conf.update(
        broker_url=BROKER,
        task_always_eager=False,  # other tests switch eager mode on and may leave it on
        task_routes={"annotator.*": {"queue": QUEUE}},
    )
    _reset_celery_producer(app)

    log = tmp_path_factory.mktemp("celery") / "worker.log"
    env = {
        **os.environ,
        "DATABASE_URL": _database_url(),
        "CELERY_BROKER_URL": BROKER,
        "CELERY_TASK_ALWAYS_EAGER": "0",
        "DEBUG": os.environ.get("DEBUG", "1"),
        "CONN_MAX_AGE": "0",
    }
    celery = Path(sys.executable).with_name("celery")
    cmd = [
        str(celery) if celery.exists() else "celery",
        "-A",
        "blindspot",
        "worker",
        "--pool=solo",
        "--loglevel=INFO",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "--queues",
        QUEUE,
        "-n",
        f"pytest-{os.getpid()}@%h",
    ]
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + WAIT_S
        while b" ready." not in log.read_bytes():
            if proc.poll() is not None:
                pytest.fail(f"the Celery worker exited ({proc.returncode}):\n{log.read_text()}")
            if time.monotonic() > deadline:
                pytest.fail(f"the Celery worker was not ready in {WAIT_S} s:\n{log.read_text()}")
            time.sleep(0.2)
        yield log
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        app.conf.update(saved)
        if saved_env is None:
            os.environ.pop("CELERY_BROKER_URL", None)
        else:
            os.environ["CELERY_BROKER_URL"] = saved_env
        _reset_celery_producer(app)
        broker.delete(QUEUE)


def wait_for(predicate, log: Path, what: str, timeout: float = WAIT_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"timed out after {timeout} s waiting for {what}; worker log:\n{log.read_text()}")


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


def test_import_job_succeeds_with_progress(celery_worker, curator_queue):
    # Given 250 rows in the shape the curator upload sends
    curator, queue = curator_queue
    rows = [{"payload": vqa_payload(i), "gold": None, "id": f"item-{i}"} for i in range(250)]
    rows[7]["gold"] = {"answer": "No"}
    # When the import is enqueued through the service layer
    job = services.job_enqueue(
        kind="annotator.import_tasks",
        params={"queue_id": queue.pk, "rows": rows},
        created_by=curator,
        project=queue.project,
        total=len(rows),
    )
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
    job = services.job_enqueue(
        kind="annotator.import_tasks",
        params={"queue_id": queue.pk, "rows": rows},
        created_by=curator,
        project=queue.project,
        total=len(rows),
    )
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
    job = services.job_enqueue(
        kind="annotator.import_tasks",
        params={"queue_id": queue.pk, "rows": text},
        created_by=curator,
        project=queue.project,
        total=4,
    )
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
