"""A curator settles tasks: sets the final outcome with a reason, one task or a selection.

Settling decides the task as a submit would (state ``decided``, ``decided_at``, the queue's
outcome handler with the decision, the ``task.settled`` event), and records who settled it,
when and why on the task and in its outcome (``outcome["settled"]``), so exports and agreement
figures tell curator-settled tasks apart. Two ways:

- ``majority``: the most frequent answer among the task's answers (plurality; for multi-label
  kinds the tags chosen most often). A tie, or no answer at all, cannot be settled this way.
- ``choice``: the curator's own answer, a response checked against the kind's response schema
  exactly like an annotator's.

Open, undecided and decided tasks may be settled (a decided task again, when the curator
overrides the crowd: the handler runs with the new decision so the recipe follows it); gold and
cancelled tasks may not. Live leases on a settled task end (their holders are told on submit,
as after a cancel). Rows are locked task first, in id order, as everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from .. import selectors
from ..aggregation import PLURALITY, Decision
from ..kinds import get_kind
from ..kinds.base import Kind
from ..models import Annotation, Assignment, Task, TaskQueue
from ..outcomes import run_outcome_handler
from ..platform.errors import Invalid, NotFound, SchemaError
from ..platform.jobs import job_enqueue
from ..platform.models import Job
from .decisions import task_event_emit

MAJORITY = "majority"
CHOICE = "choice"
METHODS = (MAJORITY, CHOICE)
SETTLEABLE = (Task.State.OPEN, Task.State.UNDECIDED, Task.State.DECIDED)
MAX_REASON = 2000
BATCH = 200


@dataclass(frozen=True)
class SettleResult:
    settled: int
    no_majority: int  # majority asked, but the answers tie or there are none
    refused: int  # the curator's answer does not fit the task (its schema)
    skipped: int  # gold, cancelled, or gone meanwhile

    @property
    def message(self) -> str:
        parts = [_("%(n)d task(s) settled.") % {"n": self.settled}]
        if self.no_majority:
            parts.append(
                _("%(n)d without a majority (a tie or no answer) left as they were.")
                % {"n": self.no_majority}
            )
        if self.refused:
            parts.append(
                _("%(n)d where your answer does not fit the task left as they were.")
                % {"n": self.refused}
            )
        if self.skipped:
            parts.append(_("%(n)d gold or cancelled task(s) skipped.") % {"n": self.skipped})
        return " ".join(parts)


def _check(method: str, reason: str) -> str:
    if method not in METHODS:
        raise Invalid(_("Settle by majority or by your choice."))
    reason = (reason or "").strip()
    if not reason:
        raise Invalid(_("Say why you settle: the reason is kept with the outcome."))
    return reason[:MAX_REASON]


def _decision(
    kind: Kind, task: Task, method: str, response: Any, answers: Sequence[dict]
) -> Decision | str:
    """The settled decision, or why there is none ("no_majority", "refused")."""
    if method == MAJORITY:
        decision = kind.aggregate(answers, PLURALITY) if answers else None
        if decision is None or not decision.decided:
            return "no_majority"
        return Decision(True, decision.label, task.agreement, decision.counts)
    try:
        clean = kind.clean_response(
            response, config=task.queue.config, payload=task.payload, presentation={}
        )
        label = kind.vote(clean)
    except (SchemaError, KeyError, TypeError, ValueError):
        return "refused"
    if kind.multilabel:
        label = frozenset(label)
    counts = kind.aggregate(answers, PLURALITY).counts if answers else {}
    return Decision(True, label, task.agreement, counts)


def _answers(task_ids: list[int]) -> dict[int, list[dict]]:
    """The non-gold answers of these tasks, in the order given (one query for a batch)."""
    out: dict[int, list[dict]] = {i: [] for i in task_ids}
    rows = (
        Annotation.objects.filter(task_id__in=task_ids, is_gold=False)
        .order_by("task_id", "id")
        .values_list("task_id", "response")
    )
    for task_id, response in rows:
        out[task_id].append(response)
    return out


def _settle_locked(
    task: Task, kind: Kind, *, method: str, response: Any, reason: str, by, now, answers=None
) -> str:
    """Settle one task whose row the caller locked; returns "settled" or why not."""
    if task.is_gold or task.state not in SETTLEABLE:
        return "skipped"
    if answers is None:
        answers = _answers([task.pk])[task.pk]
    decision = _decision(kind, task, method, response, answers)
    if isinstance(decision, str):
        return decision
    if task.state == Task.State.OPEN and task.active_count > task.done_count:
        Assignment.objects.filter(task=task, state=Assignment.State.LEASED).update(
            state=Assignment.State.EXPIRED, finished_at=now
        )
        task.active_count = task.done_count
    outcome = kind.outcome(decision, answers)
    outcome["settled"] = {
        "by": by.get_username(),
        "at": now.isoformat(),
        "method": method,
        "reason": reason,
    }
    task.outcome = outcome
    task.state = Task.State.DECIDED
    task.decided_at = now
    task.settled_by = by
    task.settled_at = now
    task.settle_reason = reason
    task.save(
        update_fields=[
            "state",
            "outcome",
            "decided_at",
            "active_count",
            "settled_by",
            "settled_at",
            "settle_reason",
        ]
    )
    run_outcome_handler(task, decision)
    task_event_emit(task=task, event="task.settled")
    return "settled"


def task_curator_settle(
    *, task_id: int, queue: TaskQueue, by, method: str, reason: str, response: Any = None, now=None
) -> Task:
    """Settle one task of ``queue`` (the caller scoped the queue); refuses with a clear error
    when it cannot be settled (gold, cancelled, a tie for majority, an answer that does not fit).
    """
    reason = _check(method, reason)
    now = now or timezone.now()
    kind = get_kind(queue.kind)
    with transaction.atomic():
        task = (
            Task.objects.select_for_update(of=("self",))
            .select_related("queue")
            .filter(queue=queue, pk=task_id)
            .first()
        )
        if task is None:
            raise NotFound(_("No such task."))
        result = _settle_locked(
            task, kind, method=method, response=response, reason=reason, by=by, now=now
        )
    if result == "skipped":
        raise Invalid(_("Gold and cancelled tasks cannot be settled."))
    if result == "no_majority":
        raise Invalid(_("The answers tie (or there are none): settle by your choice."))
    if result == "refused":
        raise Invalid(_("That answer does not fit this task."))
    return task


def tasks_curator_settle(
    *,
    queue: TaskQueue,
    task_ids: Iterable[int],
    by,
    method: str,
    reason: str,
    response: Any = None,
    progress: Callable[[int, int], None] | None = None,
    now=None,
) -> SettleResult:
    """Settle the tasks ``task_ids`` of ``queue`` (ids of other queues are passed over), a batch
    of tasks per transaction. Tasks that cannot be settled are counted, not refused: the
    selection goes on. ``progress(done, total)`` after each batch."""
    reason = _check(method, reason)
    now = now or timezone.now()
    kind = get_kind(queue.kind)
    ids = sorted({int(i) for i in task_ids if 0 < int(i) < 2**63})
    counts = {"settled": 0, "no_majority": 0, "refused": 0, "skipped": 0}
    for start in range(0, len(ids), BATCH):
        chunk = ids[start : start + BATCH]
        with transaction.atomic():
            tasks = list(
                Task.objects.select_for_update(of=("self",))
                .select_related("queue")
                .filter(queue=queue, pk__in=chunk)
                .order_by("id")
            )
            counts["skipped"] += len(chunk) - len(tasks)
            answers = _answers([task.pk for task in tasks])
            for task in tasks:
                result = _settle_locked(
                    task,
                    kind,
                    method=method,
                    response=response,
                    reason=reason,
                    by=by,
                    now=now,
                    answers=answers[task.pk],
                )
                counts[result] += 1
        if progress is not None:
            progress(min(start + BATCH, len(ids)), len(ids))
    return SettleResult(**counts)


INLINE_MAX = 200  # more than this: a job (with progress) settles the selection


@dataclass(frozen=True)
class SelectionSettle:
    """What settling a selection did now (``result``) or started (``job``)."""

    selected: int
    result: SettleResult | None = None
    job: Job | None = None

    @property
    def message(self) -> str:
        if self.job is not None:
            return _("Settling %(n)d tasks: job #%(job)d shows the progress.") % {
                "n": self.selected,
                "job": self.job.pk,
            }
        if not self.selected:
            return _("No task matches these filters: nothing was settled.")
        return self.result.message if self.result else ""


def tasks_curator_settle_selection(
    *,
    queue: TaskQueue,
    task_filter: selectors.TaskFilter,
    by,
    method: str,
    reason: str,
    response: Any = None,
) -> SelectionSettle:
    """Settle every task of ``queue`` the task browser's ``task_filter`` selects: at once when
    they are few, else in a job (``annotator.settle_selection``) that reads the selection's ids
    when it starts. The ids are taken now either way, so tasks that match later are not settled.
    """
    reason = _check(method, reason)
    ids = list(selectors.task_browse(queue, task_filter).order_by().values_list("id", flat=True))
    if len(ids) <= INLINE_MAX:
        result = tasks_curator_settle(
            queue=queue, task_ids=ids, by=by, method=method, reason=reason, response=response
        )
        return SelectionSettle(len(ids), result=result)
    job = job_enqueue(
        kind="annotator.settle_selection",
        params={
            "queue_id": queue.pk,
            "task_ids": ids,
            "by": by.pk,
            "method": method,
            "reason": reason,
            "response": response,
        },
        created_by=by,
        project=queue.project,
        total=len(ids),
    )
    return SelectionSettle(len(ids), job=job)
