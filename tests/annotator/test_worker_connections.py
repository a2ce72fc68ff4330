"""A Celery worker keeps its database connections from job to job as a web process does from
request to request (``CELERY_DB_REUSE_MAX``, ``blindspot.celery._connections_checked``):
Celery's Django fixup would otherwise close them before and after every task, and each job
would open a new one (~5 ms, on the hunt's critical path)."""

from __future__ import annotations

import time

import pytest
from celery.fixups.django import DjangoWorkerFixup
from celery.signals import task_postrun, task_prerun
from django.db import connection

from blindspot.celery import app

pytestmark = pytest.mark.django_db(transaction=True)


def _backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_backend_pid()" if connection.vendor == "postgresql" else "SELECT 1"
        )
        return cursor.fetchone()[0]


def _task():
    return app.tasks["annotator.sweep_lost_jobs"]  # any task; its request is not eager here


def test_the_worker_fixup_keeps_the_connection_between_tasks():
    fixup = DjangoWorkerFixup(app)
    first = _backend_pid()
    for _ in range(3):
        fixup.on_task_prerun(sender=_task())
        fixup.on_task_postrun(sender=_task())
    assert connection.connection is not None
    assert _backend_pid() == first


def test_a_connection_past_its_age_is_closed_before_the_next_task():
    _backend_pid()
    connection.close_at = time.monotonic() - 1  # CONN_MAX_AGE ran out
    task_prerun.send(sender=_task(), task_id="t", task=_task(), args=(), kwargs={})
    assert connection.connection is None


def test_a_broken_connection_is_closed_after_its_task():
    _backend_pid()
    connection.close_at = None  # kept for ever, but…
    connection.errors_occurred = True
    connection.is_usable = lambda: False  # …the server went away
    try:
        task_postrun.send(sender=_task(), task_id="t", task=_task(), args=(), kwargs={})
        assert connection.connection is None
    finally:
        del connection.is_usable


def test_an_eager_task_leaves_the_callers_connection_alone():
    _backend_pid()
    connection.close_at = time.monotonic() - 1
    task = _task()
    task.push_request(is_eager=True)
    try:
        task_prerun.send(sender=task, task_id="t", task=task, args=(), kwargs={})
    finally:
        task.pop_request()
    assert connection.connection is not None
