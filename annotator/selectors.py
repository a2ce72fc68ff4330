"""Reads for pages and endpoints: querysets already scoped to what the user may see.

Reach: admins see everything; curators and researchers see the projects they are members of;
crowdworkers see the open or paused queues of their projects, and tasks only through their own
assignments. Anything outside reach is answered exactly like a missing object (404).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, time

from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import connection
from django.db.models import Count, F, Q, QuerySet, Sum
from django.http import Http404
from django.utils import timezone
from django.utils.translation import gettext_lazy

from .kinds import get_kind
from .models import (
    Annotation,
    Assignment,
    Enrollment,
    Report,
    SentBackAnnotation,
    Task,
    TaskQueue,
    UndoneAnnotation,
    search_text,
)
from .platform import roles
from .platform.models import Project
from .platform.scoping import get_or_404, projects_for
from .platform.sql_rows import Shape
from .services.undoing import undo_refusal


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
    return my_answer_counts(user)["today"]


def my_answer_counts(user, *, session_since=None, queue: TaskQueue | None = None, now=None):
    """The workspace's counters in one query: the person's answers today, since
    ``session_since`` (the workspace session's start; an undo takes its answer out of both),
    and with ``queue``, whether they answered there within its undo window (``can_undo``)."""
    now = now or timezone.now()
    today = timezone.make_aware(datetime.combine(timezone.localdate(now), time.min))
    counts = {"today": Count("id", filter=Q(created_at__gte=today))}
    since = [today]
    if session_since is not None:
        counts["session"] = Count("id", filter=Q(created_at__gte=session_since))
        since.append(session_since)
    undo_window = queue is not None and queue.undo_window.total_seconds() > 0
    if undo_window:
        undo_since = now - queue.undo_window
        counts["undo"] = Count("id", filter=Q(queue=queue, created_at__gt=undo_since))
        since.append(undo_since)
    row = Annotation.objects.filter(annotator=user, created_at__gte=min(since)).aggregate(**counts)
    return {
        "today": row["today"],
        "session": row.get("session", 0),
        "can_undo": bool(row.get("undo")),
    }


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


# The header's queue-wide counts scan the queue's tasks. Up to this many tasks they are exact on
# every refresh; above it (a corpus-sized queue, where one answer does not move the bar) each
# process reuses them for PROGRESS_REUSE_S, so a crowd refreshing after every answer does not
# scan a million rows each time. The person's own count is always exact (an index lookup).
PROGRESS_EXACT_UP_TO = 20_000
PROGRESS_REUSE_S = 15


def _queue_counts(queue: TaskQueue) -> dict:
    key = f"blindspot:queue-counts:{queue.pk}"
    counts = cache.get(key)
    if counts is None:
        counts = Task.objects.filter(queue=queue, is_gold=False).aggregate(
            total=Count("id", filter=~Q(state=Task.State.CANCELLED)),
            done=Count("id", filter=Q(state__in=[Task.State.DECIDED, Task.State.UNDECIDED])),
            answers=Sum("done_count"),
        )
        if counts["total"] > PROGRESS_EXACT_UP_TO:
            cache.set(key, counts, PROGRESS_REUSE_S)
    return counts


def my_queue_progress(user, queue: TaskQueue) -> dict:
    """The workspace header's figures: the queue's tasks done (decided or closed undecided) of
    its total (cancelled ones left out, as on the home page), and the person's share: their
    answers here (gold checks left out) of every answer the queue's tasks count."""
    counts = _queue_counts(queue)
    mine = Annotation.objects.filter(queue=queue, annotator=user, is_gold=False).count()
    total, done, answers = counts["total"], counts["done"], counts["answers"] or 0
    return {
        "total": total,
        "done": done,
        "percent": round(100 * done / total) if total else 0,
        "mine": mine,
        "answers": answers,
        "share": round(100 * mine / answers) if answers else 0,
    }


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


def live_leases_by_person(project: Project) -> dict[int, list[Assignment]]:
    """Who holds which task of the project right now and since when (oldest first), by person;
    one query."""
    held: dict[int, list[Assignment]] = {}
    leases = (
        Assignment.objects.filter(
            queue__project=project,
            state=Assignment.State.LEASED,
            expires_at__gt=timezone.now(),
        )
        .select_related("queue")
        .order_by("leased_at", "id")
    )
    for lease in leases:
        held.setdefault(lease.annotator_id, []).append(lease)
    return held


# --- the task browser ---------------------------------------------------------------------------
TASK_SORTS: dict[str, tuple] = {
    # each order has an index leading with the queue (Task.Meta.indexes): fast on 1M tasks
    "id": ("id",),
    "-id": ("-id",),
    "agreement": ("agreement", "id"),  # least agreement first; tasks without one last
    "-decided_at": (F("decided_at").desc(nulls_last=True), "-id"),
}
COUNT_CAP = 1_000  # counting further on a 1M-task queue costs more than the page itself


@dataclass(frozen=True)
class TaskFilter:
    """What the task browser (page and API) filters and sorts by; every field optional."""

    state: str = ""
    flag: str = ""
    annotator: str = ""  # a user name: tasks this person answered
    gold: bool | None = None
    text: str = ""  # in the payload (as JSON text) or the external id, case-insensitive
    sort: str = "id"


def task_browse(queue: TaskQueue, f: TaskFilter) -> QuerySet[Task]:
    """The queue's tasks matching ``f``, in ``f.sort`` order (the caller scoped ``queue``)."""
    tasks = Task.objects.filter(queue=queue)
    if f.state:
        tasks = tasks.filter(state=f.state)
    if f.flag == "escalated":
        tasks = tasks.filter(escalations__gt=0)
    elif f.flag == "settled":
        tasks = tasks.filter(settled_at__isnull=False)
    elif f.flag == "reported":
        reported = Assignment.objects.filter(queue=queue, state=Assignment.State.REPORTED)
        tasks = tasks.filter(pk__in=reported.values("task_id"))
    if f.annotator:
        # the person's id first: the answers' (queue, annotator) index then serves the filter
        person = get_user_model().objects.filter(username=f.annotator).values_list("pk")
        person_id = person.first()
        answered = Annotation.objects.filter(
            queue=queue, annotator_id=person_id[0] if person_id else None
        )
        tasks = tasks.filter(pk__in=answered.values("task_id"))
    if f.gold is not None:
        tasks = tasks.filter(is_gold=f.gold)
    if f.text:
        # UPPER(search text) LIKE UPPER('%…%'): task_search_idx (pg_trgm) serves it
        tasks = tasks.alias(search=search_text()).filter(search__icontains=f.text)
    return tasks.order_by(*TASK_SORTS.get(f.sort, TASK_SORTS["id"]))


def queue_people(queue: TaskQueue) -> list[str]:
    """User names of the people enrolled in a queue (the browser's "answered by" choices)."""
    return list(
        Enrollment.objects.filter(queue=queue)
        .order_by("annotator__username")
        .values_list("annotator__username", flat=True)
    )


@dataclass(frozen=True)
class TaskPage:
    tasks: list[Task]
    number: int
    per_page: int
    has_next: bool
    count: int  # capped at COUNT_CAP + 1 ("more than 1,000")

    @property
    def count_capped(self) -> bool:
        return self.count > COUNT_CAP

    @property
    def start(self) -> int:
        return (self.number - 1) * self.per_page + 1 if self.tasks else 0

    @property
    def end(self) -> int:
        return self.start + len(self.tasks) - 1 if self.tasks else 0


def task_page(queue: TaskQueue, f: TaskFilter, *, number: int, per_page: int) -> TaskPage:
    """One page of ``task_browse(queue, f)`` by offset: one count capped at ``COUNT_CAP`` + 1
    and one page query, never a full count.

    A text search is estimated by PostgreSQL at a fixed share of the rows, so for a rare word it
    would walk the queue in page order testing every payload (seconds on 1M). When the capped
    count says few tasks match, their ids come from the trigram index first and the page is
    ordered among them; when many match, walking in page order finds a page at once.
    """
    number = max(number, 1)
    offset = (number - 1) * per_page
    tasks = task_browse(queue, f)
    count = tasks.order_by()[: COUNT_CAP + 1].count()
    if f.text and count <= COUNT_CAP:
        ids = list(tasks.order_by().values_list("id", flat=True))
        tasks = Task.objects.filter(pk__in=ids).order_by(*TASK_SORTS.get(f.sort, ("id",)))
    rows = list(tasks[offset : offset + per_page + 1])
    return TaskPage(rows[:per_page], number, per_page, len(rows) > per_page, count)


HISTORY_LIMIT = 50
_SENT_BACK_REFUSAL = gettext_lazy("A curator sent this answer back; the task went to someone else.")


@dataclass
class HistoryEntry:
    """One answer in a person's recent history: standing (``undone_at`` None) or taken back.
    Only what the person gave and saw: no external id, no gold flag, no server-side mapping."""

    task_id: int
    response: dict
    answered_at: datetime
    undone_at: datetime | None
    undo_until: datetime | None  # while the answer may still be undone
    refusal: str  # why it can no longer be undone ("" when it can, or was undone)
    sent_back_at: datetime | None = None  # a curator sent it back (review), with this note
    sent_back_note: str = ""


def my_recent_answers(user, queue: TaskQueue, *, now=None) -> list[HistoryEntry]:
    """The person's last answers in ``queue``, newest first (``HISTORY_LIMIT``), with the ones
    they undid, and for each whether and until when it can still be undone."""
    now = now or timezone.now()
    standing = (
        Annotation.objects.filter(queue=queue, annotator=user)
        .select_related("task")
        .order_by("-created_at", "-id")[:HISTORY_LIMIT]
    )
    undone = UndoneAnnotation.objects.filter(queue=queue, annotator=user).order_by(
        "-undone_at", "-id"
    )[:HISTORY_LIMIT]
    public = get_kind(queue.kind).public_response
    entries = []
    for a in standing:
        refusal = undo_refusal(
            queue=queue,
            task_state=a.task.state,
            answered_at=a.created_at,
            now=now,
            is_gold=a.is_gold,
            settled=a.task.settled_at is not None,
        )
        until = None if refusal else a.created_at + queue.undo_window
        entries.append(
            HistoryEntry(a.task_id, public(a.response), a.created_at, None, until, refusal)
        )
    for u in undone:
        entries.append(
            HistoryEntry(u.task_id, public(u.response), u.answered_at, u.undone_at, None, "")
        )
    sent_back = SentBackAnnotation.objects.filter(queue=queue, annotator=user).order_by(
        "-sent_back_at", "-id"
    )[:HISTORY_LIMIT]
    for b in sent_back:
        entries.append(
            HistoryEntry(
                b.task_id,
                public(b.response),
                b.answered_at,
                None,
                None,
                _SENT_BACK_REFUSAL,
                sent_back_at=b.sent_back_at,
                sent_back_note=b.note,
            )
        )
    entries.sort(key=lambda e: e.sent_back_at or e.undone_at or e.answered_at, reverse=True)
    return entries[:HISTORY_LIMIT]


def undo_possible(user, queue: TaskQueue, *, now=None) -> bool:
    """Whether the person answered in ``queue`` within its undo window (the ``u`` button shows;
    a task that cannot be reopened is refused by the service with its reason)."""
    if queue.undo_window.total_seconds() <= 0:
        return False
    since = (now or timezone.now()) - queue.undo_window
    return Annotation.objects.filter(queue=queue, annotator=user, created_at__gt=since).exists()


def answer_summary(response) -> str:
    """A stored answer in one line for people: ``verdict: reject · reason: false``."""
    if not isinstance(response, dict):
        return str(response)
    parts = []
    for key, value in response.items():
        if value in (None, "", []):
            continue
        if isinstance(value, list):
            value = ", ".join(str(v) for v in value)
        elif isinstance(value, bool):
            value = "yes" if value else "no"
        parts.append(f"{key}: {value}")
    return " · ".join(parts)


def acceptance_by_person(project: Project) -> dict[int, dict]:
    """Per person who answered in the project's queues (gold checks aside): answers that stand
    (``accepted``), answers a curator sent back, and the share accepted; two queries."""
    accepted = dict(
        Annotation.objects.filter(queue__project=project, is_gold=False)
        .values_list("annotator")
        .annotate(n=Count("id"))
        .values_list("annotator", "n")
    )
    sent_back = dict(
        SentBackAnnotation.objects.filter(queue__project=project)
        .values_list("annotator")
        .annotate(n=Count("id"))
        .values_list("annotator", "n")
    )
    out = {}
    for person in accepted.keys() | sent_back.keys():
        a, b = accepted.get(person, 0), sent_back.get(person, 0)
        out[person] = {"accepted": a, "sent_back": b, "rate": a / (a + b)}
    return out


# --- the reports inbox --------------------------------------------------------------------------
def reports_for(user) -> QuerySet[Report]:
    """Reports of the projects a curator or researcher reaches (crowdworkers: none)."""
    if not roles.has_role(user, [roles.CURATOR, roles.RESEARCHER]):
        return Report.objects.none()
    return Report.objects.filter(queue__project__in=projects_for(user))


def managed_reports_for(user) -> QuerySet[Report]:
    """Reports a curator may handle (those of the queues they may change)."""
    return Report.objects.filter(queue__in=managed_queues_for(user))


def project_reports(
    project: Project, *, status: str = Report.Status.OPEN, queue_id: int | None = None
) -> QuerySet[Report]:
    """A project's reports (``status`` "" for all), newest first, with their task, queue,
    reporter and handler (one query)."""
    reports = Report.objects.filter(queue__project=project)
    if status:
        reports = reports.filter(status=status)
    if queue_id is not None:
        reports = reports.filter(queue_id=queue_id)
    return reports.select_related("task", "queue", "reporter", "handled_by").order_by("-id")


def open_report_counts(project: Project) -> dict[int, int]:
    """Open reports per queue of the project (queue id -> count); one query."""
    return dict(
        Report.objects.filter(queue__project=project, status=Report.Status.OPEN)
        .values_list("queue")
        .annotate(n=Count("id"))
        .values_list("queue", "n")
    )
