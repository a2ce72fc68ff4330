"""A job's end as one fixed statement (``worker._succeed``) writes what the ORM's update it
stands for writes: status, result, final counts and message, field for field, on every case of
the counts and message; and nothing when the row is another run's."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.utils import timezone as django_timezone

from annotator.platform.models import Job
from annotator.platform.worker import FINISHED, _finished_counts, _succeed

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 30, 9, 30, tzinfo=UTC)

# (done, total, message) as the work left them: counted short of, past and at its estimate,
# without one, with a final message, a message of a step in progress, none
ROWS = [
    (2, 5, "Rating"),
    (7, 5, "Imported 7 tasks"),
    (5, 5, "Imported 5 tasks"),
    (5, 5, ""),
    (0, 0, "Waiting to be sent"),
    (3, 0, "Wrote 3 records"),
    (0, 0, ""),
]
RESULTS = [{"calls": 3, "verdict": {"fooled": ["t1"], "slots": ["q0_i0"]}}, None, [1, "é"], "done"]


def _row(done: int, total: int, message: str) -> Job:
    return Job.objects.create(
        kind="annotator.test",
        status=Job.Status.RUNNING,
        attempt_token="mine",
        done=done,
        total=total,
        message=message,
        heartbeat_at=NOW,
    )


def _fields(job: Job) -> list:
    job.refresh_from_db()
    # Every field but the two that tell the rows apart (the job's end writes neither)
    return [
        getattr(job, f.attname)
        for f in Job._meta.concrete_fields
        if f.attname not in ("id", "created_at")
    ]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the fixed statement is PostgreSQL's")
@pytest.mark.parametrize("result", RESULTS)
@pytest.mark.parametrize(("done", "total", "message"), ROWS)
def test_the_fixed_statement_writes_what_the_orm_update_writes(
    done, total, message, result, monkeypatch
):
    # Given two rows alike, running under this run's token
    by_orm, by_sql = _row(done, total, message), _row(done, total, message)
    # When one ends through the ORM's update and the other through the fixed statement, at the
    # same moment
    monkeypatch.setattr(django_timezone, "now", lambda: NOW)
    mine = Job.objects.filter(pk=by_orm.pk, attempt_token="mine")
    orm = mine.update(status=Job.Status.SUCCEEDED, result=result, **_finished_counts())
    sql = _succeed(by_sql.pk, "mine", result)
    # Then both wrote, and the same thing
    assert orm == 1 and sql is True
    assert _fields(by_sql) == _fields(by_orm)
    by_sql.refresh_from_db()
    assert by_sql.status == Job.Status.SUCCEEDED and by_sql.heartbeat_at is None
    assert by_sql.finished_at == NOW and by_sql.result == result
    assert by_sql.done == by_sql.total == max(done, total)
    if total == 0 or done < total or message == "":
        assert by_sql.message == FINISHED
    else:
        assert by_sql.message == message


def test_another_runs_row_is_left_alone():
    # Given a row the sweeper handed to another run (a new token)
    job = _row(2, 5, "Rating")
    Job.objects.filter(pk=job.pk).update(attempt_token="theirs")
    before = _fields(job)
    # When this run ends
    ended = _succeed(job.pk, "mine", {"a": 1})
    # Then nothing was written
    assert ended is False
    assert _fields(job) == before
