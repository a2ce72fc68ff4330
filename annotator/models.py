"""The annotation engine's data model.

Invariants the database guards (not only the code):
- a task never has more live + submitted assignments than it currently requires
  (``Task.active_count <= Task.required``; ``required`` grows by escalation and follows the
  queue's redundancy, never below the task's live + submitted assignments);
- one assignment and one annotation per task per annotator;
- an annotation is never edited (services only insert); an answer its author takes back within
  the queue's undo window moves, as it was, to ``UndoneAnnotation`` (the audit trail) and the
  person answers again.
"""

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import F, Q, Value
from django.db.models.functions import Cast, Concat
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from .kinds import REGISTRY

# The platform's models belong to this app: importing them here registers them.
from .platform.models import (  # noqa: F401
    Invitation,
    Job,
    Profile,
    Project,
    Webhook,
    WebhookDelivery,
)


class TaskQueue(models.Model):
    class Rule(models.TextChoices):
        UNANIMOUS = "unanimous", _("Unanimous")
        MAJORITY = "majority", _("Majority (more than half)")
        PLURALITY = "plurality", _("Plurality (unique most frequent)")

    class Status(models.TextChoices):
        OPEN = "open", _("Open")
        PAUSED = "paused", _("Paused")
        CLOSED = "closed", _("Closed")

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="queues")
    kind = models.CharField(max_length=40)
    title = models.CharField(max_length=200)
    instructions = models.TextField(blank=True, help_text=_("Markdown, shown in the help drawer."))
    config = models.JSONField(default=dict, blank=True)
    redundancy = models.PositiveSmallIntegerField(default=2)
    rule = models.CharField(max_length=16, choices=Rule.choices, default=Rule.MAJORITY)
    max_redundancy = models.PositiveSmallIntegerField(
        default=2, help_text=_("Escalation: extra replicas up to this many when no decision.")
    )
    lease_ttl = models.DurationField(default=timedelta(minutes=10))
    undo_window = models.DurationField(
        default=timedelta(minutes=2),
        help_text=_("How long after submitting a person may take an answer back (0: never)."),
    )
    priority = models.IntegerField(default=0)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.OPEN)
    gold_rate = models.FloatField(default=0.0, help_text=_("Share of served items that are gold."))
    qualification_count = models.PositiveSmallIntegerField(
        default=0, help_text=_("K gold items an annotator answers first (0 = no qualification).")
    )
    qualification_min_accuracy = models.FloatField(default=0.0)
    gold_pause_below = models.FloatField(
        null=True, blank=True, help_text=_("Pause an annotator whose gold accuracy falls below.")
    )
    gold_pause_min_answers = models.PositiveSmallIntegerField(default=5)
    outcome_handler = models.CharField(max_length=80, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-priority", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(redundancy__gte=1), name="queue_redundancy_gte_1"),
            models.CheckConstraint(
                condition=Q(max_redundancy__gte=F("redundancy")), name="queue_max_gte_redundancy"
            ),
            models.CheckConstraint(
                condition=Q(gold_rate__gte=0) & Q(gold_rate__lte=1), name="queue_gold_rate_0_1"
            ),
            models.CheckConstraint(
                condition=Q(qualification_min_accuracy__gte=0)
                & Q(qualification_min_accuracy__lte=1),
                name="queue_qual_accuracy_0_1",
            ),
            models.CheckConstraint(
                condition=Q(lease_ttl__gt=timedelta(0)), name="queue_lease_ttl_positive"
            ),
            models.CheckConstraint(
                condition=Q(undo_window__gte=timedelta(0)), name="queue_undo_window_not_negative"
            ),
        ]

    def __str__(self) -> str:
        return self.title

    @property
    def kind_label(self) -> str:
        """The task kind's name for people, in the active language ("Skill tags")."""
        kind = REGISTRY.get(self.kind)
        return gettext(kind.label) if kind else self.kind


def search_text() -> Concat:
    """What the task browser's text search reads: the payload as JSON text and the external id
    (one expression, so that the query and the trigram index are the same expression)."""
    return Concat(
        Cast("payload", models.TextField()),
        Value(" "),
        "external_id",
        output_field=models.TextField(),
    )


class Task(models.Model):
    class State(models.TextChoices):
        OPEN = "open", _("Open")
        DECIDED = "decided", _("Decided")
        UNDECIDED = "undecided", _("No decision")
        CANCELLED = "cancelled", _("Cancelled")

    # No single-column index: task_queue_state_id_idx and task_claim_idx lead with the queue. A
    # plain one made the planner sort a whole new queue per claim while its statistics lagged.
    queue = models.ForeignKey(
        TaskQueue, on_delete=models.CASCADE, related_name="tasks", db_index=False
    )
    payload = models.JSONField()
    gold = models.JSONField(null=True, blank=True)
    is_gold = models.BooleanField(default=False)
    external_id = models.CharField(max_length=200, blank=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.OPEN)
    required = models.PositiveSmallIntegerField()
    active_count = models.PositiveSmallIntegerField(default=0)
    done_count = models.PositiveSmallIntegerField(default=0)
    escalations = models.PositiveSmallIntegerField(default=0)
    outcome = models.JSONField(null=True, blank=True)
    agreement = models.FloatField(null=True, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    # A curator's settlement (services/settling.py): who set the final outcome, when and why.
    settled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        db_index=False,  # task_settled_by_idx: only settled tasks
    )
    settled_at = models.DateTimeField(null=True, blank=True)
    settle_reason = models.TextField(blank=True, db_default="")  # raw bulk inserts omit it
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(active_count__lte=F("required")), name="task_active_lte_required"
            ),
            models.CheckConstraint(
                condition=Q(settled_at__isnull=True) | (Q(state="decided") & ~Q(settle_reason="")),
                name="task_settled_is_decided_with_reason",
            ),
            models.CheckConstraint(
                condition=Q(done_count__lte=F("active_count")), name="task_done_lte_active"
            ),
            models.CheckConstraint(condition=Q(required__gte=1), name="task_required_gte_1"),
            models.CheckConstraint(
                condition=Q(is_gold=False) | Q(gold__isnull=False), name="task_gold_has_answer"
            ),
        ]
        indexes = [
            # The claim query: open non-gold tasks of a queue with a free slot, fullest first.
            models.Index(
                F("queue"),
                (F("required") - F("active_count")).asc(),
                F("id"),
                name="task_claim_idx",
                condition=Q(state="open", is_gold=False),
            ),
            models.Index(
                fields=["queue", "is_gold"], name="task_gold_idx", condition=Q(is_gold=True)
            ),
            # The task browser (selectors.task_browse): each filter and order of a queue's
            # tasks has an index leading with the queue, so a page is an index range scan.
            models.Index(fields=["queue", "state", "id"], name="task_queue_state_id_idx"),
            models.Index(fields=["queue", "id"], name="task_queue_id_idx"),
            models.Index(
                fields=["queue", "id"], name="task_escalated_idx", condition=Q(escalations__gt=0)
            ),
            models.Index(fields=["queue", "agreement", "id"], name="task_agreement_idx"),
            models.Index(
                fields=["queue", "id"],
                name="task_settled_idx",
                condition=Q(settled_at__isnull=False),
            ),
            models.Index(
                fields=["settled_by"],
                name="task_settled_by_idx",
                condition=Q(settled_by__isnull=False),
            ),
            # PostgreSQL also has task_finished_idx (queue, decided_at DESC NULLS LAST, id DESC) and
            # task_search_idx (a pg_trgm GIN over UPPER(search_text())), made by migration 0008 on
            # PostgreSQL only: SQLite (`make run`) can build neither.
        ]

    def __str__(self) -> str:
        return f"Task {self.pk}"


class Assignment(models.Model):
    class State(models.TextChoices):
        LEASED = "leased", _("Leased")
        SUBMITTED = "submitted", _("Submitted")
        SKIPPED = "skipped", _("Skipped")
        REPORTED = "reported", _("Reported")
        EXPIRED = "expired", _("Expired")
        SENT_BACK = "sent_back", _("Sent back")  # a curator rejected the answer (review)

    # Served by assignment_one_per_person (task, …) and assignment_queue_idx (queue, …); the
    # single-column indexes only cost writes and, with lagging statistics, bad plans.
    task = models.ForeignKey(
        Task, on_delete=models.CASCADE, related_name="assignments", db_index=False
    )
    queue = models.ForeignKey(TaskQueue, on_delete=models.CASCADE, related_name="+", db_index=False)
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments"
    )
    state = models.CharField(max_length=10, choices=State.choices, default=State.LEASED)
    is_gold = models.BooleanField(default=False)
    leased_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    presentation = models.JSONField(default=dict, blank=True)
    report_reason = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "annotator"], name="assignment_one_per_person"),
        ]
        indexes = [
            models.Index(
                fields=["expires_at"],
                name="assignment_live_expiry_idx",
                condition=Q(state="leased"),
            ),
            models.Index(
                fields=["annotator", "queue"],
                name="assignment_live_idx",
                condition=Q(state="leased"),
            ),
            models.Index(fields=["queue", "annotator", "state"], name="assignment_queue_idx"),
            models.Index(
                fields=["queue", "task"],
                name="assignment_reported_idx",
                condition=Q(state="reported"),
            ),
        ]


class Annotation(models.Model):
    """One person's answer to one task. Immutable: services only ever insert."""

    # Served by annotation_one_per_person (task, …) and annotation_person_task_idx (queue, …).
    task = models.ForeignKey(
        Task, on_delete=models.CASCADE, related_name="annotations", db_index=False
    )
    queue = models.ForeignKey(TaskQueue, on_delete=models.CASCADE, related_name="+", db_index=False)
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="annotations"
    )
    response = models.JSONField()
    duration_ms = models.PositiveIntegerField(default=0)
    is_gold = models.BooleanField(default=False)
    gold_correct = models.BooleanField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["task", "annotator"], name="annotation_one_per_person"),
        ]
        indexes = [
            # task last: the task browser's "answered by" reads task ids in order from the
            # index alone (a merge join with the tasks' (queue, state, id) index)
            models.Index(fields=["queue", "annotator", "task"], name="annotation_person_task_idx"),
            models.Index(fields=["annotator", "created_at"], name="annotation_person_day_idx"),
        ]


class UndoneAnnotation(models.Model):
    """An answer its author took back (undo) before the task was decided: who answered what and
    when, and when they undid it. With the annotations in place, the full history of a task."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="undone", db_index=False)
    queue = models.ForeignKey(TaskQueue, on_delete=models.CASCADE, related_name="+", db_index=False)
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    response = models.JSONField()
    duration_ms = models.PositiveIntegerField(default=0)
    is_gold = models.BooleanField(default=False)
    gold_correct = models.BooleanField(null=True, blank=True)
    answered_at = models.DateTimeField()
    undone_at = models.DateTimeField()

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["task", "annotator"], name="undone_task_person_idx"),
            models.Index(
                fields=["queue", "annotator", "undone_at"], name="undone_queue_person_idx"
            ),
        ]


class SentBackAnnotation(models.Model):
    """An answer a curator sent back (review, ``services.annotation_send_back``), kept as it was
    with who sent it back, when and why. It no longer counts for the task's outcome or agreement
    (those read ``Annotation`` only); the task asked for another answer in its place, and its
    author sees the note in their history."""

    task = models.ForeignKey(
        Task, on_delete=models.CASCADE, related_name="sent_back", db_index=False
    )
    queue = models.ForeignKey(TaskQueue, on_delete=models.CASCADE, related_name="+", db_index=False)
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    response = models.JSONField()
    duration_ms = models.PositiveIntegerField(default=0)
    answered_at = models.DateTimeField()
    sent_back_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        db_index=False,
    )
    sent_back_at = models.DateTimeField()
    note = models.TextField()
    # The outcome the task had when sending back reopened it (a decided task of a queue without
    # an outcome handler); None when the task was still open.
    withdrawn_outcome = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(condition=~Q(note=""), name="sent_back_has_note"),
        ]
        indexes = [
            models.Index(fields=["task", "id"], name="sent_back_task_idx"),
            models.Index(
                fields=["queue", "annotator", "sent_back_at"], name="sent_back_queue_person_idx"
            ),
        ]


class Report(models.Model):
    """A crowdworker's "Report a problem" on a task (their assignment ends ``reported``) and what
    a curator did about it in the project's reports inbox (``services.report_handle``)."""

    class Status(models.TextChoices):
        OPEN = "open", _("Open")
        RESOLVED = "resolved", _("Resolved")
        REQUEUED = "requeued", _("Requeued")
        CANCELLED = "cancelled", _("Task cancelled")

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="reports", db_index=False)
    queue = models.ForeignKey(TaskQueue, on_delete=models.CASCADE, related_name="+", db_index=False)
    reporter = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    reason = models.TextField()  # a reason code of the queue, or "other: <details>"
    created_at = models.DateTimeField(default=timezone.now)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    handled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        db_index=False,
    )
    handled_at = models.DateTimeField(null=True, blank=True)
    note = models.TextField(blank=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(status="open") & Q(handled_at__isnull=True))
                | (~Q(status="open") & Q(handled_at__isnull=False)),
                name="report_handled_when_closed",
            ),
        ]
        indexes = [
            # the inbox: a project's (its queues') reports by status, newest first
            models.Index(fields=["queue", "status", "id"], name="report_queue_status_idx"),
            models.Index(fields=["task", "id"], name="report_task_idx"),
        ]


class Enrollment(models.Model):
    """An annotator's standing in one queue: qualification and gold accuracy."""

    class State(models.TextChoices):
        QUALIFYING = "qualifying", _("Qualifying")
        ACTIVE = "active", _("Active")
        FAILED = "failed", _("Did not qualify")
        PAUSED = "paused", _("Paused")

    queue = models.ForeignKey(TaskQueue, on_delete=models.CASCADE, related_name="enrollments")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="enrollments"
    )
    state = models.CharField(max_length=10, choices=State.choices, default=State.QUALIFYING)
    gold_answered = models.PositiveIntegerField(default=0)
    gold_correct = models.PositiveIntegerField(default=0)
    reason = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["queue", "annotator"], name="enrollment_unique"),
            models.CheckConstraint(
                condition=Q(gold_correct__lte=F("gold_answered")), name="enrollment_correct_lte"
            ),
        ]

    @property
    def gold_accuracy(self) -> float | None:
        return self.gold_correct / self.gold_answered if self.gold_answered else None
