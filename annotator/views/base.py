"""What the curator and researcher pages share: the roles they serve, progress bars, quality
figures. Every read goes through ``annotator.selectors`` so that anything outside a user's reach
answers 404 exactly like a missing object; curators change things, researchers only read."""

from __future__ import annotations

from django.db.models import Count, Q
from django.utils.translation import gettext as _

from .. import quality, selectors
from ..models import Task, TaskQueue
from ..platform import roles
from ..platform.models import Job
from ..platform.scoping import (
    jobs_for,
)

STAFF = (roles.CURATOR, roles.RESEARCHER)


CURATOR = (roles.CURATOR,)


EVERYONE = roles.ALL_ROLES


QUALITY_KEYS = (
    "percent_agreement",
    "cohen_kappa",
    "fleiss_kappa",
    "krippendorff_alpha",
    "gold_accuracy",
    "median_seconds",
    "tasks_per_hour",
    "n_annotations",
)


def progress_attach(queues: list[TaskQueue]) -> list[TaskQueue]:
    progress = selectors.queue_progress([q.pk for q in queues])
    for q in queues:
        q.progress = progress[q.pk]
        q.bar = progress_segments(q.progress)
    return queues


def progress_segments(p: dict) -> list[dict]:
    """A stacked bar: decided / undecided / leased / waiting, as percentages of all tasks."""
    total = p.get("total") or 0
    leased = min(p.get("leased", 0), p.get("open", 0))
    parts = [
        ("decided", _("decided"), p.get("decided", 0)),
        ("undecided", _("no decision"), p.get("undecided", 0)),
        ("leased", _("being worked on"), leased),
        ("open", _("waiting"), max(p.get("open", 0) - leased, 0)),
    ]
    return [
        {"cls": cls, "label": label, "n": n, "pct": round(100 * n / total, 2) if total else 0}
        for cls, label, n in parts
    ]


def queue_quality_of(queue: TaskQueue) -> dict:
    return quality.cached_queue_quality(queue)


def agreement_histogram(queue: TaskQueue) -> list[dict]:
    """Finished tasks by agreement, in four buckets; one query."""
    buckets = [
        ("< 50%", Q(agreement__lt=0.5)),
        ("50–66%", Q(agreement__gte=0.5, agreement__lt=0.67)),
        ("67–99%", Q(agreement__gte=0.67, agreement__lt=0.999)),
        ("100%", Q(agreement__gte=0.999)),
    ]
    agg = Task.objects.filter(queue=queue, is_gold=False, agreement__isnull=False).aggregate(
        **{f"b{i}": Count("id", filter=q) for i, (_label, q) in enumerate(buckets)}
    )
    values = [agg[f"b{i}"] for i in range(len(buckets))]
    top = max(values) or 1
    return [
        {"label": label, "n": n, "pct": round(100 * n / top)}
        for (label, _q), n in zip(buckets, values, strict=True)
    ]


def queue_jobs(user, queue: TaskQueue, limit: int = 5) -> list[Job]:
    return list(
        jobs_for(user).filter(params__queue_id=queue.pk).select_related("created_by")[:limit]
    )
