"""Queues: creating and changing one, settling the tasks a lowered redundancy left complete."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import F, Value
from django.db.models.functions import Greatest
from django.utils import timezone
from django.utils.translation import gettext as _

from ..kinds import get_kind
from ..models import Task, TaskQueue
from ..outcomes import HANDLERS
from ..platform.errors import Invalid, SchemaError
from ..platform.jobs import job_enqueue
from ..platform.models import Project
from .decisions import task_decide

QUEUE_FIELDS = (
    "title",
    "instructions",
    "config",
    "redundancy",
    "rule",
    "max_redundancy",
    "lease_ttl",
    "undo_window",
    "priority",
    "status",
    "gold_rate",
    "qualification_count",
    "qualification_min_accuracy",
    "gold_pause_below",
    "gold_pause_min_answers",
    "outcome_handler",
)


def _check_queue(queue: TaskQueue) -> None:
    kind = get_kind(queue.kind)
    try:
        kind.validate_config(queue.config)
    except SchemaError as exc:
        raise Invalid(str(exc)) from exc
    if queue.redundancy < 1:
        raise Invalid(_("Redundancy must be at least 1."))
    if queue.max_redundancy < queue.redundancy:
        raise Invalid(_("The escalation maximum must be at least the redundancy."))
    if not 0 <= queue.gold_rate <= 1:
        raise Invalid(_("The gold rate is a share between 0 and 1."))
    if not 0 <= queue.qualification_min_accuracy <= 1:
        raise Invalid(_("The qualification accuracy is a share between 0 and 1."))
    if queue.gold_pause_below is not None and not 0 <= queue.gold_pause_below <= 1:
        raise Invalid(_("The gold pause threshold is a share between 0 and 1."))
    if queue.lease_ttl <= timedelta(0):
        raise Invalid(_("The lease time must be positive."))
    if queue.undo_window < timedelta(0):
        raise Invalid(_("The undo window cannot be negative."))
    if queue.rule not in TaskQueue.Rule.values:
        raise Invalid(_("Unknown aggregation rule %(rule)s.") % {"rule": queue.rule})
    if queue.outcome_handler and queue.outcome_handler not in HANDLERS:
        raise Invalid(_("Unknown outcome handler %(h)s.") % {"h": queue.outcome_handler})


def queue_create(*, project: Project, kind: str, title: str, **fields: Any) -> TaskQueue:
    unknown = set(fields) - set(QUEUE_FIELDS)
    if unknown:
        raise Invalid(f"Unknown queue fields: {', '.join(sorted(unknown))}")
    fields.setdefault("max_redundancy", max(fields.get("redundancy", 2), 2))
    queue = TaskQueue(project=project, kind=kind, title=title, **fields)
    _check_queue(queue)
    queue.save()
    return queue


# A lowered redundancy can leave tasks whose answers already reach what they require: up to this
# many are decided in the curator's request, more in a job (one code path: tasks_settle).
SETTLE_INLINE_MAX = 100


def queue_update(*, queue: TaskQueue, by=None, **fields: Any) -> TaskQueue:
    """Change a queue's settings; ``by`` (who changed them) owns a settling job, if one runs.

    A new redundancy applies to the open tasks that have not escalated. A task whose answers
    then reach its (lowered) requirement is decided by the queue's rule (``tasks_settle``); a
    task that live leases keep above the new redundancy comes down as those leases end
    (``_slot_returned``) and is decided by the last answer or the last lease to end.
    """
    unknown = set(fields) - set(QUEUE_FIELDS)
    if unknown:
        raise Invalid(f"Unknown queue fields: {', '.join(sorted(unknown))}")
    with transaction.atomic():
        # FOR NO KEY UPDATE: claims and submits check their deferred foreign keys to the queue
        # (FOR KEY SHARE) at commit, while this update may wait for their task rows; a full
        # FOR UPDATE here would deadlock with them.
        queue = TaskQueue.objects.select_for_update(no_key=True).get(pk=queue.pk)
        for name, value in fields.items():
            setattr(queue, name, value)
        _check_queue(queue)
        queue.save()
        if "redundancy" in fields:
            # Open tasks that have not escalated follow the new redundancy, never below their
            # live + done assignments. One UPDATE, so each row's count is read under its row
            # lock: a claim or an escalation committing meanwhile is taken into account (a
            # count read beforehand could be stale and break task_active_lte_required).
            Task.objects.filter(queue=queue, state=Task.State.OPEN, escalations=0).exclude(
                required=Greatest(Value(queue.redundancy), F("active_count"))
            ).update(required=Greatest(Value(queue.redundancy), F("active_count")))
            complete = list(
                _complete_tasks(queue)
                .order_by("id")
                .values_list("id", flat=True)[: SETTLE_INLINE_MAX + 1]
            )
            if len(complete) > SETTLE_INLINE_MAX:
                job_enqueue(
                    kind="annotator.settle_tasks",
                    params={"queue_id": queue.pk},
                    created_by=by,
                    project=queue.project,
                )
            elif complete:
                tasks_settle(queue=queue)
    return queue


def _complete_tasks(queue: TaskQueue):
    """Open regular tasks whose answers reach what they require: due a decision."""
    return Task.objects.filter(
        queue=queue, state=Task.State.OPEN, is_gold=False, done_count__gte=F("required")
    )


def tasks_settle(
    *,
    queue: TaskQueue,
    batch_size: int = 500,
    progress: Callable[[int, int], None] | None = None,
    now=None,
) -> dict[str, int]:
    """Decide every open regular task of ``queue`` whose answers reach what it requires.

    Such tasks appear when the redundancy is lowered: nobody will answer them again, so no
    submit would decide them. Each is decided by the queue's rule through ``task_decide`` under
    its row lock (so it may escalate instead, and its outcome handler runs), a batch per
    transaction, tasks locked in id order as everywhere. Idempotent: a task decided meanwhile is
    passed over. ``progress(done, total)`` is called after each batch.
    """
    now = now or timezone.now()
    total = _complete_tasks(queue).count()
    counts = {"decided": 0, "undecided": 0, "escalated": 0}
    done = last = 0
    while True:
        ids = list(
            _complete_tasks(queue)
            .filter(pk__gt=last)
            .order_by("id")
            .values_list("id", flat=True)[:batch_size]
        )
        if not ids:
            break
        last = ids[-1]
        with transaction.atomic():
            # The queue as it is now: its rule and outcome handler decide.
            current = TaskQueue.objects.get(pk=queue.pk)
            tasks = list(
                _complete_tasks(current)
                .filter(pk__in=ids)
                .order_by("id")
                .select_for_update(of=("self",))
            )
            for task in tasks:
                task.queue = current
                task_decide(task=task, now=now)
                if task.state == Task.State.OPEN:
                    counts["escalated"] += 1
                else:
                    counts[task.state] += 1
        done += len(ids)
        if progress is not None:
            progress(done, max(total, done))
    return counts


def queue_set_status(*, queue: TaskQueue, status: str) -> TaskQueue:
    if status not in TaskQueue.Status.values:
        raise Invalid(f"Unknown status {status!r}")
    TaskQueue.objects.filter(pk=queue.pk).update(status=status)
    queue.status = status
    return queue
