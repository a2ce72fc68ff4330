"""The platform's data: projects, invitations and background jobs (app label ``annotator``)."""

import contextlib
import secrets
from collections.abc import Iterator

from django.conf import settings
from django.db import IntegrityError, models, transaction
from django.utils.translation import gettext_lazy as _

from .errors import Invalid


def optional_link(
    to, *, one_to_one: bool = False, related_name: str = "+", **options
) -> models.ForeignKey:
    """A link that may be empty and empties when its target is deleted: a queue, a job, an author
    or a published version a row points at. No reverse accessor unless ``related_name`` is given.
    """
    kind = models.OneToOneField if one_to_one else models.ForeignKey
    return kind(
        to, null=True, blank=True, on_delete=models.SET_NULL, related_name=related_name, **options
    )


@contextlib.contextmanager
def taken_refused(message: str) -> Iterator[None]:
    """A savepoint around writing a row whose name must be unique: when another writer took the
    name meanwhile (IntegrityError), nothing of it is kept and ``Invalid(message)`` says so."""
    try:
        with transaction.atomic():
            yield
    except IntegrityError:
        raise Invalid(message) from None


class CreatedStamp(models.Model):
    """Who made a row and when; the link empties (the row stays) when the account is deleted."""

    created_by = optional_link(settings.AUTH_USER_MODEL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True


class NewestFirst(CreatedStamp):
    """A :class:`CreatedStamp` listed newest first (the id breaks ties within one instant)."""

    class Meta:
        abstract = True
        ordering = ["-created_at", "-id"]


class Project(CreatedStamp):
    """A benchmark under construction."""

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=80, unique=True)
    description = models.TextField(blank=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="projects", blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Invitation(models.Model):
    """A one-time link a curator hands out; it creates an account with a role."""

    token = models.CharField(max_length=64, unique=True, default=secrets.token_urlsafe)
    role = models.CharField(max_length=16)
    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.CASCADE)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="invitations_sent"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    used_by = optional_link(settings.AUTH_USER_MODEL)

    class Meta:
        ordering = ["-created_at"]


class Job(NewestFirst):
    """Long work run by Celery; every job updates its row so pages can show progress."""

    class Status(models.TextChoices):
        QUEUED = "queued", _("Queued")
        RUNNING = "running", _("Running")
        SUCCEEDED = "succeeded", _("Succeeded")
        FAILED = "failed", _("Failed")

    kind = models.CharField(max_length=60)
    params = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    message = models.TextField(blank=True)
    error = models.TextField(blank=True)
    result = models.JSONField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    # Lost-worker recovery (``annotator.jobs``): the Celery task id of the one delivery allowed
    # to run this job (other deliveries are stale and dropped), the worker running it
    # ("host pid") and when it last showed a sign of life (cleared when the job ends).
    attempt_token = models.CharField(max_length=64, blank=True)
    worker = models.CharField(max_length=200, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="jobs"
    )
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The outbox (``jobs.job_send``): when the broker took the job's message; empty while it is
    # waiting to be sent. ``send_error`` says why the last send failed (the broker down); the
    # sweep sends such jobs again as soon as the broker answers.
    sent_at = models.DateTimeField(null=True, blank=True)
    send_error = models.TextField(blank=True)
    # Chunk jobs (``annotator.platform.chunks``): a job may fan its work out into chunk jobs that
    # any worker takes. A chunk names the job it belongs to (``parent``) and its number
    # (``part``); ``waiting_for`` > 0 parks the parent (running, held by no worker) until that
    # many chunks of its latest fan-out have ended: the last one sends the parent again.
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="chunks"
    )
    part = models.PositiveIntegerField(null=True, blank=True)
    waiting_for = models.PositiveIntegerField(default=0)

    class Meta(NewestFirst.Meta):
        indexes = [models.Index(fields=["status"], name="job_status_idx")]
        constraints = [
            models.UniqueConstraint(
                fields=["parent", "kind", "part"],
                condition=models.Q(parent__isnull=False),
                name="job_chunk_part_uniq",
            ),
            models.CheckConstraint(
                condition=models.Q(parent__isnull=True) | models.Q(part__isnull=False),
                name="job_chunk_has_part",
            ),
        ]

    @property
    def percent(self) -> int:
        if self.status == self.Status.SUCCEEDED:
            return 100
        return int(100 * self.done / self.total) if self.total else 0

    @property
    def waiting_to_send(self) -> bool:
        """Queued, but its message never reached the broker (it was down)."""
        return self.status == self.Status.QUEUED and self.sent_at is None and bool(self.send_error)

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.SUCCEEDED, self.Status.FAILED)

    @property
    def is_parked(self) -> bool:
        """Running, waiting for its chunk jobs (no worker holds it meanwhile)."""
        return self.status == self.Status.RUNNING and self.waiting_for > 0


class JobStamp(CreatedStamp):
    """A row made (or filled in) by a background job: the job, who started it and when."""

    job = optional_link(Job)

    class Meta:
        abstract = True


class Profile(models.Model):
    """What a person chose for themselves, kept with the account rather than in one browser."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, primary_key=True, on_delete=models.CASCADE, related_name="+"
    )
    # The interface language (a code of settings.LANGUAGES); empty: the browser's choice.
    language = models.CharField(max_length=16, blank=True)


class Webhook(CreatedStamp):
    """A URL told about a project's events (``annotator.platform.webhooks``): each delivery is
    signed with the hook's secret; repeated failures disable it until a curator enables it."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=500)
    description = models.CharField(max_length=200, blank=True)
    events = models.JSONField(default=list, blank=True, help_text=_("Event names it receives."))
    # Signing key (HMAC-SHA256). Shown once, when the hook is made; kept in clear because every
    # delivery needs it.
    secret = models.CharField(max_length=100)
    is_active = models.BooleanField(default=True)
    consecutive_failures = models.PositiveIntegerField(default=0)
    disabled_at = models.DateTimeField(null=True, blank=True)
    disabled_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.url


class WebhookDelivery(models.Model):
    """One event sent (or being sent) to one hook: its latest attempt's outcome."""

    class Status(models.TextChoices):
        PENDING = "pending", _("Pending")
        RETRYING = "retrying", _("Retrying")
        SUCCEEDED = "succeeded", _("Delivered")
        FAILED = "failed", _("Failed")

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=60)
    event_id = models.UUIDField()
    payload = models.JSONField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    response_code = models.PositiveSmallIntegerField(null=True, blank=True)
    response_body = models.CharField(max_length=1000, blank=True)  # a prefix only
    error = models.CharField(max_length=500, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    attempted_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["webhook", "event_id"], name="delivery_once_per_event")
        ]
        indexes = [models.Index(fields=["webhook", "-created_at"], name="delivery_hook_recent_idx")]
