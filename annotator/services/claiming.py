"""Claiming is the hot path. On PostgreSQL it takes the fullest open task with
``SELECT … FOR UPDATE SKIP LOCKED`` so concurrent annotators never wait on each other and never
get the same slot; on SQLite (the demo) writers are serialised by ``BEGIN IMMEDIATE``. In both,
the ``task_active_lte_required`` check constraint makes over-assignment impossible."""

from __future__ import annotations

import hashlib
import hmac
import json
import random
from dataclasses import dataclass

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, F, OuterRef
from django.utils import timezone
from django.utils.translation import gettext as _

from ..kinds import get_kind
from ..models import Assignment, Enrollment, Task, TaskQueue
from .decisions import enrollment_get, qualification_settle
from .leases import ASSIGNMENT_SHAPE, TASK_SHAPE, leases_expire


@dataclass
class ClaimResult:
    assignment: Assignment | None
    message: str = ""
    retry_after: int | None = None  # seconds, when leases held by others may come back

    @property
    def task(self) -> Task | None:
        return self.assignment.task if self.assignment else None


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


def look_ahead_presentation(queue: TaskQueue, task_id: int, annotator) -> dict:
    """How the look-ahead shows ``task_id`` to ``annotator`` (the kind's order of choices, say),
    and what the claim that hands them that task as preferred stores: drawn from a generator
    seeded by the task and the person, keyed with SECRET_KEY so they cannot foresee it. The
    page painted ahead and the lease then agree on which side is which."""
    key = settings.SECRET_KEY.encode()
    seed = hmac.new(key, f"{task_id}:{annotator.pk}".encode(), hashlib.sha256).digest()
    return get_kind(queue.kind).presentation(random.Random(seed))


def _lease_terms(queue: TaskQueue, now, *, task_id: int | None = None, annotator=None) -> dict:
    """A new lease's times and presentation (the kind's random order of choices, say; with
    ``task_id``, the look-ahead's for that task and ``annotator``)."""
    if task_id is None:
        presentation = get_kind(queue.kind).presentation(random.Random())
    else:
        presentation = look_ahead_presentation(queue, task_id, annotator)
    return {"leased_at": now, "expires_at": now + queue.lease_ttl, "presentation": presentation}


def _lease(
    task: Task,
    queue: TaskQueue,
    annotator,
    now,
    *,
    gold: bool,
    revive: bool = True,
    preferred: bool = False,
) -> Assignment:
    if preferred:
        terms = _lease_terms(queue, now, task_id=task.pk, annotator=annotator)
    else:
        terms = _lease_terms(queue, now)
    revived = revive and Assignment.objects.filter(
        task=task, annotator=annotator, state=Assignment.State.EXPIRED
    ).update(state=Assignment.State.LEASED, finished_at=None, **terms)
    if revived:
        assignment = Assignment.objects.get(task=task, annotator=annotator)
    else:
        assignment = Assignment.objects.create(
            task=task, queue=queue, annotator=annotator, is_gold=gold, **terms
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
    RETURNING {TASK_SHAPE.columns}
)
SELECT leased.id, counted.* FROM leased JOIN counted ON TRUE
"""


# The same claim restricted to the one task the person's page painted ahead (``prefer``).
_PG_CLAIM_PREFERRED = _PG_CLAIM.replace(
    "WHERE t.queue_id = %(queue)s AND", "WHERE t.id = %(prefer)s AND t.queue_id = %(queue)s AND"
)
assert _PG_CLAIM_PREFERRED != _PG_CLAIM  # noqa: S101 - the replace above found its text


def _claim_regular_pg(
    queue: TaskQueue, annotator, now, prefer: int | None = None
) -> Assignment | None:
    if prefer is None:
        terms, sql = _lease_terms(queue, now), _PG_CLAIM
    else:
        terms = _lease_terms(queue, now, task_id=prefer, annotator=annotator)
        sql = _PG_CLAIM_PREFERRED
    with connection.cursor() as cursor:
        cursor.execute(
            sql,
            {
                "prefer": prefer,
                "queue": queue.pk,
                "person": annotator.pk,
                "now": now,
                "expires": terms["expires_at"],
                "presentation": json.dumps(terms["presentation"]),
            },
        )
        row = cursor.fetchone()
    if row is None:
        return None
    task = TASK_SHAPE.build(row, 1)
    task.queue = queue
    assignment = Assignment(
        pk=row[0],
        task=task,
        queue=queue,
        annotator=annotator,
        state=Assignment.State.LEASED,
        is_gold=False,
        **terms,
    )
    assignment._state.adding = False
    assignment._state.db = connection.alias
    return assignment


# The claim's order (the fullest open slot first, then the oldest task): _PG_CLAIM and the
# other databases' claim below, and the look-ahead of tasks_up_next.
_CLAIM_ORDER = (F("required") - F("active_count"), "id")


def tasks_up_next(*, queue: TaskQueue, annotator, limit: int = 2) -> list[tuple[int, dict]]:
    """The (id, payload) of the tasks ``annotator`` would most likely be handed next in ``queue``,
    in the claim's own order: a plain read that locks nothing and leases nothing, so it holds
    no slot and takes no task from anyone. The workspace preloads their images while the
    current task is answered; if someone else takes one first, the claim hands out another
    task and only a preloaded image is wasted. (A read, kept here beside the claim whose order
    it must follow.)"""
    if queue.status != TaskQueue.Status.OPEN:
        return []
    rows = _free_slots(queue, annotator).order_by(*_CLAIM_ORDER).values_list("id", "payload")
    return list(rows[:limit])


def _claim_regular(
    queue: TaskQueue, annotator, now, prefer: int | None = None
) -> Assignment | None:
    if connection.vendor == "postgresql":
        return _claim_regular_pg(queue, annotator, now, prefer)
    # Other databases (the SQLite demo): BEGIN IMMEDIATE serialises writers.
    with transaction.atomic():
        free = _free_slots(queue, annotator)
        if prefer is not None:
            free = free.filter(pk=prefer)
        task = (
            free.annotate(expired_mine=_expired_lease_of(annotator)).order_by(*_CLAIM_ORDER).first()
        )
        if task is None:
            return None
        Task.objects.filter(pk=task.pk).update(active_count=F("active_count") + 1)
        task.active_count += 1
        return _lease(
            task,
            queue,
            annotator,
            now,
            gold=False,
            revive=task.expired_mine,
            preferred=prefer is not None,
        )


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


# The person's standing in a queue, in one round trip: their enrollment state, and their live
# lease there (if any) with its task.
_STANDING_SQL = f"""
SELECT
    (SELECT e.state FROM annotator_enrollment e WHERE e.queue_id = %s AND e.annotator_id = %s),
    {ASSIGNMENT_SHAPE.columns}, {TASK_SHAPE.columns}
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
    live = ASSIGNMENT_SHAPE.build(row, 1)
    if live is not None:
        live.task = TASK_SHAPE.build(row, 1 + ASSIGNMENT_SHAPE.width)
        live.queue = live.task.queue = queue
    return row[0], live


def assignment_claim(
    *, queue: TaskQueue, annotator, now=None, prefer: int | None = None
) -> ClaimResult:
    """Hand ``annotator`` their next task in ``queue``, or say truthfully why there is none.

    ``prefer``: the task their page already painted as the next one (the look-ahead of
    ``tasks_up_next``, named when the previous task was shown, so in the claim's order of a
    moment ago). It is handed out, with the look-ahead's presentation, when it still has a free
    slot this person may take; otherwise the claim goes on as without it."""
    now = now or timezone.now()
    if queue.status != TaskQueue.Status.OPEN:
        return ClaimResult(None, _("This queue is %(s)s.") % {"s": queue.get_status_display()})
    standing, live = _standing(queue, annotator, now)
    if live is not None:
        return ClaimResult(live)
    if standing == Enrollment.State.ACTIVE:
        enrollment = None  # the common case: nothing to check, nothing to load
    else:
        enrollment = enrollment_get(queue, annotator)
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
                qualification_settle(enrollment, queue)
        if enrollment.state != Enrollment.State.ACTIVE:
            return ClaimResult(None, enrollment.reason)
    if queue.gold_rate and random.random() < queue.gold_rate:
        assignment = _claim_gold(queue, annotator, now)
        if assignment is not None:
            return ClaimResult(assignment)
    assignment = None
    if prefer is not None and 0 < prefer < 2**63:
        assignment = _claim_regular(queue, annotator, now, prefer)
    if assignment is None:
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


def tasks_keep_from(*, task_ids: list[int], person) -> int:
    """``person`` is never handed these tasks (the author of the item other people verify): a
    finished assignment in the "skipped" state, which claiming passes over like any skip and
    which holds no slot. Idempotent; returns how many were added."""
    now = timezone.now()
    tasks = Task.objects.filter(pk__in=task_ids).values_list("pk", "queue_id")
    made = Assignment.objects.bulk_create(
        [
            Assignment(
                task_id=pk,
                queue_id=queue_id,
                annotator=person,
                state=Assignment.State.SKIPPED,
                leased_at=now,
                expires_at=now,
                finished_at=now,
            )
            for pk, queue_id in tasks
        ],
        ignore_conflicts=True,
    )
    return len(made)
