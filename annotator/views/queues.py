"""Curator pages: a queue (create, edit, status, upload, cancel tasks) and its enrollments."""

from __future__ import annotations

import re

import markdown
import nh3
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from .. import forms, kinds, selectors, services
from ..models import Enrollment
from ..platform import roles
from ..platform.errors import Invalid, ServiceError
from ..platform.jobs import job_enqueue
from ..platform.scoping import (
    get_or_404,
    projects_for,
)
from ..platform.views import flash, job_news
from .base import (
    CURATOR,
    STAFF,
    agreement_histogram,
    progress_segments,
    queue_jobs,
    queue_quality_of,
)


def _markdown(text: str) -> str:
    return nh3.clean(markdown.markdown(text or "", extensions=["extra", "sane_lists"]))


def _apply_service_error(form, exc: ServiceError) -> None:
    """Attach a service refusal to the field it is about (the kind's errors name ``config``)."""
    field = "config" if exc.message.startswith("config") else None
    form.add_error(field, exc.message)


@roles.roles_required(*CURATOR)
def queue_new(request: HttpRequest, project_id: int) -> HttpResponse:
    project = get_or_404(projects_for(request.user), pk=project_id)
    initial = {"kind": request.GET.get("kind")} if request.GET.get("kind") in kinds.REGISTRY else {}
    form = forms.QueueForm(request.POST or None, initial=initial)
    return _queue_form_page(
        request,
        form,
        lambda: services.queue_create(
            project=project, kind=form.cleaned_data["kind"], **form.service_fields()
        ),
        context={"project": project, "queue": None, "default_configs": forms.DEFAULT_CONFIGS},
        done=_("Queue created. Now upload its tasks."),
        then=lambda queue: reverse("curator-queue-upload", kwargs={"queue_id": queue.pk}),
    )


@roles.roles_required(*CURATOR)
def queue_edit(request: HttpRequest, queue_id: int) -> HttpResponse:
    queue = get_or_404(selectors.managed_queues_for(request.user), pk=queue_id)
    form = forms.QueueForm(request.POST or None, queue=queue)
    return _queue_form_page(
        request,
        form,
        lambda: services.queue_update(queue=queue, by=request.user, **form.service_fields()),
        context={"project": queue.project, "queue": queue, "default_configs": {}},
        done=_("Queue saved."),
        then=lambda _saved: reverse("curator-queue", kwargs={"queue_id": queue.pk}),
    )


def _queue_form_page(request, form, save, *, context: dict, done: str, then) -> HttpResponse:
    """The queue form: a valid POST runs ``save()`` and goes on to ``then(result)``; a refusal
    is shown on the field it is about."""
    if request.method == "POST" and form.is_valid():
        try:
            result = save()
        except ServiceError as exc:
            _apply_service_error(form, exc)
        else:
            messages.success(request, done)
            return redirect(then(result))
    return render(request, "annotator/curator/queue_form.html", {"form": form, **context})


@roles.roles_required(*STAFF)
def queue_detail(request: HttpRequest, queue_id: int) -> HttpResponse:
    queue = get_or_404(selectors.queues_for(request.user), pk=queue_id)
    progress = selectors.queue_progress([queue.pk])[queue.pk]
    stats = queue_quality_of(queue)
    annotators = stats["per_annotator"]
    top_n = max((a["n"] for a in annotators), default=0) or 1
    for a in annotators:
        a["n_pct"] = round(100 * a["n"] / top_n)
        a["can_resume"] = a.get("enrollment_id") and a.get("enrollment_state") in (
            Enrollment.State.PAUSED,
            Enrollment.State.FAILED,
        )
    kind = kinds.REGISTRY.get(queue.kind)
    return render(
        request,
        "annotator/curator/queue.html",
        {
            "queue": queue,
            "kind": kind,
            "progress": progress,
            "segments": progress_segments(progress),
            "stats": stats,
            "annotators": annotators,
            "histogram": agreement_histogram(queue),
            "jobs": queue_jobs(request.user, queue),
            "instructions_html": _markdown(queue.instructions),
            "lease_minutes": round(queue.lease_ttl.total_seconds() / 60),
            "undo_minutes": round(queue.undo_window.total_seconds() / 60),
            "open_reports": selectors.open_report_counts(queue.project).get(queue.pk, 0),
            "exports": [
                (fmt, f"/api/queues/{queue.pk}/{what}/?format={fmt}")
                for what in ("outcomes", "annotations", "reports")
                for fmt in ("jsonl", "csv")
            ],
        },
    )


@roles.roles_required(*CURATOR)
@require_POST
def queue_status(request: HttpRequest, queue_id: int) -> HttpResponse:
    queue = get_or_404(selectors.managed_queues_for(request.user), pk=queue_id)
    status = request.POST.get("status", "")
    try:
        services.queue_set_status(queue=queue, status=status)
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request, _("The queue is now %(s)s.") % {"s": queue.get_status_display().lower()}
        )
    return redirect("curator-queue", queue_id=queue.pk)


def _task_ids_from_form(values: list[str]) -> list[int] | None:
    """Ids from one or more form fields, each holding ids separated by commas or spaces."""
    ids = []
    for part in (p for value in values for p in re.split(r"[\s,]+", value) if p):
        if not part.isascii() or not part.isdigit() or len(part) > 30:
            return None
        ids.append(int(part))
    return ids


def _back(request: HttpRequest, fallback: str) -> str:
    """The page the form came from (``next``, on this site only), else ``fallback``."""
    target = request.POST.get("next", "")
    safe = url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return target if target and safe else fallback


@roles.roles_required(*CURATOR)
@require_POST
def queue_tasks_cancel(request: HttpRequest, queue_id: int) -> HttpResponse:
    """Cancel the tasks named in ``ids`` (with an optional ``reason``), then go back."""
    queue = get_or_404(selectors.managed_queues_for(request.user), pk=queue_id)
    back = _back(request, reverse("curator-queue", args=[queue.pk]))
    ids = _task_ids_from_form(request.POST.getlist("ids"))
    if ids is None:
        messages.error(request, _("Task ids are whole numbers, separated by commas or spaces."))
        return redirect(back)
    try:
        result = services.tasks_cancel(
            queue=queue, task_ids=ids, reason=request.POST.get("reason", "")
        )
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, result.message)
    return redirect(back)


@roles.roles_required(*CURATOR)
@require_POST
def enrollment_resume(request: HttpRequest, enrollment_id: int) -> HttpResponse:
    enrollment = get_or_404(
        Enrollment.objects.select_related("annotator").filter(
            queue__in=selectors.managed_queues_for(request.user)
        ),
        pk=enrollment_id,
    )
    services.enrollment_resume(enrollment=enrollment)
    messages.success(
        request, _("%(u)s can work in this queue again.") % {"u": enrollment.annotator.username}
    )
    return redirect("curator-queue", queue_id=enrollment.queue_id)


@roles.roles_required(*CURATOR)
def queue_upload(request: HttpRequest, queue_id: int) -> HttpResponse:
    """Validate a JSONL upload at the edge (all errors, with line numbers), then import in a job."""
    queue = get_or_404(selectors.managed_queues_for(request.user), pk=queue_id)
    form = forms.UploadForm(request.POST or None, request.FILES or None)
    error = None
    if request.method == "POST" and form.is_valid():
        try:
            rows = services.task_rows_check(queue=queue, data=form.content())
        except Invalid as exc:
            error = exc
        else:
            job = job_enqueue(
                kind="annotator.import_tasks",
                params={
                    "queue_id": queue.pk,
                    "rows": [
                        {"payload": r.payload, "gold": r.gold, "id": r.external_id} for r in rows
                    ],
                },
                created_by=request.user,
                project=queue.project,
                total=len(rows),
            )
            n = {"n": len(rows)}
            news = job_news(
                job,
                what=_("The import"),
                started=_("%(n)d task(s) are being imported.") % n,
                finished=_("%(n)d task(s) imported.") % n,
            )
            flash(request, news)
            return redirect("curator-job", job_id=job.pk)
    return render(
        request,
        "annotator/curator/upload.html",
        {
            "queue": queue,
            "form": form,
            "error": error,
            "examples": forms.example_lines(queue.kind),
        },
        status=400 if error else 200,
    )
