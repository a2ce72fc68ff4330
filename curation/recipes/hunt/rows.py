"""The hunt step's reads in hand-written SQL (``annotator.platform.sql_rows``), for the submit, the
job and the item page's long-poll a worker waits on after "Ask the models" (issue 24: ≤ 50 ms of
Blindspot's own time a step). The ORM spends about 1 ms of CPU building each of these statements
on a 2-core machine, more than the database needs to answer; here each is a fixed string and its
rows are turned back into instances with the backend's converters. What each returns is what the
ORM query named in its docstring returns (``tests/curation/recipes/hunt/test_rows.py`` holds
them side by side).
"""

from __future__ import annotations

from functools import cache

from django.contrib.auth import get_user_model
from django.db import connection

from annotator.platform.sql_rows import RowWith, Shape
from curation.models import LLMProvider, Sample

from .models import HuntAnswer, HuntCandidate, HuntTarget


@cache
def _shape(model, alias: str) -> Shape:
    """``model``'s shape under ``alias``, made at first use (the app registry is ready then)."""
    return Shape(model, alias)


@cache
def _candidate_row() -> RowWith:
    return RowWith(HuntCandidate, ("image", "partner"), where=['o."round_id" = %s'])


def candidate_with_images(round_id: int, candidate_id: int) -> HuntCandidate | None:
    """``HuntCandidate.objects.select_related("image", "partner").filter(pk=…, round=…)``'s
    one candidate, or None."""
    return _candidate_row().get(candidate_id, round_id)


@cache
def _mine_row() -> RowWith:
    return RowWith(
        HuntCandidate,
        ("image", "partner", "job"),
        where=['o."round_id" = %s', 'o."worker_id" = %s'],
    )


def candidate_of_worker(round_id: int, worker_id: int, candidate_id: int) -> HuntCandidate | None:
    """``candidates_of(worker, round).select_related("image", "partner", "job").get(pk=…)``,
    or None: the item's page and its long-poll, on every request."""
    return _mine_row().get(candidate_id, round_id, worker_id)


@cache
def _answers_sql() -> str:
    return (
        f"SELECT {_shape(HuntAnswer, 'a').columns} FROM {HuntAnswer._meta.db_table} a"
        " WHERE a.candidate_id = %s ORDER BY a.id"
    )


def answers_of(candidate_id: int) -> list[HuntAnswer]:
    """``candidate.answers.all()`` in the order they were stored (a slot has one answer per
    model, so the pages that show them need no other order; the ORM's orders by the candidate's
    and the target's own orderings, a join for each)."""
    with connection.cursor() as cursor:
        cursor.execute(_answers_sql(), [candidate_id])
        return [_shape(HuntAnswer, "a").build(row) for row in cursor.fetchall()]


@cache
def _targets_sql() -> str:
    return (
        f"SELECT {_shape(HuntTarget, 't').columns}, {_shape(LLMProvider, 'v').columns}"
        f" FROM {HuntTarget._meta.db_table} t"
        f" JOIN {LLMProvider._meta.db_table} v ON v.id = t.provider_id"
        " WHERE t.round_id = %s ORDER BY t.position, t.id"
    )


def targets_with_providers(round_id: int) -> list[HuntTarget]:
    """``round.targets.select_related("provider")`` (in position order)."""
    with connection.cursor() as cursor:
        cursor.execute(_targets_sql(), [round_id])
        rows = cursor.fetchall()
    out = []
    for row in rows:
        target = _shape(HuntTarget, "t").build(row)
        target.provider = _shape(LLMProvider, "v").build(row, _shape(HuntTarget, "t").width)
        out.append(target)
    return out


@cache
def _earlier_sql() -> str:
    return (
        f"SELECT c.id, c.normal FROM {HuntCandidate._meta.db_table} c"
        " WHERE c.round_id = %s AND c.id < %s AND LENGTH(c.normal) BETWEEN %s AND %s"
        " ORDER BY c.id DESC"
    )


def earlier_questions(round_id: int, before_id: int, fewest: int, most: int, chunk: int = 2000):
    """(id, normal form) of the round's questions before ``before_id`` whose normal form has
    ``fewest`` to ``most`` characters, newest first, read ``chunk`` rows at a time (the
    near-duplicate scan reads every one of a growing round after each first step)."""
    with connection.cursor() as cursor:
        cursor.execute(_earlier_sql(), [round_id, before_id, fewest, most])
        while rows := cursor.fetchmany(chunk):
            yield from rows


@cache
def _limits_sql(lock: bool) -> str:
    user = get_user_model()._meta
    c = HuntCandidate._meta.db_table
    mine = f"FROM {c} c WHERE c.round_id = %s AND c.worker_id = %s"
    return (
        f"SELECT (SELECT COUNT(*) {mine}),"
        f" (SELECT COUNT(*) {mine} AND c.created_at >= %s),"
        f" (SELECT COUNT(*) {mine} AND c.image_id = %s AND c.normal = %s),"
        f" EXISTS(SELECT 1 FROM {Sample._meta.db_table} s"
        "  WHERE s.corpus_id = %s AND s.image_id = %s)"
        f' FROM {user.db_table} u WHERE u."{user.pk.column}" = %s' + (" FOR UPDATE" if lock else "")
    )


def worker_limits(*, round_, worker_id: int, image_id: int, normal: str, since) -> dict:
    """In one statement, inside the submit's transaction: the worker's row locked (one submit at
    a time per worker, so the limits hold under a double click), how many questions they wrote
    in the round (``written``), since ``since`` (``recent``), and of this image and normal form
    (``same``), and whether the image is in the round's pool (``in_pool``)."""
    lock = connection.features.has_select_for_update
    since = connection.ops.adapt_datetimefield_value(since)
    mine = [round_.pk, worker_id]
    params = [*mine, *mine, since, *mine, image_id, normal, round_.corpus_id, image_id, worker_id]
    with connection.cursor() as cursor:
        cursor.execute(_limits_sql(lock), params)
        # No row: the worker's account is gone (the insert that follows would fail too).
        written, recent, same, in_pool = cursor.fetchone() or (0, 0, 0, False)
    return {"written": written, "recent": recent, "same": same, "in_pool": bool(in_pool)}
