"""Webhooks: a project's events sent to the URLs its curators register.

Producers (any layer) call :func:`webhook_emit` with a project, an event name from
:data:`EVENTS` and a small JSON-able ``data``; it never delivers anything itself. The project's
active hooks subscribed to that event each get a :class:`WebhookDelivery` row **in the producer's
transaction** (an outbox: the event is stored with the change that caused it, or not at all), and
once that commits, a Celery message (``annotator.deliver_webhook``); the producer never learns
who listens. A rolled-back transaction emits nothing. A message that never reached the broker
(Redis down, the process killed right after the commit) or that a dead worker took with it is
sent again by the beat task ``annotator.sweep_webhooks``: a delivery still waiting
BLINDSPOT_WEBHOOK_SWEEP_S after it was due is queued again. An attempt first claims its delivery
(one UPDATE), so two messages for one delivery never send it twice at once.

A delivery is one POST of the event as JSON, signed with HMAC-SHA256 over
``"<timestamp>." + body`` with the hook's secret (headers ``Blindspot-Event``,
``Blindspot-Event-Id``, ``Blindspot-Timestamp``, ``Blindspot-Signature: sha256=<hex>``). A 2xx
answer delivers it; anything else (a redirect included: none is followed), a timeout or a refused
connection fails the attempt, retried with exponential backoff up to
BLINDSPOT_WEBHOOK_MAX_ATTEMPTS; BLINDSPOT_WEBHOOK_DISABLE_AFTER failed attempts in a row disable
the hook until a curator enables it again. Only a short prefix of the receiver's answer is kept.

Safety: a URL whose host resolves to a private, loopback, link-local or otherwise non-public
address is refused, when it is registered and again at every attempt (the connection goes to the
address that was checked, so DNS cannot swap it meanwhile), unless the installation sets
BLINDSPOT_WEBHOOK_ALLOW_PRIVATE.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import http.client
import ipaddress
import json
import logging
import secrets
import socket
import ssl
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from celery import shared_task
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from . import roles
from .errors import Invalid
from .models import Job, Project, Webhook, WebhookDelivery
from .registry import Registry
from .scoping import projects_for

log = logging.getLogger(__name__)

# The events a hook may subscribe to (declared once; the page and the API read this table).
EVENTS: dict[str, Any] = {
    "task.decided": gettext_lazy("A task was decided (or closed undecided) by its answers"),
    "task.escalated": gettext_lazy("A task's answers disagreed: it asks for one more answer"),
    "task.settled": gettext_lazy("A curator settled a task's disagreement"),
    "task.reopened": gettext_lazy(
        "A decided task was reopened: the answer that decided it was taken back (undo)"
    ),
    "task.sent_back": gettext_lazy("A curator sent one person's answer back for another answer"),
    "report.opened": gettext_lazy("A crowdworker reported a problem with a task"),
    "queue.finished": gettext_lazy("A queue's last open task was decided"),
    "job.finished": gettext_lazy("A background job finished"),
    "job.failed": gettext_lazy("A background job failed"),
    "export.ready": gettext_lazy("An export file is ready to download"),
    "version.published": gettext_lazy("A benchmark version was published"),
    "leaderboard.changed": gettext_lazy("A benchmark version's leaderboard changed"),
}
PING = "ping"  # the "send test event" button's event; every hook receives it
# Job kinds whose success is also an event of its own (kind -> event): the recipes' exports
# declare "export.ready" here when they are registered, so the platform never knows a recipe.
JOB_SUCCESS_EVENTS: Registry[str] = Registry("job kind with a success event", "job kinds")
SECRET_PREFIX = "whsec_"
RESPONSE_PREFIX = 1000  # characters of a receiver's answer kept in the log
USER_AGENT = "Blindspot-Webhooks/1"


# --------------------------------------------------------------------------------------------
# Selectors
# --------------------------------------------------------------------------------------------
def webhooks_curated_by(user) -> QuerySet[Webhook]:
    """The hooks of the projects the user curates (admins: all); nobody else sees any."""
    if not roles.has_role(user, [roles.CURATOR]):
        return Webhook.objects.none()
    return Webhook.objects.filter(project__in=projects_for(user)).select_related("project")


# --------------------------------------------------------------------------------------------
# Registering hooks
# --------------------------------------------------------------------------------------------
def _is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


@dataclass(frozen=True)
class Target:
    """Where one attempt connects: the URL's parts and the address that was checked."""

    scheme: str
    host: str
    port: int
    path: str
    address: str


def url_target(url: str) -> Target:
    """Check a hook URL and resolve its host; ``Invalid`` says why it is refused. The first
    permitted address is the one to connect to."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise Invalid(_("The URL is not valid: %(e)s.") % {"e": exc}) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Invalid(_("The URL must start with http:// or https:// and name a host."))
    if parts.username or parts.password:
        raise Invalid(_("The URL must not hold a user name or password."))
    port = port or (443 if parts.scheme == "https" else 80)
    try:
        found = socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise Invalid(
            _("The host %(h)s could not be resolved.") % {"h": parts.hostname[:100]}
        ) from None
    addresses = list(dict.fromkeys(str(info[4][0]) for info in found))
    if not getattr(settings, "BLINDSPOT_WEBHOOK_ALLOW_PRIVATE", False):
        refused = [a for a in addresses if not _is_public(a)]
        if refused:
            raise Invalid(
                _(
                    "The host %(h)s resolves to %(a)s, a private, loopback or link-local "
                    "address: webhooks are only sent to public addresses on this installation "
                    "(BLINDSPOT_WEBHOOK_ALLOW_PRIVATE)."
                )
                % {"h": parts.hostname[:100], "a": refused[0]}
            )
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    return Target(parts.scheme, parts.hostname, port, path, addresses[0])


def _events_check(events: Iterable[str]) -> list[str]:
    events = list(dict.fromkeys(events))
    unknown = [e for e in events if e not in EVENTS]
    if unknown:
        raise Invalid(
            _("Unknown event %(e)s; known events: %(k)s.")
            % {"e": repr(unknown[0])[:80], "k": ", ".join(EVENTS)}
        )
    if not events:
        raise Invalid(_("Choose at least one event."))
    return events


def webhook_create(
    *, project: Project, url: str, events: Iterable[str], description: str = "", created_by=None
) -> Webhook:
    """Register a hook with a new secret (read it from the returned row: it is shown once)."""
    url_target(url)
    return Webhook.objects.create(
        project=project,
        url=url,
        events=_events_check(events),
        description=description,
        secret=SECRET_PREFIX + secrets.token_urlsafe(32),
        created_by=created_by,
    )


def webhook_update(
    *,
    webhook: Webhook,
    url: str | None = None,
    events: Iterable[str] | None = None,
    description: str | None = None,
    is_active: bool | None = None,
) -> Webhook:
    """Change a hook. Enabling one (again) forgets its failures; disabling it by hand stops its
    deliveries waiting for a retry."""
    if url is not None:
        url_target(url)
        webhook.url = url
    if events is not None:
        webhook.events = _events_check(events)
    if description is not None:
        webhook.description = description
    if is_active is not None and is_active != webhook.is_active:
        webhook.is_active = is_active
        webhook.consecutive_failures = 0
        webhook.disabled_at = None if is_active else timezone.now()
        webhook.disabled_reason = "" if is_active else _("Disabled by a curator.")
    webhook.save()
    return webhook


def webhook_secret_rotate(*, webhook: Webhook) -> Webhook:
    """A new secret (shown once); deliveries from now on are signed with it."""
    webhook.secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    webhook.save(update_fields=["secret"])
    return webhook


def webhook_delete(*, webhook: Webhook) -> None:
    webhook.delete()


# --------------------------------------------------------------------------------------------
# Emitting events
# --------------------------------------------------------------------------------------------
def webhook_emit(*, project: Project | int | None, event: str, data: dict) -> None:
    """Tell the project's hooks about ``event``: their deliveries are written in the current
    transaction (the outbox) and queued once it commits (at once outside one). Cheap when nobody
    listens: one query."""
    if project is None:
        return
    if event not in EVENTS:
        raise ValueError(f"Unknown webhook event {event!r}")  # a programming error
    project_id = project if isinstance(project, int) else project.pk
    # The events are matched here, not with a JSON `contains` lookup: SQLite (`make run`) has
    # none, and a project has a handful of hooks.
    active = Webhook.objects.filter(project_id=project_id, is_active=True).only("pk", "events")
    hooks = [hook for hook in active if event in hook.events]
    if not hooks:
        return
    event_id = uuid.uuid4()  # one event, one id, whichever hooks receive it
    payload = _payload(project_id, event, data, timezone.now(), event_id)
    deliveries = WebhookDelivery.objects.bulk_create(
        [WebhookDelivery(webhook=h, event=event, event_id=event_id, payload=payload) for h in hooks]
    )
    ids = [delivery.pk for delivery in deliveries]
    transaction.on_commit(lambda: _queue(ids))


@functools.cache
def _listening_sql() -> str:
    hook, job = Webhook._meta, Job._meta
    return (
        f"SELECT 1 FROM {hook.db_table} w JOIN {job.db_table} j"
        f' ON w."{hook.get_field("project").column}" = j."{job.get_field("project").column}"'
        f' WHERE j."{job.pk.column}" = %s AND w."{hook.get_field("is_active").column}" = %s'
        " LIMIT 1"
    )


def job_listened(job_id: int) -> bool:
    """Whether the job's project has an active hook:
    ``Webhook.objects.filter(project_id=Subquery(<the job's project>), is_active=True).exists()``
    as a fixed statement (every job's end asks; the ORM spent ~2 ms of CPU building it)."""
    with connection.cursor() as cursor:
        cursor.execute(_listening_sql(), [job_id, True])
        return cursor.fetchone() is not None


def job_event_emit(*, job_id: int) -> None:
    """``job.finished`` or ``job.failed`` for a job that just ended (and its kind's own success
    event, such as ``export.ready``, declared in :data:`JOB_SUCCESS_EVENTS`). Cheap when the
    job's project has no active hook (every job's end asks): one query, the job row unread."""
    if not job_listened(job_id):
        return
    job = Job.objects.filter(pk=job_id).only(*JOB_FIELDS, "project").first()
    if job is None or job.project_id is None:
        return
    data = {"job": job.pk, **{field: getattr(job, field) for field in JOB_FIELDS}}
    succeeded = job.status == Job.Status.SUCCEEDED
    webhook_emit(
        project=job.project_id, event="job.finished" if succeeded else "job.failed", data=data
    )
    event = JOB_SUCCESS_EVENTS.get(job.kind)
    if succeeded and event:
        webhook_emit(project=job.project_id, event=event, data=data)


JOB_FIELDS = ("kind", "status", "params", "result", "error", "finished_at")


def webhook_test(*, webhook: Webhook) -> WebhookDelivery:
    """Send a ``ping`` event to this hook alone (after commit)."""
    delivery = _delivery(webhook, PING, {"message": "A test event from Blindspot."}, None)
    transaction.on_commit(lambda: _queue([delivery.pk]))
    return delivery


def _payload(project_id: int, event: str, data: dict, created, event_id: uuid.UUID) -> dict:
    body = {
        "id": str(event_id),
        "event": event,
        "created_at": created.isoformat(),
        "project": project_id,
        "data": data,
    }
    # Stored as JSON: dates and decimals become strings once, here.
    return json.loads(json.dumps(body, cls=DjangoJSONEncoder))


def _delivery(webhook: Webhook, event: str, data: dict, created) -> WebhookDelivery:
    event_id = uuid.uuid4()
    payload = _payload(webhook.project_id, event, data, created or timezone.now(), event_id)
    return WebhookDelivery.objects.create(
        webhook=webhook, event=event, event_id=event_id, payload=payload
    )


def _queue(delivery_ids: list[int]) -> None:
    for n, delivery_id in enumerate(delivery_ids):
        try:
            deliver_webhook.delay(delivery_id)
        except Exception:  # noqa: BLE001 - a broker hiccup must not fail the producer's request
            # The rows are stored: the sweep queues them again once the broker answers; the
            # rest are not tried now (each try would wait for the broker again).
            log.exception("webhook deliveries %s could not be queued", delivery_ids[n:][:20])
            return


# --------------------------------------------------------------------------------------------
# Delivering
# --------------------------------------------------------------------------------------------
def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The ``Blindspot-Signature`` header of a body sent at ``timestamp`` (Unix seconds)."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


class _PinnedHTTP(http.client.HTTPConnection):
    """Connects to the checked address, whatever the host name resolves to now."""

    def __init__(self, target: Target, timeout: float):
        super().__init__(target.host, target.port, timeout=timeout)
        self.address = target.address

    def connect(self) -> None:
        self.sock = socket.create_connection((self.address, self.port), self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    def __init__(self, target: Target, timeout: float):
        super().__init__(
            target.host, target.port, timeout=timeout, context=ssl.create_default_context()
        )
        self.address = target.address

    def connect(self) -> None:
        sock = socket.create_connection((self.address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


@dataclass
class Answer:
    code: int | None = None
    body: str = ""
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.code is not None and 200 <= self.code < 300


def _post(url: str, body: bytes, headers: dict[str, str]) -> Answer:
    """One POST, no redirect followed, a short timeout, a prefix of the answer read."""
    try:
        target = url_target(url)
    except Invalid as exc:
        return Answer(error=exc.message)
    timeout = settings.BLINDSPOT_WEBHOOK_TIMEOUT_S
    kind = _PinnedHTTPS if target.scheme == "https" else _PinnedHTTP
    conn = kind(target, timeout)
    try:
        conn.request("POST", target.path, body=body, headers=headers)
        response = conn.getresponse()
        text = response.read(RESPONSE_PREFIX * 4).decode("utf-8", "replace")[:RESPONSE_PREFIX]
        answer = Answer(code=response.status, body=text)
        if 300 <= response.status < 400:
            answer.error = _("Redirects are not followed (to %(l)s).") % {
                "l": (response.getheader("Location") or "?")[:200]
            }
        elif not answer.ok:
            answer.error = _("The receiver answered %(c)d.") % {"c": response.status}
        return answer
    except (OSError, http.client.HTTPException) as exc:
        return Answer(error=f"{type(exc).__name__}: {exc}"[:500])
    finally:
        conn.close()


def _backoff(attempt: int) -> float:
    """Seconds before attempt ``attempt + 1``: BACKOFF_S, doubling, at most BACKOFF_MAX_S."""
    base = settings.BLINDSPOT_WEBHOOK_BACKOFF_S
    return min(base * 2 ** (attempt - 1), settings.BLINDSPOT_WEBHOOK_BACKOFF_MAX_S)


def delivery_attempt(*, delivery_id: int) -> float | None:
    """Send a delivery once and record the outcome; returns the seconds to wait before the
    next attempt, or None when it is over (delivered, failed for good, or its hook disabled).
    A delivery already over is left alone (a message delivered twice sends nothing twice)."""
    if not _claim(delivery_id):
        return None  # over, not due yet, or being sent by another message right now
    delivery = WebhookDelivery.objects.select_related("webhook").filter(pk=delivery_id).first()
    if delivery is None:
        return None
    hook = delivery.webhook
    if not hook.is_active and delivery.event != PING:
        WebhookDelivery.objects.filter(pk=delivery.pk).update(
            status=WebhookDelivery.Status.FAILED,
            error=_("Not sent: the webhook is disabled."),
            next_attempt_at=None,
        )
        return None
    body = json.dumps(delivery.payload, separators=(",", ":")).encode()
    timestamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "Blindspot-Event": delivery.event,
        "Blindspot-Event-Id": str(delivery.event_id),
        "Blindspot-Timestamp": timestamp,
        "Blindspot-Signature": sign(hook.secret, timestamp, body),
        "Blindspot-Attempt": str(delivery.attempts + 1),
    }
    started = time.monotonic()
    answer = _post(hook.url, body, headers)
    now = timezone.now()
    attempt = delivery.attempts + 1
    fields: dict[str, Any] = {
        "attempts": attempt,
        "attempted_at": now,
        "response_code": answer.code,
        "response_body": answer.body,
        "error": answer.error[:500],
        "duration_ms": int(1000 * (time.monotonic() - started)),
    }
    if answer.ok:
        WebhookDelivery.objects.filter(pk=delivery.pk).update(
            status=WebhookDelivery.Status.SUCCEEDED, next_attempt_at=None, **fields
        )
        Webhook.objects.filter(pk=hook.pk).update(consecutive_failures=0)
        _prune(hook, now)
        return None
    disabled = _count_failure(hook, now) if delivery.event != PING else False
    wait = None
    if (
        not disabled
        and attempt < settings.BLINDSPOT_WEBHOOK_MAX_ATTEMPTS
        and delivery.event != PING
    ):
        wait = _backoff(attempt)
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        status=WebhookDelivery.Status.RETRYING
        if wait is not None
        else WebhookDelivery.Status.FAILED,
        next_attempt_at=now + timedelta(seconds=wait) if wait is not None else None,
        **fields,
    )
    return wait


# A retry's message may arrive a little before the time its delivery is due.
EARLY_S = 5.0
WAITING = (WebhookDelivery.Status.PENDING, WebhookDelivery.Status.RETRYING)


def _claim_s() -> float:
    """How long an attempt holds its delivery: the receiver's timeout and a margin."""
    return settings.BLINDSPOT_WEBHOOK_TIMEOUT_S + 30.0


def _claim(delivery_id: int) -> bool:
    """Take a waiting, due delivery for one attempt (its due time moves past the attempt's end,
    so a second message for it, or the sweep, leaves it alone meanwhile). False otherwise."""
    now = timezone.now()
    due = Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now + timedelta(seconds=EARLY_S))
    claimed = WebhookDelivery.objects.filter(due, pk=delivery_id, status__in=WAITING).update(
        next_attempt_at=now + timedelta(seconds=_claim_s())
    )
    return claimed == 1


def sweep_waiting_deliveries() -> int:
    """Queue again every delivery still waiting BLINDSPOT_WEBHOOK_SWEEP_S after it was due (its
    message lost: the broker was down at the commit, the process died after it, or a worker
    died with it). Returns how many were queued."""
    late = timezone.now() - timedelta(seconds=settings.BLINDSPOT_WEBHOOK_SWEEP_S)
    ids = list(
        WebhookDelivery.objects.filter(status__in=WAITING, webhook__is_active=True)
        .filter(Q(next_attempt_at__lt=late) | Q(next_attempt_at__isnull=True, created_at__lt=late))
        .order_by("pk")
        .values_list("pk", flat=True)[:1000]
    )
    _queue(ids)
    return len(ids)


def _count_failure(hook: Webhook, now) -> bool:
    """One more failed attempt in a row; disable the hook at the limit. True when disabled."""
    limit = settings.BLINDSPOT_WEBHOOK_DISABLE_AFTER
    with transaction.atomic():
        Webhook.objects.filter(pk=hook.pk).update(
            consecutive_failures=F("consecutive_failures") + 1
        )
        hook = Webhook.objects.select_for_update().get(pk=hook.pk)
        if hook.is_active and hook.consecutive_failures >= limit:
            hook.is_active = False
            hook.disabled_at = now
            hook.disabled_reason = _(
                "Disabled automatically after %(n)d failed deliveries in a row. Fix the "
                "receiver, send a test event, then enable it again."
            ) % {"n": hook.consecutive_failures}
            hook.save(update_fields=["is_active", "disabled_at", "disabled_reason"])
            # Its deliveries waiting for a retry end here.
            WebhookDelivery.objects.filter(
                webhook=hook, status=WebhookDelivery.Status.RETRYING
            ).update(
                status=WebhookDelivery.Status.FAILED,
                error=_("Not sent: the webhook is disabled."),
                next_attempt_at=None,
            )
            log.warning("webhook %s disabled after %s failures", hook.pk, limit)
            return True
        return not hook.is_active


def _prune(hook: Webhook, now) -> None:
    """The log keeps BLINDSPOT_WEBHOOK_LOG_DAYS days of deliveries."""
    days = settings.BLINDSPOT_WEBHOOK_LOG_DAYS
    WebhookDelivery.objects.filter(webhook=hook, created_at__lt=now - timedelta(days=days)).delete()


@shared_task(name="annotator.deliver_webhook", acks_late=True, ignore_result=True)
def deliver_webhook(delivery_id: int) -> None:
    """Celery: one attempt; a failed one is sent again after its backoff."""
    wait = delivery_attempt(delivery_id=delivery_id)
    if wait is not None:
        deliver_webhook.apply_async(args=[delivery_id], countdown=wait)


@shared_task(name="annotator.sweep_webhooks", acks_late=True, ignore_result=True)
def sweep_webhooks() -> int:
    """Celery beat: deliveries whose message was lost are queued again."""
    return sweep_waiting_deliveries()
