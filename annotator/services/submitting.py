"""Submitting an answer: stored, the lease closed, the task decided when complete, the next
task claimed."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _

from ..kinds import get_kind
from ..models import Annotation, Assignment, Task, TaskQueue
from ..platform.errors import Conflict, Invalid, SchemaError
from . import claiming
from .claiming import ClaimResult
from .decisions import gold_record, queue_finished_check_later, task_decide
from .leases import assignment_held, lease_lost


@dataclass
class SubmitResult:
    annotation: Annotation
    created: bool
    next: ClaimResult
    queue: TaskQueue | None = None  # the answered task's queue, as read with its lease


# PostgreSQL: store the answer, close the lease and count the answer in one round trip (the
# caller holds the task's row lock).
_PG_ANSWER = """
WITH answer AS (
    INSERT INTO annotator_annotation (task_id, queue_id, annotator_id, response, duration_ms,
                                      is_gold, gold_correct, created_at)
    VALUES (%(task)s, %(queue)s, %(person)s, %(response)s::jsonb, %(duration)s, %(gold)s,
            %(correct)s, %(created)s)
    RETURNING id
), closed AS (
    UPDATE annotator_assignment SET state = 'submitted', finished_at = %(now)s
    WHERE id = %(assignment)s
), counted AS (
    UPDATE annotator_task SET done_count = done_count + 1
    WHERE id = %(task)s AND NOT %(gold)s
)
SELECT id FROM answer
"""


def _answer_store(
    assignment: Assignment, *, annotator, response: Any, duration_ms: int, correct, now
) -> Annotation:
    """Insert the annotation, mark the assignment submitted, count a regular answer."""
    annotation = Annotation(
        task=assignment.task,
        queue=assignment.queue,
        annotator=annotator,
        response=response,
        duration_ms=duration_ms,
        is_gold=assignment.is_gold,
        gold_correct=correct,
        created_at=timezone.now(),
    )
    assignment.state = Assignment.State.SUBMITTED
    assignment.finished_at = now
    if connection.vendor != "postgresql":
        annotation.save()
        assignment.save(update_fields=["state", "finished_at"])
        if not assignment.is_gold:
            Task.objects.filter(pk=assignment.task_id).update(done_count=F("done_count") + 1)
        return annotation
    with connection.cursor() as cursor:
        cursor.execute(
            _PG_ANSWER,
            {
                "task": assignment.task_id,
                "queue": assignment.queue_id,
                "person": assignment.annotator_id,
                "response": json.dumps(response),
                "duration": duration_ms,
                "gold": assignment.is_gold,
                "correct": correct,
                "created": annotation.created_at,
                "now": now,
                "assignment": assignment.pk,
            },
        )
        annotation.pk = cursor.fetchone()[0]
    annotation._state.adding = False
    annotation._state.db = connection.alias
    return annotation


def annotation_submit(
    *,
    task_id: int,
    annotator,
    response: Any | Callable[[Assignment], Any],
    duration_ms: int = 0,
    now=None,
    prefer: int | None = None,
) -> SubmitResult:
    """Store one answer and hand out the next task in the same call.

    Idempotent: a second submit of the same answer stores nothing and returns the same next
    task; a different answer to a task already answered is refused (409), the first one kept.
    ``response`` may be a function of the held assignment (with its task and queue) that
    returns the answer: a form is read by its queue's kind without a lookup of its own.
    ``prefer``: the task the person's page already shows as their next one (the look-ahead it
    painted), handed out if it is still free (see ``assignment_claim``).
    """
    now = now or timezone.now()
    finished = False  # this answer finished its task (the queue may have finished with it)
    with transaction.atomic():
        assignment = assignment_held(task_id=task_id, annotator=annotator, now=now)
        task, queue = assignment.task, assignment.queue
        if callable(response):
            response = response(assignment)
        kind = get_kind(queue.kind)
        if assignment.state == Assignment.State.SUBMITTED:
            existing = Annotation.objects.get(task_id=task_id, annotator=annotator)
            try:
                same = existing.response == kind.clean_response(
                    response,
                    config=queue.config,
                    payload=task.payload,
                    presentation=assignment.presentation,
                )
            except SchemaError:
                same = False
            if not same:
                raise Conflict(_("You already answered this task; your first answer is kept."))
            created = False
            annotation = existing
        else:
            if (error := lease_lost(assignment, now)) is not None:
                raise error
            try:
                cleaned = kind.clean_response(
                    response,
                    config=queue.config,
                    payload=task.payload,
                    presentation=assignment.presentation,
                )
            except SchemaError as exc:
                raise Invalid(str(exc)) from exc
            correct = kind.is_correct(cleaned, task.gold) if assignment.is_gold else None
            annotation = _answer_store(
                assignment,
                annotator=annotator,
                response=cleaned,
                duration_ms=max(0, min(int(duration_ms or 0), 24 * 3600 * 1000)),
                correct=correct,
                now=now,
            )
            created = True
            if assignment.is_gold:
                gold_record(queue, annotator, bool(correct))
            else:
                task.done_count += 1  # counted in the database by _answer_store
                if task.done_count >= task.required and task.state == Task.State.OPEN:
                    finished = task_decide(task=task, now=now, finished_check=False)
        # The next task is claimed in the same transaction: one commit (one WAL flush) per
        # submit. ``queue`` was read with the task in this transaction: its status is current.
        following = claiming.assignment_claim(
            queue=queue, annotator=annotator, now=now, prefer=prefer
        )
        handed = following.assignment
        if finished and (handed is None or handed.is_gold):
            # A regular task just leased is still open: the queue did not finish (no check).
            queue_finished_check_later(queue)
    return SubmitResult(annotation, created, following, queue)
