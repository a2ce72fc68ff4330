"""What every app's pages share: a form page, a button that runs a service or starts a job
(refusal: back with the reason, nothing changed), the list of a user's projects with their
items, the latest-job cards and the "a job is running" flag a polled fragment reads, state chips.

Only edge code lives here (forms, messages, redirects); the work is in each app's services.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from django import forms
from django.contrib import messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _

from .errors import ServiceError
from .models import Job
from .scoping import projects_for


def error_context(exc: ServiceError) -> dict:
    """A refusal as a form page shows it: the message and the line-numbered errors, if any."""
    return {"message": exc.message, "errors": getattr(exc, "errors", [])}


def first_error(form: forms.Form) -> str:
    """The first error of an invalid form, for a one-line message after a button."""
    return next(iter(form.errors.values()))[0] if form.errors else ""


def refuse(request: HttpRequest, exc: ServiceError) -> None:
    messages.error(request, exc.message)


def grouped_by_project(user, items: QuerySet, key: str) -> list[dict]:
    """Every project in the user's reach with its items (both by name), for the list pages."""
    projects = list(projects_for(user).order_by("name", "id"))
    by_project: dict[int, list] = {p.pk: [] for p in projects}
    for item in items.order_by("name", "id"):
        by_project.setdefault(item.project_id, []).append(item)
    return [{"project": p, key: by_project[p.pk]} for p in projects]


def form_page(
    request: HttpRequest,
    form: forms.Form,
    save: Callable[[dict], Any],
    template: str,
    context: dict,
    *,
    done: str | Callable[[Any], str],
    then: str | Callable[[Any], str],
) -> HttpResponse:
    """A page with a form, shown on GET. A valid POST runs ``save(form.cleaned_data)`` (one
    service) and goes on to ``then`` with ``done`` (either may be made from what it returned);
    an invalid form or a refusal shows the page again with the reason (400), nothing changed."""
    error = None
    if request.method == "POST" and form.is_valid():
        try:
            result = save(form.cleaned_data)
        except forms.ValidationError as exc:
            form.add_error(None, exc)
        except ServiceError as exc:
            error = error_context(exc)
        else:
            messages.success(request, done(result) if callable(done) else done)
            return redirect(then(result) if callable(then) else then)
    status = 400 if request.method == "POST" else 200
    return render(request, template, {**context, "form": form, "error": error}, status=status)


def perform(
    request: HttpRequest,
    call: Callable[[], Any],
    *,
    back: str,
    done: str | Callable[[Any], str],
    then: str | Callable[[Any], str] | None = None,
    refuse: Callable[[HttpRequest, ServiceError], None] = refuse,
) -> HttpResponse:
    """A button's POST: run ``call`` (one service). A refusal goes back to ``back`` with its
    reason and changes nothing; success says ``done`` and goes to ``then`` (default ``back``);
    either may be made from what the call returned."""
    try:
        result = call()
    except ServiceError as exc:
        refuse(request, exc)
        return redirect(back)
    messages.success(request, done(result) if callable(done) else done)
    return redirect(then(result) if callable(then) else then or back)


def start_job(
    request: HttpRequest,
    start: Callable[[], Job],
    *,
    page: str,
    what: str = "",
    message: str | Callable[[Job], str] | None = None,
    refused_at: str = "",
    job_page: bool = False,
    refuse: Callable[[HttpRequest, ServiceError], None] = refuse,
) -> HttpResponse:
    """A button that starts a job (``perform`` for jobs): a refusal goes back to ``page`` (at
    ``#refused_at``); a started job is announced with ``message`` (by default "<what>
    started.") and leads to its progress card on ``page`` (``#job-N``), or with ``job_page`` to
    the job's own page."""

    def then(job: Job) -> str:
        return reverse("curator-job", args=[job.pk]) if job_page else f"{page}#job-{job.pk}"

    return perform(
        request,
        start,
        back=page + (f"#{refused_at}" if refused_at else ""),
        done=message if message is not None else _("%(what)s started.") % {"what": what},
        then=then,
        refuse=refuse,
    )


def job_cards(latest: Mapping[str, Job], labels: Mapping[str, str]) -> list[tuple[str, Job]]:
    """(label, job) for the newest job of each kind, in the order of ``labels``."""
    return [(label, latest[kind]) for kind, label in labels.items() if kind in latest]


def any_running(jobs: Iterable[Job]) -> bool:
    return any(not job.is_finished for job in jobs)


def funnel_context(funnel: dict, latest_jobs: Mapping[str, Job], bar: str = "") -> dict:
    """What a recipe's funnel fragment shows: the counts, whether a job runs (the fragment
    polls while one does) and, when the bars are scaled to the count ``bar``, that count."""
    context = {"funnel": funnel, "running": any_running(latest_jobs.values())}
    if bar:
        context["max_bar"] = max(funnel[bar], 1)
    return context


def state_chips(counts: Mapping[str, int], choices: Iterable[tuple[str, str]]) -> list[dict]:
    """The filter chips of a list page: each state with its label and count."""
    return [{"value": v, "label": label, "n": counts.get(v, 0)} for v, label in choices]
