"""Every change to annotation data goes through these functions; each is atomic.

Claiming is the hot path. On PostgreSQL it takes the fullest open task with
``SELECT … FOR UPDATE SKIP LOCKED`` so concurrent annotators never wait on each other and never
get the same slot; on SQLite (the demo) writers are serialised by ``BEGIN IMMEDIATE``. In both,
the ``task_active_lte_required`` check constraint makes over-assignment impossible.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction
from django.db.models import Exists, F, OuterRef, Value
from django.db.models.functions import Greatest
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from .kinds import OTHER_REASON, OTHER_REPORT_REASON, get_kind, report_reasons
from .models import Annotation, Assignment, Enrollment, Task, TaskQueue
from .outcomes import run_outcome_handler
from .platform import edge, roles
from .platform.errors import Conflict, Invalid, NotFound, SchemaError
from .platform.jobs import job_enqueue
from .platform.models import Invitation, Project
from .platform.rows import Shape

# --------------------------------------------------------------------------------------------
# Projects, queues, tasks
# --------------------------------------------------------------------------------------------
QUEUE_FIELDS = (
    "title",
    "instructions",
    "config",
    "redundancy",
    "rule",
    "max_redundancy",
    "lease_ttl",
    "priority",
    "status",
    "gold_rate",
    "qualification_count",
    "qualification_min_accuracy",
    "gold_pause_below",
    "gold_pause_min_answers",
    "outcome_handler",
)


def project_create(
    *, name: str, slug: str, description: str = "", created_by=None, members: Iterable = ()
) -> Project:
    with transaction.atomic():
        project = Project.objects.create(
            name=name, slug=slug, description=description, created_by=created_by
        )
        project.members.add(*members, *([created_by] if created_by else []))
    return project


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
    if queue.rule not in TaskQueue.Rule.values:
        raise Invalid(_("Unknown aggregation rule %(rule)s.") % {"rule": queue.rule})
    from .outcomes import HANDLERS

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


@dataclass
class TaskRow:
    payload: Any
    gold: Any = None
    external_id: str = ""
    line: int = 0


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"number {text[:20]} is out of range")
    return value


def _strict_json_loads(text: str) -> Any:
    """json.loads without NaN/Infinity, which PostgreSQL's jsonb cannot store."""
    return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)


def parse_task_rows(data: bytes | str | list) -> list[TaskRow]:
    """Parse a JSONL upload (or a decoded JSON list) into rows; errors carry line numbers.

    Each line is either a payload object, or ``{"payload": {...}, "gold": {...}, "id": "..."}``.
    """
    errors: list[dict] = []
    rows: list[TaskRow] = []
    if isinstance(data, list):
        items = list(enumerate(data, start=1))
    else:
        if isinstance(data, bytes):
            try:
                data = edge.decode_utf8(data)
            except edge.NotUtf8 as exc:
                raise Invalid(
                    _("The file is not UTF-8 text (%(e)s); save it as UTF-8 and upload it again.")
                    % {"e": exc}
                ) from None
        items = []
        for number, line in enumerate(data.splitlines(), start=1):
            if not line.strip():
                continue
            too_long = edge.line_problem(line, number)
            if too_long:
                errors.append({"line": number, "error": too_long})
                continue
            try:
                items.append((number, _strict_json_loads(line)))
            except (ValueError, RecursionError) as exc:
                # ValueError covers JSONDecodeError, NaN/Infinity and over-long integers.
                message = getattr(exc, "msg", None) or str(exc)
                errors.append({"line": number, "error": f"not valid JSON: {message}"})
    for number, item in items:
        if not isinstance(item, dict):
            errors.append({"line": number, "error": "each line must be a JSON object"})
            continue
        unstorable = edge.row_problem(item)
        if unstorable:
            errors.append({"line": number, "error": unstorable})
            continue
        if "payload" in item:
            extra = set(item) - {"payload", "gold", "id"}
            if extra:
                errors.append(
                    {"line": number, "error": f"unexpected keys: {', '.join(sorted(extra))}"}
                )
                continue
            rows.append(
                TaskRow(item["payload"], item.get("gold"), str(item.get("id") or ""), number)
            )
        else:
            rows.append(TaskRow(item, None, "", number))
    if errors:
        raise Invalid(_("%(n)d line(s) could not be read.") % {"n": len(errors)}, errors)
    if not rows:
        raise Invalid(_("The upload holds no tasks."))
    return rows


def validate_task_rows(*, queue: TaskQueue, rows: list[TaskRow]) -> None:
    kind = get_kind(queue.kind)
    errors = []
    for row in rows:
        try:
            kind.validate_payload(row.payload)
            if row.gold is not None:
                kind.validate_gold(row.gold, queue.config, row.payload)
        except SchemaError as exc:
            errors.append({"line": row.line, "error": str(exc)})
    if errors:
        raise Invalid(
            _("%(n)d of %(total)d task(s) do not fit the %(kind)s kind; nothing was imported.")
            % {"n": len(errors), "total": len(rows), "kind": queue.kind},
            errors,
        )


def tasks_bulk_create(*, queue: TaskQueue, rows: list[TaskRow], batch_size: int = 2000) -> int:
    """All or nothing: every row is validated before any is written."""
    validate_task_rows(queue=queue, rows=rows)
    objs = [
        Task(
            queue=queue,
            payload=row.payload,
            gold=row.gold,
            is_gold=row.gold is not None,
            external_id=row.external_id[:200],
            required=queue.redundancy,
        )
        for row in rows
    ]
    with transaction.atomic():
        Task.objects.bulk_create(objs, batch_size=batch_size)
    return len(objs)


# --------------------------------------------------------------------------------------------
# Cancelling tasks
# --------------------------------------------------------------------------------------------
@dataclass
class CancelResult:
    cancelled: int  # open tasks withdrawn now
    skipped: int  # tasks already finished (decided, undecided or cancelled), left as they were
    leases_ended: int  # leases ended with them; their holders' answers are refused (409)

    @property
    def message(self) -> str:
        text = ngettext("%(n)d task cancelled.", "%(n)d tasks cancelled.", self.cancelled) % {
            "n": self.cancelled
        }
        if self.skipped:
            text += " " + ngettext(
                "%(n)d had already finished and was left as it was.",
                "%(n)d had already finished and were left as they were.",
                self.skipped,
            ) % {"n": self.skipped}
        return text


_ID_CHUNK = 500  # ids per statement: SQLite's host parameter limit is far above this


def _chunks(ids: list[int]) -> Iterable[list[int]]:
    for start in range(0, len(ids), _ID_CHUNK):
        yield ids[start : start + _ID_CHUNK]


def _task_ids(task_ids: Any) -> list[int]:
    """A list of task ids, deduplicated in order; anything else is refused with a message."""
    if isinstance(task_ids, str | bytes | dict) or not isinstance(task_ids, Iterable):
        raise Invalid(_("Send the task ids as a list of integers."))
    ids: list[int] = []
    errors = []
    for index, value in enumerate(task_ids):
        if isinstance(value, bool) or not isinstance(value, int):
            errors.append({"index": index, "error": _("not an integer task id")})
        else:
            ids.append(value)
    if errors:
        raise Invalid(_("Task ids must be integers."), errors[:50])
    if not ids:
        raise Invalid(_("Name at least one task."))
    return list(dict.fromkeys(ids))


def tasks_cancel(
    *, queue: TaskQueue, task_ids: Iterable[int], reason: str = "", now=None
) -> CancelResult:
    """Withdraw open tasks of ``queue``: they are never offered again and their leases end.

    All or nothing: an id that is not a task of this queue refuses the whole call and nothing is
    written. Tasks that already finished (decided, undecided or cancelled) are skipped and
    counted, so a repeated cancel is harmless and a task decided meanwhile keeps its decision.
    A cancelled task keeps the answers it has; its outcome records ``{"cancelled": true,
    "reason": ...}`` and ``decided_at`` when it left the pool. No outcome handler runs: nothing
    was decided. An annotator holding one of its leases is told on submit, skip, report or
    heartbeat that the curator withdrew it (409).
    """
    now = now or timezone.now()
    ids = _task_ids(task_ids)
    reason = (reason or "").strip()[:2000]
    in_range = sorted(i for i in ids if 0 < i < 2**63)
    with transaction.atomic():
        # Task rows first and in id order, as every other path locks them.
        states: dict[int, str] = {}
        for chunk in _chunks(in_range):
            states.update(
                Task.objects.select_for_update()
                .filter(queue=queue, pk__in=chunk)
                .order_by("id")
                .values_list("id", "state")
            )
        foreign = [i for i in ids if i not in states]
        if foreign:
            shown = ", ".join(str(i) for i in foreign[:20]) + (" …" if len(foreign) > 20 else "")
            raise Invalid(
                _("%(n)d id(s) are not tasks of this queue: %(ids)s. Nothing was cancelled.")
                % {"n": len(foreign), "ids": shown},
                [{"id": i, "error": _("not a task of this queue")} for i in foreign[:50]],
            )
        open_ids = [i for i in sorted(states) if states[i] == Task.State.OPEN]
        ended = 0
        for chunk in _chunks(open_ids):
            ended += Assignment.objects.filter(
                task_id__in=chunk, state=Assignment.State.LEASED
            ).update(state=Assignment.State.EXPIRED, finished_at=now)
            Task.objects.filter(pk__in=chunk).update(
                state=Task.State.CANCELLED,
                outcome={"cancelled": True, "reason": reason},
                decided_at=now,
                active_count=F("done_count"),  # no live leases are left
            )
    return CancelResult(
        cancelled=len(open_ids), skipped=len(ids) - len(open_ids), leases_ended=ended
    )


# --------------------------------------------------------------------------------------------
# Claiming
# --------------------------------------------------------------------------------------------
@dataclass
class ClaimResult:
    assignment: Assignment | None
    message: str = ""
    retry_after: int | None = None  # seconds, when leases held by others may come back

    @property
    def task(self) -> Task | None:
        return self.assignment.task if self.assignment else None


def _enrollment(queue: TaskQueue, annotator) -> Enrollment:
    initial = Enrollment.State.QUALIFYING if queue.qualification_count else Enrollment.State.ACTIVE
    enrollment, _created = Enrollment.objects.get_or_create(
        queue=queue, annotator=annotator, defaults={"state": initial}
    )
    return enrollment


def _not_answered_by(annotator) -> Exists:
    # Expired leases may be reclaimed by the same person; answered, skipped, reported and live
    # ones may not.
    return Exists(
        Assignment.objects.filter(task=OuterRef("pk"), annotator=annotator).exclude(
            state=Assignment.State.EXPIRED
        )
    )


def _expired_lease_of(annotator) -> Exists:
    return Exists(
        Assignment.objects.filter(
            task=OuterRef("pk"), annotator=annotator, state=Assignment.State.EXPIRED
        )
    )


def _lease(
    task: Task, queue: TaskQueue, annotator, now, *, gold: bool, revive: bool = True
) -> Assignment:
    kind = get_kind(queue.kind)
    presentation = kind.presentation(random.Random())
    expires = now + queue.lease_ttl
    revived = revive and Assignment.objects.filter(
        task=task, annotator=annotator, state=Assignment.State.EXPIRED
    ).update(
        state=Assignment.State.LEASED,
        leased_at=now,
        expires_at=expires,
        finished_at=None,
        presentation=presentation,
    )
    if revived:
        assignment = Assignment.objects.get(task=task, annotator=annotator)
    else:
        assignment = Assignment.objects.create(
            task=task,
            queue=queue,
            annotator=annotator,
            is_gold=gold,
            leased_at=now,
            expires_at=expires,
            presentation=presentation,
        )
    assignment.task = task
    assignment.queue = queue
    return assignment


def _free_slots(queue: TaskQueue, annotator):
    """Open regular tasks with a free slot this person may take (no lock; a plain read)."""
    return (
        Task.objects.filter(
            queue=queue, state=Task.State.OPEN, is_gold=False, active_count__lt=F("required")
        )
        .exclude(_not_answered_by(annotator))
        .order_by()
    )


_ASSIGNMENT = Shape(Assignment, "a")
_TASK = Shape(Task, "t")
_QUEUE = Shape(TaskQueue, "q")

# PostgreSQL: the whole claim is one statement and one round trip, atomic by itself (no
# transaction or savepoint of its own). It takes the fullest open slot this person may take with
# FOR UPDATE SKIP LOCKED (walking task_claim_idx), inserts the lease or revives this person's own
# expired lease on that task, and counts the slot only if a lease came out. When two claims of
# the same person race, the second one's insert meets the first one's live lease and returns
# nothing, so nothing is counted and the statement answers no row.
_PG_CLAIM = f"""
WITH picked AS (
    SELECT t.id FROM annotator_task t
    WHERE t.queue_id = %(queue)s AND t.state = 'open' AND NOT t.is_gold
      AND t.active_count < t.required
      AND NOT EXISTS (
          SELECT 1 FROM annotator_assignment a
          WHERE a.task_id = t.id AND a.annotator_id = %(person)s AND a.state <> 'expired')
    ORDER BY (t.required - t.active_count), t.id
    LIMIT 1
    FOR UPDATE OF t SKIP LOCKED
), leased AS (
    INSERT INTO annotator_assignment (task_id, queue_id, annotator_id, state, is_gold,
                                      leased_at, expires_at, presentation, report_reason)
    SELECT id, %(queue)s, %(person)s, 'leased', false, %(now)s, %(expires)s,
           %(presentation)s::jsonb, ''
    FROM picked
    ON CONFLICT (task_id, annotator_id) DO UPDATE
        SET state = 'leased', leased_at = EXCLUDED.leased_at, expires_at = EXCLUDED.expires_at,
            finished_at = NULL, presentation = EXCLUDED.presentation
        WHERE annotator_assignment.state = 'expired'
    RETURNING id, task_id
), counted AS (
    UPDATE annotator_task t SET active_count = t.active_count + 1
    FROM leased WHERE t.id = leased.task_id
    RETURNING {_TASK.columns}
)
SELECT leased.id, counted.* FROM leased JOIN counted ON TRUE
"""


def _claim_regular_pg(queue: TaskQueue, annotator, now) -> Assignment | None:
    presentation = get_kind(queue.kind).presentation(random.Random())
    expires = now + queue.lease_ttl
    with connection.cursor() as cursor:
        cursor.execute(
            _PG_CLAIM,
            {
                "queue": queue.pk,
                "person": annotator.pk,
                "now": now,
                "expires": expires,
                "presentation": json.dumps(presentation),
            },
        )
        row = cursor.fetchone()
    if row is None:
        return None
    task = _TASK.build(row, 1)
    task.queue = queue
    assignment = Assignment(
        pk=row[0],
        task=task,
        queue=queue,
        annotator=annotator,
        state=Assignment.State.LEASED,
        is_gold=False,
        leased_at=now,
        expires_at=expires,
        presentation=presentation,
    )
    assignment._state.adding = False
    assignment._state.db = connection.alias
    return assignment


def _claim_regular(queue: TaskQueue, annotator, now) -> Assignment | None:
    if connection.vendor == "postgresql":
        return _claim_regular_pg(queue, annotator, now)
    # Other databases (the SQLite demo): BEGIN IMMEDIATE serialises writers.
    with transaction.atomic():
        task = (
            _free_slots(queue, annotator)
            .annotate(expired_mine=_expired_lease_of(annotator))
            .order_by(F("required") - F("active_count"), "id")
            .first()
        )
        if task is None:
            return None
        Task.objects.filter(pk=task.pk).update(active_count=F("active_count") + 1)
        task.active_count += 1
        return _lease(task, queue, annotator, now, gold=False, revive=task.expired_mine)


def _claim_gold(queue: TaskQueue, annotator, now) -> Assignment | None:
    with transaction.atomic():
        ids = list(
            Task.objects.filter(queue=queue, is_gold=True, state=Task.State.OPEN)
            .exclude(Exists(Assignment.objects.filter(task=OuterRef("pk"), annotator=annotator)))
            .values_list("id", flat=True)[:200]
        )
        if not ids:
            return None
        task = Task.objects.get(pk=random.choice(ids))
        return _lease(task, queue, annotator, now, gold=True)


def _held_by_others(queue: TaskQueue, annotator, now) -> tuple[int, int | None]:
    """How many tasks this person could still get once other people's leases end."""
    live = Assignment.objects.filter(
        queue=queue, state=Assignment.State.LEASED, is_gold=False, expires_at__gt=now
    ).exclude(annotator=annotator)
    waiting = (
        Task.objects.filter(queue=queue, state=Task.State.OPEN, is_gold=False)
        .filter(Exists(live.filter(task=OuterRef("pk"))))
        .exclude(_not_answered_by(annotator))
        .count()
    )
    if not waiting:
        return 0, None
    soonest = live.order_by("expires_at").values_list("expires_at", flat=True).first()
    return waiting, max(int((soonest - now).total_seconds()), 1) if soonest else None


def _settle_qualification(enrollment: Enrollment, queue: TaskQueue) -> None:
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


# The person's standing in a queue, in one round trip: their enrollment state, and their live
# lease there (if any) with its task.
_STANDING_SQL = f"""
SELECT
    (SELECT e.state FROM annotator_enrollment e WHERE e.queue_id = %s AND e.annotator_id = %s),
    {_ASSIGNMENT.columns}, {_TASK.columns}
FROM (SELECT 1 AS one) AS one
LEFT JOIN annotator_assignment a ON a.id = (
    SELECT l.id FROM annotator_assignment l
    WHERE l.annotator_id = %s AND l.queue_id = %s AND l.state = 'leased' AND l.expires_at > %s
    ORDER BY l.leased_at LIMIT 1)
LEFT JOIN annotator_task t ON t.id = a.task_id
"""


def _standing(queue: TaskQueue, annotator, now) -> tuple[str | None, Assignment | None]:
    """This person's enrollment state and live lease (with its task) in the queue."""
    when = connection.ops.adapt_datetimefield_value(now)
    with connection.cursor() as cursor:
        cursor.execute(_STANDING_SQL, [queue.pk, annotator.pk, annotator.pk, queue.pk, when])
        row = cursor.fetchone()
    live = _ASSIGNMENT.build(row, 1)
    if live is not None:
        live.task = _TASK.build(row, 1 + _ASSIGNMENT.width)
        live.queue = live.task.queue = queue
    return row[0], live


def assignment_claim(*, queue: TaskQueue, annotator, now=None) -> ClaimResult:
    """Hand ``annotator`` their next task in ``queue``, or say truthfully why there is none."""
    now = now or timezone.now()
    if queue.status != TaskQueue.Status.OPEN:
        return ClaimResult(None, _("This queue is %(s)s.") % {"s": queue.get_status_display()})
    standing, live = _standing(queue, annotator, now)
    if live is not None:
        return ClaimResult(live)
    if standing == Enrollment.State.ACTIVE:
        enrollment = None  # the common case: nothing to check, nothing to load
    else:
        enrollment = _enrollment(queue, annotator)
        if enrollment.state in (Enrollment.State.FAILED, Enrollment.State.PAUSED):
            return ClaimResult(None, enrollment.reason or _("You are paused in this queue."))
    if enrollment is not None and enrollment.state == Enrollment.State.QUALIFYING:
        if enrollment.gold_answered < queue.qualification_count:
            assignment = _claim_gold(queue, annotator, now)
            if assignment is not None:
                return ClaimResult(assignment)
        with transaction.atomic():
            enrollment = Enrollment.objects.select_for_update().get(pk=enrollment.pk)
            if enrollment.state == Enrollment.State.QUALIFYING:
                _settle_qualification(enrollment, queue)
        if enrollment.state != Enrollment.State.ACTIVE:
            return ClaimResult(None, enrollment.reason)
    if queue.gold_rate and random.random() < queue.gold_rate:
        assignment = _claim_gold(queue, annotator, now)
        if assignment is not None:
            return ClaimResult(assignment)
    assignment = _claim_regular(queue, annotator, now)
    if assignment is None and leases_expire(queue=queue, now=now):
        # Expired leases are returned here, lazily, only when they stand between this person
        # and work (the beat job returns the rest): the hot path skips the scan.
        assignment = _claim_regular(queue, annotator, now)
    if assignment is None and _free_slots(queue, annotator).exists():
        # SKIP LOCKED passed over free slots that other claims or submits held for an
        # instant. There is work, so never answer "no more tasks": try again, or say when.
        assignment = _claim_regular(queue, annotator, now)
        if assignment is None:
            return ClaimResult(
                None,
                _("Tasks are being handed out right now; checking again shortly."),
                retry_after=1,
            )
    if assignment is not None:
        return ClaimResult(assignment)
    waiting, retry_after = _held_by_others(queue, annotator, now)
    if waiting:
        return ClaimResult(
            None,
            _(
                "%(n)d task(s) are being worked on by others and may come back to the pool; "
                "checking again shortly."
            )
            % {"n": waiting},
            retry_after=retry_after,
        )
    return ClaimResult(None, _("No more tasks for you in this queue. Thank you!"))


def leases_expire(*, queue: TaskQueue | None = None, now=None, limit: int = 1000) -> int:
    """Return expired leases to the pool (lazily from claims, and from the beat job).

    A task that an expired lease alone kept open past a lowered redundancy is decided here.
    """
    now = now or timezone.now()
    stale = Assignment.objects.filter(state=Assignment.State.LEASED, expires_at__lte=now)
    if queue is not None:
        stale = stale.filter(queue=queue)
    return _leases_end(stale[:limit], now=now, wait=False)


def _leases_end(leases, *, now, wait: bool) -> int:
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


def annotator_leases_revoke(*, annotator, everywhere: bool = False, now=None) -> int:
    """End ``annotator``'s leases wherever they may no longer work, at once.

    That is every lease when they lost the crowdworker role or were deactivated (or
    ``everywhere``, e.g. before the account is deleted), else the leases in projects they are
    no longer a member of (admins keep theirs). The slots go back to the pool as on expiry;
    the person's later submit, skip, report or heartbeat on those tasks answers 404
    (``_held_assignment``). Returns how many leases ended.
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
    return _leases_end(leases.order_by("task_id"), now=now, wait=True)


def project_member_remove(*, project: Project, user, by=None, now=None) -> int:
    """Take ``user`` out of ``project``; their live leases there end at once.

    ``by`` (the curator removing them) may not remove themselves: a curator who did would lose
    the page they did it from. Returns how many leases ended.
    """
    if by is not None and by.pk == user.pk:
        raise Invalid(_("You cannot remove yourself from a project; ask another curator."))
    if not project.members.filter(pk=user.pk).exists():
        raise NotFound(_("%(u)s is not a member of this project.") % {"u": user.username})
    project.members.remove(user)
    return annotator_leases_revoke(annotator=user, now=now)


# The task, its queue and whether the person is (still) a member of the queue's project.
_HELD_TASK_SQL = f"""
SELECT {_TASK.columns}, {_QUEUE.columns},
    EXISTS (SELECT 1 FROM annotator_project_members m
            WHERE m.project_id = q.project_id AND m.user_id = %s)
FROM annotator_task t JOIN annotator_taskqueue q ON q.id = t.queue_id
WHERE t.id = %s
"""
_HELD_ASSIGNMENT_SQL = f"""
SELECT {_ASSIGNMENT.columns} FROM annotator_assignment a
WHERE a.task_id = %s AND a.annotator_id = %s
"""


def _fetch_one(sql: str, params: list, *, lock: str = "") -> tuple | None:
    if lock and connection.features.has_select_for_update:
        sql += f" FOR UPDATE{lock}"
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()


def may_work(person) -> bool:
    """Whether ``person`` may answer tasks at all: an active crowdworker (admins pass).

    Read on every submit, skip, report and heartbeat; the roles come with the request's user
    (``platform.auth`` reads them with the token), so a role taken away stops work at once.
    """
    return person.is_active and roles.has_role(person, [roles.CROWDWORKER])


def _held_assignment(*, task_id: int, annotator, now) -> Assignment:
    """Lock the task, then this person's assignment on it (task first, as everywhere).

    Someone who may no longer work, or is no longer a member of the task's project (admins
    excepted), is answered as if the task did not exist: revocation stops work at once.

    Only the task row is locked, never the queue's: that would serialise a queue's submits.
    Hand-written statements: this runs on every submit and heartbeat (see ``platform.rows``).
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
    assignment = _ASSIGNMENT.build(mine)
    task = _TASK.build(row)
    task.queue = _QUEUE.build(row, _TASK.width)
    assignment.task = task
    assignment.queue = task.queue
    return assignment


def _lease_lost(assignment: Assignment, now) -> Conflict | None:
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
RETURNING {_ASSIGNMENT.columns}
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
            return _ASSIGNMENT.build(row)
    with transaction.atomic():
        assignment = _held_assignment(task_id=task_id, annotator=annotator, now=now)
        if (error := _lease_lost(assignment, now)) is not None:
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
        assignment = _held_assignment(task_id=task_id, annotator=annotator, now=now)
        why = reason(assignment.queue) if reason is not None else ""
        if assignment.state == state:
            return assignment  # idempotent
        if (error := _lease_lost(assignment, now)) is not None:
            raise error
        assignment.state = state
        assignment.finished_at = now
        assignment.report_reason = why
        assignment.save(update_fields=["state", "finished_at", "report_reason"])
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


# --------------------------------------------------------------------------------------------
# Submitting and deciding
# --------------------------------------------------------------------------------------------
@dataclass
class SubmitResult:
    annotation: Annotation
    created: bool
    next: ClaimResult


def _record_gold(queue: TaskQueue, annotator, correct: bool) -> Enrollment:
    enrollment = _enrollment(queue, annotator)
    enrollment = Enrollment.objects.select_for_update().get(pk=enrollment.pk)
    enrollment.gold_answered += 1
    enrollment.gold_correct += int(correct)
    enrollment.save(update_fields=["gold_answered", "gold_correct", "updated_at"])
    accuracy = enrollment.gold_correct / enrollment.gold_answered
    if (
        enrollment.state == Enrollment.State.QUALIFYING
        and enrollment.gold_answered >= queue.qualification_count
    ):
        _settle_qualification(enrollment, queue)
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


def task_decide(*, task: Task, now=None) -> None:
    """Aggregate a task's responses by its queue's rule; escalate or finish; call the handler.

    The caller holds the task's row lock.
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
        return
    task.state = Task.State.DECIDED if decision.decided else Task.State.UNDECIDED
    task.outcome = kind.outcome(decision, responses)
    task.decided_at = now
    task.save(update_fields=["state", "outcome", "agreement", "decided_at"])
    run_outcome_handler(task, decision)


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
    *, task_id: int, annotator, response: Any, duration_ms: int = 0, now=None
) -> SubmitResult:
    """Store one answer and hand out the next task in the same call.

    Idempotent: a second submit of the same answer stores nothing and returns the same next
    task; a different answer to a task already answered is refused (409), the first one kept.
    """
    now = now or timezone.now()
    with transaction.atomic():
        assignment = _held_assignment(task_id=task_id, annotator=annotator, now=now)
        task, queue = assignment.task, assignment.queue
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
            if (error := _lease_lost(assignment, now)) is not None:
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
                _record_gold(queue, annotator, bool(correct))
            else:
                task.done_count += 1  # counted in the database by _answer_store
                if task.done_count >= task.required and task.state == Task.State.OPEN:
                    task_decide(task=task, now=now)
        # The next task is claimed in the same transaction: one commit (one WAL flush) per
        # submit. ``queue`` was read with the task in this transaction: its status is current.
        following = assignment_claim(queue=queue, annotator=annotator, now=now)
    return SubmitResult(annotation, created, following)


def enrollment_resume(*, enrollment: Enrollment) -> Enrollment:
    """A curator lets a paused or failed annotator work again."""
    Enrollment.objects.filter(pk=enrollment.pk).update(
        state=Enrollment.State.ACTIVE, reason="", updated_at=timezone.now()
    )
    enrollment.refresh_from_db()
    return enrollment


# --------------------------------------------------------------------------------------------
# People
# --------------------------------------------------------------------------------------------
def invitation_create(
    *, created_by, role: str, project: Project | None = None, days: int = 7
) -> Invitation:
    if role not in roles.ALL_ROLES:
        raise Invalid(_("Unknown role %(r)s.") % {"r": role})
    if role == roles.ADMIN and not roles.has_role(created_by, [roles.ADMIN]):
        raise Invalid(_("Only an admin can invite an admin."))
    return Invitation.objects.create(
        created_by=created_by,
        role=role,
        project=project,
        expires_at=timezone.now() + timedelta(days=days),
    )


def invitation_accept(*, token: str, username: str, password: str) -> AbstractBaseUser:
    User = get_user_model()
    with transaction.atomic():
        invitation = Invitation.objects.select_for_update().filter(token=token).first()
        if invitation is None or invitation.used_at or invitation.expires_at <= timezone.now():
            raise NotFound(_("This invitation link is not valid any more."))
        if User.objects.filter(username__iexact=username).exists():
            raise Invalid(_("That user name is taken."))
        user = User.objects.create_user(username=username, password=password)
        roles.grant_role(user, invitation.role)
        if invitation.project_id:
            invitation.project.members.add(user)
        invitation.used_at = timezone.now()
        invitation.used_by = user
        invitation.save(update_fields=["used_at", "used_by"])
    return user
