"""Curator pages: a queue's disagreements, its task browser, one task with its answers, and
settling tasks (one, or the browser's selection)."""

from __future__ import annotations

import json
from urllib.parse import urlencode

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Prefetch, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from .. import forms, selectors, services
from ..kinds import report_reasons
from ..models import Annotation, Task
from ..platform import roles
from ..platform.errors import ServiceError
from ..platform.scoping import (
    get_or_404,
)
from .base import CURATOR, STAFF
from .reports import reason_parts


def _response_summary(response) -> str:
    """A short human reading of any kind's response, for side-by-side tables."""
    if not isinstance(response, dict):
        return json.dumps(response, ensure_ascii=False)
    for key in ("decision", "answer", "winner", "verdict"):
        if key in response:
            text = str(response[key])
            if key == "verdict" and response.get("reason"):
                text += f" ({response['reason']})"
            if key == "winner" and "choice" in response:
                text += f" ({response['choice']})"
            return text
    if "tags" in response:
        return ", ".join(response["tags"])
    if "text" in response:
        return response["text"]
    return json.dumps(response, ensure_ascii=False)


def _payload_parts(payload) -> dict:
    """Pull images and text fields out of any payload for a read-only view."""
    images: list[dict] = []
    texts: list[tuple[str, str]] = []

    def walk(value, label: str) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("url"), str):
                images.append(value)
                return
            for k, v in value.items():
                walk(v, f"{label}.{k}" if label else k)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, f"{label}[{i}]")
        elif value is not None:
            texts.append((label, str(value)))

    walk(payload, "")
    return {"images": images, "texts": texts}


def _answer_choices(annotations) -> list[tuple[str, str, int]]:
    """The distinct answers given (not gold checks), most frequent first, as (JSON, summary,
    how many): the settle form's "by my choice" options."""
    counts: dict[str, list] = {}
    for a in annotations:
        if a.is_gold:
            continue
        key = json.dumps(a.response, sort_keys=True, ensure_ascii=False)
        counts.setdefault(key, [_response_summary(a.response), 0])[1] += 1
    return sorted(
        ((key, summary, n) for key, (summary, n) in counts.items()), key=lambda c: (-c[2], c[1])
    )


@roles.roles_required(*STAFF)
def queue_disagreements(request: HttpRequest, queue_id: int) -> HttpResponse:
    queue = get_or_404(selectors.queues_for(request.user), pk=queue_id)
    tasks = (
        selectors.tasks_for(request.user)
        .filter(queue=queue, is_gold=False)
        .filter(Q(state=Task.State.UNDECIDED) | Q(escalations__gt=0) | Q(agreement__lt=1))
        .exclude(state=Task.State.CANCELLED)
        .order_by("agreement", "-escalations", "id")
        .prefetch_related(
            Prefetch(
                "annotations",
                queryset=Annotation.objects.filter(is_gold=False)
                .select_related("annotator")
                .order_by("id"),
            )
        )
    )
    page = Paginator(tasks, 20).get_page(request.GET.get("page"))
    for task in page.object_list:
        task.parts = _payload_parts(task.payload)
        for a in task.annotations.all():
            a.summary = _response_summary(a.response)
        task.choices = _answer_choices(task.annotations.all())
    return render(request, "annotator/curator/disagreements.html", {"queue": queue, "page": page})


@roles.roles_required(*STAFF)
def task_detail(request: HttpRequest, task_id: int) -> HttpResponse:
    task = get_or_404(
        selectors.tasks_for(request.user).select_related("queue", "queue__project", "settled_by"),
        pk=task_id,
    )
    annotations = list(task.annotations.select_related("annotator").order_by("id"))
    undone = list(task.undone.select_related("annotator").order_by("id"))
    sent_back = list(task.sent_back.select_related("annotator", "sent_back_by").order_by("id"))
    for a in (*annotations, *undone, *sent_back):
        a.summary = _response_summary(a.response)
    labels = {r["code"]: _(r["label"]) for r in report_reasons(task.queue.config)}
    reports = list(task.reports.select_related("reporter", "handled_by").order_by("id"))
    for report in reports:
        report.code, report.label, report.details = reason_parts(report.reason, labels)
    return render(
        request,
        "annotator/curator/task.html",
        {
            "task": task,
            "queue": task.queue,
            "parts": _payload_parts(task.payload),
            "payload_json": json.dumps(task.payload, indent=2, ensure_ascii=False),
            "gold_json": json.dumps(task.gold, indent=2, ensure_ascii=False)
            if task.gold is not None
            else "",
            "outcome_json": json.dumps(task.outcome, indent=2, ensure_ascii=False)
            if task.outcome is not None
            else "",
            "assignments": task.assignments.select_related("annotator").order_by("leased_at"),
            "annotations": annotations,
            "undone": undone,
            "sent_back": sent_back,
            "send_back_refusal": services.send_back_refusal(task, task.queue),
            "reports": reports,
            "choices": _answer_choices(annotations),
            "settled_by": task.settled_by.get_username() if task.settled_by else "",
        },
    )


PER_PAGE = 50


def _outcome_summary(task: Task) -> str:
    label = (task.outcome or {}).get("label")
    if label is None:
        return ""
    if isinstance(label, list):
        return ", ".join(str(v) for v in label)
    return str(label)


def _browser_rows(tasks: list[Task]) -> None:
    """What each row shows, computed once here: 50 rows of template filters and tags cost more
    than the page's queries."""
    link = reverse("curator-task", args=[0])[: -len("0/")]
    states = dict(Task.State.choices)
    for task in tasks:
        task.url = f"{link}{task.pk}/"
        task.state_label = states.get(task.state, task.state)
        task.summary = _outcome_summary(task)[:60]
        texts = _payload_parts(task.payload)["texts"]
        # the longest text field: the question or instruction rather than a choice ("Yes")
        task.content = max((t for _label, t in texts), key=len)[:90] if texts else ""
        task.agreement_pct = None if task.agreement is None else round(100 * task.agreement)
        finished = task.decided_at and timezone.localtime(task.decided_at)
        task.finished = finished.strftime("%Y-%m-%d %H:%M") if finished else ""


@roles.roles_required(*STAFF)
def queue_tasks(request: HttpRequest, queue_id: int) -> HttpResponse:
    """The task browser: every task of a queue, filtered, searched, sorted and paged on the
    server (one bounded count and one page query); htmx asks for the results only."""
    queue = get_or_404(selectors.queues_for(request.user), pk=queue_id)
    form = forms.TaskFilterForm(request.GET or None)
    if form.is_bound and not form.is_valid():
        page = None
    else:
        if not form.is_bound:
            form = forms.TaskFilterForm({})
            form.is_valid()
        page = selectors.task_page(
            queue, form.task_filter(), number=form.cleaned_data.get("page") or 1, per_page=PER_PAGE
        )
        _browser_rows(page.tasks)
    query = request.GET.copy()
    query.pop("page", None)
    selection = [
        (name, value)
        for name, value in (form.cleaned_data if page is not None else {}).items()
        if name in ("q", "state", "flag", "annotator", "gold") and value
    ]
    context = {
        "queue": queue,
        "form": form,
        "page": page,
        "query": query.urlencode(),
        "selection": selection,
        "people": selectors.queue_people(queue),
    }
    template = "annotator/curator/tasks.html"
    if request.htmx and not request.htmx.boosted:
        template = "annotator/curator/_task_rows.html"
    return render(request, template, context, status=200 if page is not None else 400)


def _settle_back(request: HttpRequest, fallback: str) -> str:
    target = request.POST.get("next", "")
    safe = url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return target if target and safe else fallback


def _managed_task_or_404(request: HttpRequest, task_id: int):
    """A task of a queue this curator manages, else 404."""
    return get_or_404(
        selectors.tasks_for(request.user).filter(
            queue__in=selectors.managed_queues_for(request.user)
        ),
        pk=task_id,
    )


def _form_errors_flash(request: HttpRequest, form) -> None:
    for errors in form.errors.values():
        for error in errors:
            messages.error(request, error)


@roles.roles_required(*CURATOR)
@require_POST
def task_settle(request: HttpRequest, task_id: int) -> HttpResponse:
    """Settle one task (by majority or by the curator's answer, with a reason), then go back."""
    task = _managed_task_or_404(request, task_id)
    back = _settle_back(request, reverse("curator-task", args=[task.pk]))
    form = forms.SettleForm(request.POST)
    if not form.is_valid():
        _form_errors_flash(request, form)
        return redirect(back)
    try:
        services.task_curator_settle(
            task_id=task.pk,
            queue=task.queue,
            by=request.user,
            method=form.cleaned_data["method"],
            response=form.cleaned_data["response"],
            reason=form.cleaned_data["reason"],
        )
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, _("Task %(id)d settled.") % {"id": task.pk})
    return redirect(back)


@roles.roles_required(*CURATOR)
@require_POST
def queue_tasks_settle(request: HttpRequest, queue_id: int) -> HttpResponse:
    """Settle every task the browser's filters select (a job when there are many)."""
    queue = get_or_404(selectors.managed_queues_for(request.user), pk=queue_id)
    filters = forms.TaskFilterForm(request.POST)
    form = forms.SettleForm(request.POST)
    query = {k: v for k, v in request.POST.items() if k in filters.fields and k != "page" and v}
    back = reverse("curator-queue-tasks", args=[queue.pk]) + (
        "?" + urlencode(query) if query else ""
    )
    if not filters.is_valid() or not form.is_valid():
        for errors in [*filters.errors.values(), *form.errors.values()]:
            for error in errors:
                messages.error(request, error)
        return redirect(back)
    try:
        outcome = services.tasks_curator_settle_selection(
            queue=queue,
            task_filter=filters.task_filter(),
            by=request.user,
            method=form.cleaned_data["method"],
            response=form.cleaned_data["response"],
            reason=form.cleaned_data["reason"],
        )
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, outcome.message)
    return redirect(back)


@roles.roles_required(*CURATOR)
@require_POST
def task_send_back(request: HttpRequest, task_id: int) -> HttpResponse:
    """Send one person's answer back with a note: the task asks for another answer."""
    task = _managed_task_or_404(request, task_id)
    back = _settle_back(request, reverse("curator-task", args=[task.pk]))
    form = forms.SendBackForm(request.POST)
    if not form.is_valid():
        _form_errors_flash(request, form)
        return redirect(back)
    try:
        services.annotation_send_back(
            queue=task.queue,
            task_id=task.pk,
            annotator=form.cleaned_data["annotator"],
            by=request.user,
            note=form.cleaned_data["note"],
        )
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request,
            _("%(who)s's answer was sent back; task %(id)d asks for another answer.")
            % {"who": form.cleaned_data["annotator"], "id": task.pk},
        )
    return redirect(back)
