"""Jobs started while the broker is down (issue 23, item 2), with a real Redis and a real worker.

A private ``redis-server`` on a port of its own (the shared one on 6379 is never touched) is
the broker. It is stopped; an evaluation import is started through the API (503, Retry-After,
a JSON body naming the job), a task upload through the curator's page (the job's card says
"Waiting to be sent") and one more job directly. Redis comes back; a Celery worker with its
beat starts, at the production sweep period (30 s); every job finishes within two minutes of
Redis answering again.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.urls import reverse

from annotator.models import Task
from annotator.platform import roles
from annotator.platform.jobs import job_enqueue
from annotator.platform.models import Job
from evaluation.families.retrieval import demo as retrieval_demo
from evaluation.models import BenchmarkVersion
from tests.annotator import celery_worker as cw
from tests.evaluation.helpers import eval_project, version_import_data
from tests.factories import QueueFactory, UserFactory, vqa_payload

pytestmark = [pytest.mark.celery, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis(port: int, workdir: Path) -> subprocess.Popen:
    server = shutil.which("redis-server")
    if server is None:
        cw.unavailable("redis-server is not installed")
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        cwd=workdir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    pytest.fail(f"the private redis-server did not start on port {port}")


def stop_redis(proc: subprocess.Popen) -> None:
    proc.terminate()
    proc.wait(timeout=10)


@contextmanager
def private_broker(url: str):
    """This process's Celery app sends to ``url``; our jobs are routed to the test's queue."""
    from blindspot.celery import app

    saved = {k: app.conf[k] for k in ("broker_url", "task_always_eager", "task_routes")}
    saved_env = os.environ.get("CELERY_BROKER_URL")
    os.environ["CELERY_BROKER_URL"] = url
    app.conf.update(
        broker_url=url,
        task_always_eager=False,
        task_routes={p: {"queue": cw.QUEUE} for p in ("annotator.*", "evaluation.*")},
    )
    cw._reset_celery_producer(app)
    try:
        yield
    finally:
        app.conf.update(saved)
        if saved_env is None:
            os.environ.pop("CELERY_BROKER_URL", None)
        else:
            os.environ["CELERY_BROKER_URL"] = saved_env
        cw._reset_celery_producer(app)


def test_jobs_started_while_redis_is_down_run_when_it_returns(tmp_path, client):
    if cw.connection.vendor != "postgresql":
        cw.unavailable("the worker must share the test database: PostgreSQL")
    curator = UserFactory(username="outage-curator", role=roles.CURATOR)
    project = eval_project()
    project.members.add(curator)
    queue = QueueFactory(project=project)
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    log = tmp_path / "worker.log"
    redis = start_redis(port, tmp_path)
    worker = None
    try:
        with private_broker(url):
            # Given the broker is down
            stop_redis(redis)
            client.force_login(curator)

            # When an import is started through the API
            started = time.monotonic()
            response = client.post(
                reverse("api-eval-import"),
                version_import_data(
                    "naturalbench_retrieval", "Retrieval", content=retrieval_demo.retrieval_items(4)
                ),
                content_type="application/json",
            )
            send_s = time.monotonic() - started
            # then it answers 503 with Retry-After and a JSON body naming the job it kept
            assert response.status_code == 503, response.content[:500]
            assert response["Content-Type"] == "application/json"
            assert response["Retry-After"] == "30"
            body = response.json()
            assert body["status"] == "waiting to be sent"
            assert "do not start it again" in body["message"]
            api_job = Job.objects.get(pk=body["job_id"])

            # and a task upload through the curator's page keeps its job, which says so
            upload = client.post(
                reverse("curator-queue-upload", args=[queue.pk]),
                {"text": "\n".join(json.dumps(vqa_payload(i)) for i in range(3))},
            )
            assert upload.status_code == 302
            page_job = Job.objects.exclude(pk=api_job.pk).get(kind="annotator.import_tasks")
            card = client.get(reverse("curator-job", args=[page_job.pk])).content.decode()
            assert "Waiting to be sent" in card and 'data-testid="job-retry"' in card
            assert "Send now" in card
            # (a person's "Send now" while it is still down keeps it waiting)
            again = client.post(reverse("curator-job-retry", args=[page_job.pk]), follow=True)
            assert "still does not answer" in again.content.decode()

            # and a job enqueued by code is kept the same way
            direct = job_enqueue(
                kind="annotator.import_tasks",
                params={"queue_id": queue.pk, "rows": [{"payload": vqa_payload(9)}]},
                created_by=curator,
                project=project,
                total=1,
            )
            jobs = [api_job.pk, page_job.pk, direct.pk]
            for job in Job.objects.filter(pk__in=jobs):
                assert job.waiting_to_send, job.pk
                assert (job.status, job.attempts, job.sent_at) == ("queued", 0, None)
                assert "Redis" in job.message

            # When Redis comes back, and a worker with its beat (production sweep: 30 s)
            redis = start_redis(port, tmp_path)
            back = time.monotonic()
            worker = cw.start_worker(
                log,
                "--pool=solo",
                "-B",
                "-s",
                str(tmp_path / "beat"),
                "-n",
                "pytest-outage@%h",
                env={"CELERY_BROKER_URL": url, "BLINDSPOT_JOB_SWEEP_S": "30"},
            )

            def all_done():
                return all(j.is_finished for j in Job.objects.filter(pk__in=jobs))

            cw.wait_for(all_done, log, "the kept jobs to finish", timeout=150)
            elapsed = time.monotonic() - back
    finally:
        if worker is not None:
            cw.stop_worker(worker)
        if redis.poll() is None:
            stop_redis(redis)

    # Then every job finished, well within two minutes of Redis answering again
    print(f"kept jobs finished {elapsed:.1f} s after Redis came back; a send took {send_s:.2f} s")
    assert elapsed < 120, elapsed
    assert send_s < 10, send_s  # a down broker does not hold the request long
    done = {j.pk: (j.status, j.attempts, j.send_error) for j in Job.objects.filter(pk__in=jobs)}
    assert done == {pk: ("succeeded", 1, "") for pk in jobs}, log.read_text()[-3000:]
    assert BenchmarkVersion.objects.get().item_count == 4
    assert Task.objects.filter(queue=queue).count() == 4
