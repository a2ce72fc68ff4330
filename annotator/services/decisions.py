"""Deciding: a task's outcome once its answers are in, gold answers and the qualification they
settle, enrollments."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Count
from django.utils import timezone
from django.utils.translation import gettext as _

from ..kinds import get_kind
from ..models import Annotation, Enrollment, Task, TaskQueue
from ..outcomes import run_outcome_handler
from ..platform.webhooks import webhook_emit


def enrollment_get(queue: TaskQueue, annotator) -> Enrollment:
    initial = Enrollment.State.QUALIFYING if queue.qualification_count else Enrollment.State.ACTIVE
    enrollment, _created = Enrollment.objects.get_or_create(
        queue=queue, annotator=annotator, defaults={"state": initial}
    )
    return enrollment


def qualification_settle(enrollment: Enrollment, queue: TaskQueue) -> None:
    """Decide a qualifying annotator's standing once K gold items are answered (or none remain)."""
    answered, correct = enrollment.gold_answered, enrollment.gold_correct
    accuracy = correct / answered if answered else 1.0
    if accuracy >= queue.qualification_min_accuracy:
        enrollment.state = Enrollment.State.ACTIVE
        enrollment.reason = ""
    else:
        enrollment.state = Enrollment.State.FAILED
        enrollment.reason = _(
            "You answered %(c)d of %(n)d qualification items correctly (%(acc)d%%); "
            "this queue asks for %(min)d%%."
        ) % {
            "c": correct,
            "n": answered,
            "acc": round(100 * accuracy),
            "min": round(100 * queue.qualification_min_accuracy),
        }
    enrollment.save(update_fields=["state", "reason", "updated_at"])


def gold_record(queue: TaskQueue, annotator, correct: bool) -> Enrollment:
    enrollment = enrollment_get(queue, annotator)
    enrollment = Enrollment.objects.select_for_update().get(pk=enrollment.pk)
    enrollment.gold_answered += 1
    enrollment.gold_correct += int(correct)
    enrollment.save(update_fields=["gold_answered", "gold_correct", "updated_at"])
    accuracy = enrollment.gold_correct / enrollment.gold_answered
    if (
        enrollment.state == Enrollment.State.QUALIFYING
        and enrollment.gold_answered >= queue.qualification_count
    ):
        qualification_settle(enrollment, queue)
    elif (
        enrollment.state == Enrollment.State.ACTIVE
        and queue.gold_pause_below is not None
        and enrollment.gold_answered >= queue.gold_pause_min_answers
        and accuracy < queue.gold_pause_below
    ):
        enrollment.state = Enrollment.State.PAUSED
        enrollment.reason = _(
            "Paused automatically: you answered %(c)d of %(n)d check items correctly "
            "(%(acc)d%%), below this queue's %(min)d%%. A curator will review and can resume you."
        ) % {
            "c": enrollment.gold_correct,
            "n": enrollment.gold_answered,
            "acc": round(100 * accuracy),
            "min": round(100 * queue.gold_pause_below),
        }
        enrollment.save(update_fields=["state", "reason", "updated_at"])
    return enrollment


def task_decide(*, task: Task, now=None, finished_check: bool = True) -> bool:
    """Aggregate a task's responses by its queue's rule; escalate or finish; call the handler.
    Returns whether the task finished (decided or undecided).

    The caller holds the task's row lock. ``finished_check=False``: the caller checks whether
    the queue finished itself (``queue_finished_check_later``), or knows it did not.
    """
    now = now or timezone.now()
    queue = task.queue
    kind = get_kind(queue.kind)
    responses = list(
        Annotation.objects.filter(task=task, is_gold=False)
        .order_by("id")
        .values_list("response", flat=True)
    )
    decision = kind.aggregate(responses, queue.rule)
    task.agreement = decision.agreement
    if not decision.decided and task.required < queue.max_redundancy:
        task.required += 1
        task.escalations += 1
        task.save(update_fields=["required", "escalations", "agreement"])
        task_event_emit(task=task, event="task.escalated")
        return False
    task.state = Task.State.DECIDED if decision.decided else Task.State.UNDECIDED
    task.outcome = kind.outcome(decision, responses)
    task.decided_at = now
    task.save(update_fields=["state", "outcome", "agreement", "decided_at"])
    run_outcome_handler(task, decision)
    task_event_emit(task=task, event="task.decided")
    if finished_check:
        queue_finished_check_later(queue)
    return True


def queue_finished_check_later(queue: TaskQueue) -> None:
    """Emit ``queue.finished`` after the commit if no open regular task is left by then.
    Checked after the commit: two last decisions committing together then both see the queue
    finished (it may be told twice), where a check inside each would see the other open."""
    queue_id, project_id = queue.pk, queue.project_id
    transaction.on_commit(lambda: _queue_finished_check(queue_id, project_id))


def task_event_emit(*, task: Task, event: str, extra: dict | None = None) -> None:
    """Tell the project's webhooks (after commit) about a task: ``task.decided``,
    ``task.escalated``, ``task.settled`` (a curator's settlement calls this too) or
    ``task.sent_back`` (with ``extra``: whose answer, the note, whether the task re-opened)."""
    webhook_emit(
        project=task.queue.project_id,
        event=event,
        data={
            "task": task.pk,
            "queue": task.queue_id,
            "external_id": task.external_id,
            "state": task.state,
            "outcome": task.outcome,
            "agreement": task.agreement,
            "required": task.required,
            "escalations": task.escalations,
            **(extra or {}),
        },
    )


def _queue_finished_check(queue_id: int, project_id: int) -> None:
    """Emit ``queue.finished`` when the queue has no open regular task left."""
    if Task.objects.filter(queue_id=queue_id, state=Task.State.OPEN, is_gold=False).exists():
        return
    counts = dict(
        Task.objects.filter(queue_id=queue_id, is_gold=False)
        .values_list("state")
        .annotate(n=Count("id"))
        .values_list("state", "n")
    )
    webhook_emit(
        project=project_id,
        event="queue.finished",
        data={"queue": queue_id, "tasks": counts},
    )


def enrollment_resume(*, enrollment: Enrollment) -> Enrollment:
    """A curator lets a paused or failed annotator work again."""
    Enrollment.objects.filter(pk=enrollment.pk).update(
        state=Enrollment.State.ACTIVE, reason="", updated_at=timezone.now()
    )
    enrollment.refresh_from_db()
    return enrollment
