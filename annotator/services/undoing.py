"""Undo: a person takes back their own answer within the queue's undo window and gets the task
back as a live lease to answer again.

A task their answer helped decide is reopened when nothing downstream took the decision: no
outcome handler ran on it (a handler hands the outcome to the next stage at once, which an undo
cannot take back) and no curator settled it. In a redundancy-1 queue every submit decides its
task, so this is what makes undo work there at all. Reopening withdraws the outcome (state open,
no outcome, agreement or decision time) and tells the project's webhooks (``task.reopened``);
the next answer decides the task again, as a first one would have.

The answer moves, as it was, to ``UndoneAnnotation`` (who answered what, when, and when they took
it back): annotations stay insert-only, exports read only the answers that stand, and a task's
history is its annotations plus its undone answers.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone
from django.utils.translation import gettext as _

from ..models import Annotation, Assignment, Enrollment, Task, TaskQueue, UndoneAnnotation
from ..platform.errors import Conflict
from .decisions import task_event_emit
from .leases import assignment_held, leases_end


def undo_refusal(
    *,
    queue: TaskQueue,
    task_state: str,
    answered_at,
    now,
    is_gold: bool = False,
    settled: bool = False,
) -> str:
    """Why an answer given at ``answered_at`` can no longer be undone ("" when it can)."""
    if task_state == Task.State.CANCELLED:
        return _("This task was withdrawn by the curator; its answers stay as they are.")
    if task_state != Task.State.OPEN and not is_gold:
        if settled:
            return _("A curator settled this task; its answers stay as they are.")
        if queue.outcome_handler:
            return _(
                "This task is decided and its outcome has gone on to the next stage; its "
                "answers can no longer be undone. Tell a curator if your answer was wrong: "
                "they can settle the task."
            )
    if queue.undo_window <= timedelta(0):
        return _("Answers in this queue cannot be undone.")
    if now - answered_at > queue.undo_window:
        return _("Answers can be undone for %(m)s after submitting; this one is older.") % {
            "m": _minutes(queue.undo_window)
        }
    return ""


def _minutes(window: timedelta) -> str:
    seconds = int(window.total_seconds())
    if seconds % 60:
        return _("%(s)d s") % {"s": seconds}
    return _("%(m)d min") % {"m": seconds // 60}


def annotation_undo(*, task_id: int, annotator, now=None) -> Assignment:
    """Take back ``annotator``'s answer to ``task_id`` and hand the task back to them.

    Refused (409) once the task is withdrawn, settled or its outcome went on to the next stage
    (the queue's outcome handler ran), or the queue's undo window has passed; a task decided
    with nothing downstream is reopened.
    Their other live lease in the queue (the next task they were given) goes back to the pool,
    so the task undone is the one their workspace shows. Returns the renewed lease.
    """
    now = now or timezone.now()
    with transaction.atomic():
        assignment = assignment_held(task_id=task_id, annotator=annotator, now=now)
        task, queue = assignment.task, assignment.queue
        if assignment.state != Assignment.State.SUBMITTED:
            raise Conflict(_("You have no answer to undo on this task."))
        answer = Annotation.objects.select_for_update().get(task_id=task_id, annotator=annotator)
        why = undo_refusal(
            queue=queue,
            task_state=task.state,
            answered_at=answer.created_at,
            now=now,
            is_gold=assignment.is_gold,
            settled=task.settled_at is not None,
        )
        if why:
            raise Conflict(why)
        UndoneAnnotation.objects.create(
            task_id=task_id,
            queue_id=queue.pk,
            annotator=annotator,
            response=answer.response,
            duration_ms=answer.duration_ms,
            is_gold=answer.is_gold,
            gold_correct=answer.gold_correct,
            answered_at=answer.created_at,
            undone_at=now,
        )
        answer.delete()
        assignment.state = Assignment.State.LEASED
        assignment.leased_at = now
        assignment.expires_at = now + queue.lease_ttl
        assignment.finished_at = None
        assignment.save(update_fields=["state", "leased_at", "expires_at", "finished_at"])
        if assignment.is_gold:
            Enrollment.objects.filter(queue=queue, annotator=annotator).update(
                gold_answered=Greatest(F("gold_answered") - 1, 0),
                gold_correct=Greatest(F("gold_correct") - int(bool(answer.gold_correct)), 0),
            )
        elif task.state != Task.State.OPEN:
            _task_reopen(task)
        else:
            Task.objects.filter(pk=task_id).update(done_count=F("done_count") - 1)
    others = Assignment.objects.filter(
        annotator=annotator, queue_id=queue.pk, state=Assignment.State.LEASED
    ).exclude(pk=assignment.pk)
    leases_end(others.order_by("task_id"), now=now, wait=True)
    return assignment


def _task_reopen(task: Task) -> None:
    """Withdraw a decision nothing downstream took (the caller holds the task's row lock and
    checked that): the task is open again, one answer short."""
    task.state = Task.State.OPEN
    task.outcome = None
    task.agreement = None
    task.decided_at = None
    task.done_count -= 1
    task.save(update_fields=["state", "outcome", "agreement", "decided_at", "done_count"])
    task_event_emit(task=task, event="task.reopened")


def annotation_undo_last(*, queue: TaskQueue, annotator, now=None) -> Assignment:
    """Undo ``annotator``'s most recent answer in ``queue`` (the workspace's ``u`` key)."""
    last = (
        Annotation.objects.filter(queue=queue, annotator=annotator)
        .order_by("-created_at", "-id")
        .values_list("task_id", flat=True)
        .first()
    )
    if last is None:
        raise Conflict(_("You have not answered anything in this queue yet."))
    return annotation_undo(task_id=last, annotator=annotator, now=now)
