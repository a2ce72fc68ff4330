"""Reads for pages and endpoints: querysets already scoped to what the user may see.

Reach: admins see everything; curators and researchers see the projects they are members of;
crowdworkers see the open or paused queues of their projects, and tasks only through their own
assignments. Anything outside reach is answered exactly like a missing object (404).
"""

from __future__ import annotations

from datetime import datetime, time

from django.db import connection
from django.db.models import Count, Q, QuerySet
from django.http import Http404
from django.utils import timezone

from .models import Annotation, Assignment, Task, TaskQueue
from .platform import roles
from .platform.models import Project
from .platform.rows import Shape
from .platform.scoping import get_or_404, projects_for


def queues_for(user) -> QuerySet[TaskQueue]:
    """Queues a user can see: staff roles see their projects' queues; crowdworkers the open ones."""
    qs = TaskQueue.objects.select_related("project").filter(project__in=projects_for(user))
    if roles.has_role(user, [roles.CURATOR, roles.RESEARCHER]):
        return qs
    return qs.exclude(status=TaskQueue.Status.CLOSED)


def managed_queues_for(user) -> QuerySet[TaskQueue]:
    """Queues a curator may change."""
    if not roles.has_role(user, [roles.CURATOR]):
        return TaskQueue.objects.none()
    return TaskQueue.objects.select_related("project").filter(project__in=projects_for(user))


_WORK_QUEUE = Shape(TaskQueue, "q")
_WORK_QUEUE_SQL = f"""
SELECT {_WORK_QUEUE.columns} FROM annotator_taskqueue q
JOIN annotator_project_members m ON m.project_id = q.project_id
WHERE q.id = %s AND m.user_id = %s AND q.status <> %s
"""


def work_queue_or_404(user, queue_id: int) -> TaskQueue:
    """``queues_for(user)`` narrowed to one queue, on the annotators' hot path (``next``).

    The same reach in one hand-written statement for people with no staff role: the open or
    paused queues of their projects.
    """
    if roles.has_role(user, [roles.CURATOR, roles.RESEARCHER]):
        return get_or_404(queues_for(user), pk=queue_id)
    if not 0 < queue_id < 2**63:  # no such id can exist (and SQLite would refuse it)
        raise Http404
    with connection.cursor() as cursor:
        cursor.execute(_WORK_QUEUE_SQL, [queue_id, user.pk, TaskQueue.Status.CLOSED.value])
        row = cursor.fetchone()
    if row is None:
        raise Http404
    return _WORK_QUEUE.build(row)


def tasks_for(user) -> QuerySet[Task]:
    """Curators and researchers see every task of their queues (gold answers included)."""
    if not roles.has_role(user, [roles.CURATOR, roles.RESEARCHER]):
        return Task.objects.none()
    return Task.objects.filter(queue__project__in=projects_for(user))


def annotated_today(user) -> int:
    start = timezone.make_aware(datetime.combine(timezone.localdate(), time.min))
    return Annotation.objects.filter(annotator=user, created_at__gte=start).count()


def queue_progress(queue_ids: list[int]) -> dict[int, dict]:
    """Counts per queue: open, leased, done, decided, undecided, escalated, cancelled.

    Cancelled tasks were withdrawn from the work: ``total`` (and so ``percent``) leaves them
    out, and ``cancelled`` counts them.
    """
    now = timezone.now()
    cancelled = Q(state=Task.State.CANCELLED)
    rows = (
        Task.objects.filter(queue_id__in=queue_ids, is_gold=False)
        .values("queue_id")
        .annotate(
            total=Count("id", filter=~cancelled),
            open=Count("id", filter=Q(state=Task.State.OPEN)),
            decided=Count("id", filter=Q(state=Task.State.DECIDED)),
            undecided=Count("id", filter=Q(state=Task.State.UNDECIDED)),
            escalated=Count("id", filter=Q(escalations__gt=0) & ~cancelled),
            cancelled=Count("id", filter=cancelled),
        )
    )
    out = {
        qid: {
            "total": 0,
            "open": 0,
            "decided": 0,
            "undecided": 0,
            "escalated": 0,
            "cancelled": 0,
            "leased": 0,
        }
        for qid in queue_ids
    }
    for row in rows:
        out[row.pop("queue_id")].update(row)
    leased = (
        Assignment.objects.filter(
            queue_id__in=queue_ids,
            state=Assignment.State.LEASED,
            expires_at__gt=now,
            is_gold=False,  # gold leases are not tasks of the progress bar
        )
        .values("queue_id")
        .annotate(n=Count("id"))
    )
    for row in leased:
        out[row["queue_id"]]["leased"] = row["n"]
    gold = (
        Task.objects.filter(queue_id__in=queue_ids, is_gold=True)
        .values("queue_id")
        .annotate(n=Count("id"))
    )
    for qid in out:
        out[qid]["gold"] = 0
    for row in gold:
        out[row["queue_id"]]["gold"] = row["n"]
    for counts in out.values():
        counts["done"] = counts["decided"] + counts["undecided"]
        counts["percent"] = round(100 * counts["done"] / counts["total"]) if counts["total"] else 0
    return out


def available_queues(user) -> list[TaskQueue]:
    """Open queues a crowdworker can work in, highest priority first, with progress counts."""
    queues = list(queues_for(user).filter(status=TaskQueue.Status.OPEN).order_by("-priority", "id"))
    progress = queue_progress([q.pk for q in queues])
    for q in queues:
        q.progress = progress[q.pk]
    return queues


def project_people(project: Project, *, user_id: int | None = None) -> list:
    """The project's members (or the one with ``user_id``), by user name, each with ``roles``
    (their role names) and ``live_leases`` (tasks they hold right now in the project's
    queues); two queries."""
    live = Count(
        "assignments",
        filter=Q(
            assignments__queue__project=project,
            assignments__state=Assignment.State.LEASED,
            assignments__expires_at__gt=timezone.now(),
        ),
    )
    members = project.members.all()
    if user_id is not None:
        members = members.filter(pk=user_id)
    people = list(
        members.annotate(live_leases=live).prefetch_related("groups").order_by("username")
    )
    for person in people:
        person.roles = roles.remember_roles(person, [g.name for g in person.groups.all()])
    return people
