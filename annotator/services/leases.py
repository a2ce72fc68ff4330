"""Leases: a person's hold on a task slot: expiry, revocation, heartbeat, release (skip,
report)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import Exists, F, OuterRef
from django.utils import timezone
from django.utils.translation import gettext as _

from ..kinds import OTHER_REASON, OTHER_REPORT_REASON, report_reasons
from ..models import Assignment, Report, Task, TaskQueue
from ..platform import roles
from ..platform.errors import Conflict, Invalid, NotFound
from ..platform.models import Project
from ..platform.sql_rows import Shape
from ..platform.webhooks import webhook_emit
from .decisions import task_decide

ASSIGNMENT_SHAPE = Shape(Assignment, "a")


TASK_SHAPE = Shape(Task, "t")


_QUEUE = Shape(TaskQueue, "q")


def may_work(person) -> bool:
    """Whether ``person`` may answer tasks at all: an active crowdworker (admins pass).

    Read on every submit, skip, report and heartbeat; the roles come with the request's user
    (``platform.auth`` reads them with the token), so a role taken away stops work at once.
    """
    return person.is_active and roles.has_role(person, [roles.CROWDWORKER])


def leases_expire(*, queue: TaskQueue | None = None, now=None, limit: int = 1000) -> int:
    """Return expired leases to the pool (lazily from claims, and from the beat job).

    A task that an expired lease alone kept open past a lowered redundancy is decided here.
    """
    now = now or timezone.now()
    stale = Assignment.objects.filter(state=Assignment.State.LEASED, expires_at__lte=now)
    if queue is not None:
        stale = stale.filter(queue=queue)
    return leases_end(stale[:limit], now=now, wait=False)


def leases_end(leases, *, now, wait: bool) -> int:
    """End each of ``leases`` that is still live-or-stale (state leased), as an expiry does:
    the assignment is expired and a regular slot goes back to the pool (``_slot_returned``).

    One transaction per lease, the task locked first as claim and submit do, so the counters
    stay exact. ``wait=False`` passes over a task locked right now (the beat job comes back);
    ``wait=True`` waits for it (revocation must end every lease).
    """
    ended = 0
    rows = list(leases.values_list("id", "task_id", "is_gold"))
    for assignment_id, task_id, gold in rows:
        with transaction.atomic():
            task = (
                Task.objects.select_for_update(skip_locked=not wait, of=("self",))
                .select_related("queue")
                .filter(pk=task_id)
                .first()
            )
            if task is None:
                continue
            # Only the lease as it was read: a heartbeat meanwhile keeps a live one alive for
            # the expiry path, and revocation (wait=True) ends it whatever its time.
            still = Assignment.objects.filter(pk=assignment_id, state=Assignment.State.LEASED)
            if not wait:
                still = still.filter(expires_at__lte=now)
            changed = still.update(state=Assignment.State.EXPIRED, finished_at=now)
            if changed and not gold:
                _slot_returned(task, now=now)
            ended += changed
    return ended


def assignment_release(*, task_id: int, annotator, now=None) -> int:
    """The person left the workspace (closed the tab, went elsewhere): their live lease on
    ``task_id`` ends at once and the slot goes back to the pool, as on expiry (they may be
    handed it again). The lease time is the safety net, not the normal path. Idempotent."""
    leases = Assignment.objects.filter(
        task_id=task_id, annotator=annotator, state=Assignment.State.LEASED
    )
    return leases_end(leases, now=now or timezone.now(), wait=True)


def leases_elsewhere_release(*, annotator, queue: TaskQueue, now=None) -> int:
    """Opening ``queue`` ends the person's live leases in every other queue (one place of work
    at a time), as on expiry. Returns how many ended."""
    leases = Assignment.objects.filter(annotator=annotator, state=Assignment.State.LEASED).exclude(
        queue=queue
    )
    return leases_end(leases.order_by("task_id"), now=now or timezone.now(), wait=True)


def annotator_leases_revoke(*, annotator, everywhere: bool = False, now=None) -> int:
    """End ``annotator``'s leases wherever they may no longer work, at once.

    That is every lease when they lost the crowdworker role or were deactivated (or
    ``everywhere``, e.g. before the account is deleted), else the leases in projects they are
    no longer a member of (admins keep theirs). The slots go back to the pool as on expiry;
    the person's later submit, skip, report or heartbeat on those tasks answers 404
    (``assignment_held``). Returns how many leases ended.
    """
    now = now or timezone.now()
    annotator = get_user_model().objects.get(pk=annotator.pk)  # roles and flags as stored now
    leases = Assignment.objects.filter(annotator=annotator, state=Assignment.State.LEASED)
    if not everywhere and may_work(annotator):
        if roles.has_role(annotator, [roles.ADMIN]):
            return 0
        member = Project.members.through.objects.filter(
            project_id=OuterRef("queue__project_id"), user_id=annotator.pk
        )
        leases = leases.exclude(Exists(member))
    return leases_end(leases.order_by("task_id"), now=now, wait=True)


# The task, its queue and whether the person is (still) a member of the queue's project.
_HELD_TASK_SQL = f"""
SELECT {TASK_SHAPE.columns}, {_QUEUE.columns},
    EXISTS (SELECT 1 FROM annotator_project_members m
            WHERE m.project_id = q.project_id AND m.user_id = %s)
FROM annotator_task t JOIN annotator_taskqueue q ON q.id = t.queue_id
WHERE t.id = %s
"""


_HELD_ASSIGNMENT_SQL = f"""
SELECT {ASSIGNMENT_SHAPE.columns} FROM annotator_assignment a
WHERE a.task_id = %s AND a.annotator_id = %s
"""


def _fetch_one(sql: str, params: list, *, lock: str = "") -> tuple | None:
    if lock and connection.features.has_select_for_update:
        sql += f" FOR UPDATE{lock}"
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()


def assignment_held(*, task_id: int, annotator, now) -> Assignment:
    """Lock the task, then this person's assignment on it (task first, as everywhere).

    Someone who may no longer work, or is no longer a member of the task's project (admins
    excepted), is answered as if the task did not exist: revocation stops work at once.

    Only the task row is locked, never the queue's: that would serialise a queue's submits.
    Hand-written statements: this runs on every submit and heartbeat (see ``platform.sql_rows``).
    """
    if not 0 < task_id < 2**63:  # no such id can exist (and the database would refuse it)
        raise NotFound(_("No such task."))
    if not may_work(annotator):
        raise NotFound(_("No such task."))
    row = _fetch_one(_HELD_TASK_SQL, [annotator.pk, task_id], lock=" OF t")
    if row and not (row[-1] or roles.has_role(annotator, [roles.ADMIN])):
        row = None  # removed from the project: their tasks there look missing
    mine = row and _fetch_one(_HELD_ASSIGNMENT_SQL, [task_id, annotator.pk], lock=" OF a")
    if not mine:
        raise NotFound(_("No such task."))
    assignment = ASSIGNMENT_SHAPE.build(mine)
    task = TASK_SHAPE.build(row)
    task.queue = _QUEUE.build(row, TASK_SHAPE.width)
    assignment.task = task
    assignment.queue = task.queue
    return assignment


def lease_lost(assignment: Assignment, now) -> Conflict | None:
    if assignment.task.state == Task.State.CANCELLED:  # tasks_cancel ended the lease
        return Conflict(
            _(
                "This task was withdrawn by the curator and can no longer be answered. "
                "Open the next task to continue."
            )
        )
    state = assignment.state
    if state == Assignment.State.LEASED and assignment.expires_at > now:
        return None
    if state in (Assignment.State.EXPIRED, Assignment.State.LEASED):
        when = timezone.localtime(assignment.expires_at).strftime("%H:%M:%S")
        return Conflict(
            _(
                "Your lease on this task expired at %(t)s and it went back to the pool; "
                "your answer was not saved. Open the next task to continue."
            )
            % {"t": when}
        )
    if state == Assignment.State.SKIPPED:
        return Conflict(_("You skipped this task; it can no longer be answered."))
    if state == Assignment.State.REPORTED:
        return Conflict(_("You reported this task; it can no longer be answered."))
    return Conflict(_("This task is no longer yours to answer."))


# A live lease extended in one statement; it locks only the assignment row, and nothing else
# while it waits, so it cannot deadlock with the task-first order of the other paths.
_PG_HEARTBEAT = f"""
UPDATE annotator_assignment a SET expires_at = %(now)s + q.lease_ttl
FROM annotator_taskqueue q
WHERE a.task_id = %(task)s AND a.annotator_id = %(person)s AND a.state = 'leased'
  AND a.expires_at > %(now)s AND q.id = a.queue_id
  AND (%(admin)s OR EXISTS (SELECT 1 FROM annotator_project_members m
                            WHERE m.project_id = q.project_id AND m.user_id = %(person)s))
RETURNING {ASSIGNMENT_SHAPE.columns}
"""


def assignment_heartbeat(*, task_id: int, annotator, now=None) -> Assignment:
    """Extend a live lease by the queue's TTL (the open page calls this periodically).

    The returned assignment's task and queue load lazily.
    """
    now = now or timezone.now()
    if connection.vendor == "postgresql" and 0 < task_id < 2**63 and may_work(annotator):
        # The common case in one round trip; anything else (no lease, a lost one, a person
        # removed from the project) takes the locking path below, which says why.
        params = {
            "now": now,
            "task": task_id,
            "person": annotator.pk,
            "admin": roles.has_role(annotator, [roles.ADMIN]),
        }
        with connection.cursor() as cursor:
            cursor.execute(_PG_HEARTBEAT, params)
            row = cursor.fetchone()
        if row is not None:
            return ASSIGNMENT_SHAPE.build(row)
    with transaction.atomic():
        assignment = assignment_held(task_id=task_id, annotator=annotator, now=now)
        if (error := lease_lost(assignment, now)) is not None:
            raise error
        assignment.expires_at = now + assignment.queue.lease_ttl
        assignment.save(update_fields=["expires_at"])
    return assignment


def _release(
    *,
    task_id: int,
    annotator,
    state: str,
    reason: Callable[[TaskQueue], str] | None = None,
    now=None,
) -> Assignment:
    """End a lease without an answer; ``reason(queue)`` checks and gives a report's reason."""
    now = now or timezone.now()
    with transaction.atomic():
        assignment = assignment_held(task_id=task_id, annotator=annotator, now=now)
        why = reason(assignment.queue) if reason is not None else ""
        if assignment.state == state:
            return assignment  # idempotent
        if (error := lease_lost(assignment, now)) is not None:
            raise error
        assignment.state = state
        assignment.finished_at = now
        assignment.report_reason = why
        assignment.save(update_fields=["state", "finished_at", "report_reason"])
        if state == Assignment.State.REPORTED:  # the curators' inbox (services/reports.py)
            report = Report.objects.create(
                task_id=assignment.task_id,
                queue_id=assignment.queue_id,
                reporter=annotator,
                reason=why,
                created_at=now,
            )
            webhook_emit(
                project=assignment.queue.project_id,
                event="report.opened",
                data={
                    "report": report.pk,
                    "task": assignment.task_id,
                    "queue": assignment.queue_id,
                    "reason": why,
                },
            )
        if not assignment.is_gold:
            _slot_returned(assignment.task, now=now)
    return assignment


def _slot_returned(task: Task, *, now) -> None:
    """Count out a regular lease that ended without an answer (skip, report, expiry).

    The caller holds the task's row lock and read ``task`` (with its queue) under it. A task
    that live leases kept above a lowered redundancy (see ``queue_update``) comes down with
    them, never below its live + done assignments; once its answers reach what it requires, it
    is decided as a submit would decide it. In the common case this is the one UPDATE it was.
    """
    task.active_count -= 1
    fields: dict[str, Any] = {"active_count": F("active_count") - 1}
    if task.state != Task.State.OPEN:
        Task.objects.filter(pk=task.pk).update(**fields)
        return
    redundancy = task.queue.redundancy
    if not task.escalations and task.required > redundancy:
        task.required = max(redundancy, task.active_count)
        fields["required"] = task.required
    Task.objects.filter(pk=task.pk).update(**fields)
    if task.done_count >= task.required:
        task_decide(task=task, now=now)


def assignment_skip(*, task_id: int, annotator, now=None) -> Assignment:
    """Give the task back; it is never offered to this person again."""
    return _release(task_id=task_id, annotator=annotator, state=Assignment.State.SKIPPED, now=now)


def report_reason_check(*, queue: TaskQueue, reason: str, details: str = "") -> str:
    """The stored form of a report: one of the queue's reason codes, or ``other: <details>``.

    Free text goes only with "other" (and "other" needs it); errors name the field.
    """
    reason = (reason or "").strip()
    details = (details or "").strip()
    codes = [r["code"] for r in report_reasons(queue.config)]
    if not reason:
        raise Invalid(
            _("reason: say what is wrong with this task (one of: %(codes)s).")
            % {"codes": ", ".join(codes)},
            [{"field": "reason", "error": _("This field is required.")}],
        )
    if reason not in codes:
        raise Invalid(
            _("reason: “%(r)s” is not a report reason of this queue; use one of: %(codes)s.")
            % {"r": reason[:40], "codes": ", ".join(codes)},
            [{"field": "reason", "error": _("not one of this queue's report reasons")}],
        )
    other = {"other": OTHER_REASON, "label": _(OTHER_REPORT_REASON["label"])}
    if reason != OTHER_REASON:
        if details:
            raise Invalid(
                _("details: free text goes only with the reason “%(other)s” (%(label)s).") % other,
                [{"field": "details", "error": _("only allowed with the reason other")}],
            )
        return reason
    if not details:
        raise Invalid(
            _("details: say what is wrong when the reason is “%(other)s” (%(label)s).") % other,
            [{"field": "details", "error": _("This field is required.")}],
        )
    return f"{OTHER_REASON}: {details}"[:2000]


def assignment_report(
    *, task_id: int, annotator, reason: str, details: str = "", now=None
) -> Assignment:
    """Release a task with a reason: a code of the queue's report reasons (see
    ``report_reason_check``)."""
    return _release(
        task_id=task_id,
        annotator=annotator,
        state=Assignment.State.REPORTED,
        reason=lambda queue: report_reason_check(queue=queue, reason=reason, details=details),
        now=now,
    )
