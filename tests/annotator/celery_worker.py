"""Real Celery workers for tests: Redis broker, the pytest PostgreSQL database.

A worker is started as a subprocess in its own process group (so a test can kill the main
process and its pool children at once), pointed at the test database by name and at the test's
Redis database number, listening on a queue of the test run's own. Needs PostgreSQL (an
in-memory SQLite test database cannot be shared with another process) and Redis on
127.0.0.1:6379; in CI (``CI=true``) a missing Redis is a failure.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
REDIS_DB = int(os.environ.get("BLINDSPOT_TEST_REDIS_DB", "14"))
BROKER = f"redis://127.0.0.1:6379/{REDIS_DB}"
# A queue of our own: test runs happening at the same time never take each other's messages.
QUEUE = f"blindspot-pytest-{os.getpid()}"
WAIT_S = 60


def unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI needs this test to run: {reason}")
    pytest.skip(reason)


def database_url() -> str:
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


@contextmanager
def broker_for_tests(routes: tuple[str, ...] = ("annotator.*",)):
    """Point this process's Celery app at the test broker, sending ``routes`` to ``QUEUE``;
    yields the Redis client. Skips (fails in CI) without PostgreSQL or Redis."""
    if connection.vendor != "postgresql":
        unavailable(
            "the Celery job tests need PostgreSQL: the worker process must share the test "
            "database (set DATABASE_URL=postgres://…)"
        )
    import redis

    try:
        broker = redis.Redis.from_url(BROKER, socket_connect_timeout=2)
        broker.ping()
    except redis.RedisError as exc:
        unavailable(f"Redis does not answer at {BROKER}: {exc}")
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
        task_routes={pattern: {"queue": QUEUE} for pattern in routes},
    )
    _reset_celery_producer(app)
    try:
        yield broker
    finally:
        app.conf.update(saved)
        if saved_env is None:
            os.environ.pop("CELERY_BROKER_URL", None)
        else:
            os.environ["CELERY_BROKER_URL"] = saved_env
        _reset_celery_producer(app)
        broker.delete(QUEUE)
        _forget_unacked(broker)


def _forget_unacked(broker) -> None:
    """Drop the messages a killed worker of ours left unacknowledged (kombu's ``unacked``
    hash), so Redis never hands them out again to a queue nobody listens to."""
    for tag, raw in broker.hgetall("unacked").items():
        try:
            _payload, _exchange, routing_key = json.loads(raw)
        except ValueError:
            continue
        if routing_key == QUEUE:
            broker.hdel("unacked", tag)
            broker.zrem("unacked_index", tag)


def start_worker(log: Path, *args: str, env: dict | None = None) -> subprocess.Popen:
    """Start ``celery worker`` on ``QUEUE`` (extra ``args``, extra ``env``) in a new process
    group and wait until it is ready."""
    full_env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": BROKER,
        "CELERY_TASK_ALWAYS_EAGER": "0",
        "CELERY_TASK_DEFAULT_QUEUE": QUEUE,  # the beat's tasks and re-sent jobs included
        "DEBUG": os.environ.get("DEBUG", "1"),
        "CONN_MAX_AGE": "0",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        **(env or {}),
    }
    celery = Path(sys.executable).with_name("celery")
    cmd = [
        str(celery) if celery.exists() else "celery",
        "-A",
        "blindspot",
        "worker",
        "--loglevel=INFO",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "--queues",
        QUEUE,
        *args,
    ]
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env=full_env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + WAIT_S
    while b" ready." not in log.read_bytes():
        if proc.poll() is not None:
            pytest.fail(f"the Celery worker exited ({proc.returncode}):\n{log.read_text()}")
        if time.monotonic() > deadline:
            stop_worker(proc)
            pytest.fail(f"the Celery worker was not ready in {WAIT_S} s:\n{log.read_text()}")
        time.sleep(0.2)
    return proc


def stop_worker(proc: subprocess.Popen) -> None:
    """Warm shutdown (SIGTERM to the group), then SIGKILL if it does not end in 20 s."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def process_group(pgid: int) -> set[int]:
    """The live processes of a process group (Linux ``/proc``)."""
    members = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:  # state, ppid, pgrp
            members.add(int(entry.name))
    return members


def wait_for(predicate, log: Path, what: str, timeout: float = WAIT_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"timed out after {timeout} s waiting for {what}; worker log:\n{log.read_text()}")
