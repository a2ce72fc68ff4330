"""The reports inbox of a project: every "Report a problem" with its reason, who and when, and
the task; curators resolve, requeue or cancel (``services.report_handle``)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from .. import forms, selectors, services
from ..kinds import report_reasons
from ..models import Report, Task
from ..platform import roles
from ..platform.errors import ServiceError
from ..platform.scoping import get_or_404, projects_for
from .base import CURATOR, STAFF

PER_PAGE = 50


def reason_parts(reason: str, labels: dict[str, str]) -> tuple[str, str, str]:
    """A stored reason as (code, label, details): ``other: the images match`` is ("other",
    "Something else", "the images match")."""
    code, _sep, details = reason.partition(":")
    code = code.strip()
    if code not in labels:
        return "", "", reason
    return code, labels[code], details.strip()


def _labels(queue) -> dict[str, str]:
    return {r["code"]: _(r["label"]) for r in report_reasons(queue.config)}


@roles.roles_required(*STAFF)
def project_reports(request: HttpRequest, project_id: int) -> HttpResponse:
    """The inbox: open reports first (the default), or handled ones, by queue; 50 a page."""
    project = get_or_404(projects_for(request.user), pk=project_id)
    form = forms.ReportFilterForm(request.GET or None)
    valid = form.is_valid() if form.is_bound else True
    data = form.cleaned_data if form.is_bound and valid else {}
    status = data.get("status") or Report.Status.OPEN
    queues = list(selectors.queues_for(request.user).filter(project=project).order_by("id"))
    counts = selectors.open_report_counts(project)
    for q in queues:
        q.open_reports = counts.get(q.pk, 0)
    reports = selectors.project_reports(
        project, status="" if status == "all" else status, queue_id=data.get("queue")
    )
    page = Paginator(reports, PER_PAGE).get_page(data.get("page") or 1)
    states = dict(Task.State.choices)
    labels: dict[int, dict[str, str]] = {}
    for report in page.object_list:
        queue_labels = labels.setdefault(report.queue_id, _labels(report.queue))
        report.code, report.label, report.details = reason_parts(report.reason, queue_labels)
        report.task_state = states.get(report.task.state, report.task.state)
    query = {k: v for k, v in request.GET.items() if k in ("status", "queue") and v}
    return render(
        request,
        "annotator/curator/reports.html",
        {
            "project": project,
            "form": form,
            "page": page,
            "status": status,
            "queue_id": data.get("queue"),
            "queues": queues,
            "open_total": sum(counts.values()),
            "query": urlencode(query),
            "statuses": [
                ("open", _("Open")),
                ("resolved", _("Resolved")),
                ("requeued", _("Requeued")),
                ("cancelled", _("Task cancelled")),
                ("all", _("All")),
            ],
        },
        status=200 if valid else 400,
    )


@roles.roles_required(*CURATOR)
@require_POST
def report_handle(request: HttpRequest, report_id: int) -> HttpResponse:
    """Resolve, requeue or cancel one report, then back to the inbox (or ``next``)."""
    report = get_or_404(
        selectors.managed_reports_for(request.user).select_related("queue"), pk=report_id
    )
    back = reverse("curator-project-reports", args=[report.queue.project_id])
    target = request.POST.get("next", "")
    safe = url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    back = target if target and safe else back
    form = forms.ReportHandleForm(request.POST)
    if not form.is_valid():
        for errors in form.errors.values():
            for error in errors:
                messages.error(request, error)
        return redirect(back)
    try:
        done = services.report_handle(
            reports=selectors.managed_reports_for(request.user),
            report_id=report.pk,
            action=form.cleaned_data["action"],
            by=request.user,
            note=form.cleaned_data["note"],
        )
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, done.message)
    return redirect(back)
