"""What every app's pages share: a form page, a button that runs a service or starts a job
(refusal: back with the reason, nothing changed), the list of a user's projects with their
items, the latest-job cards and the "a job is running" flag a polled fragment reads, state chips.

Only edge code lives here (forms, messages, redirects); the work is in each app's services.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

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


class Flash(NamedTuple):
    """A message for the next page with its level (``django.contrib.messages`` constants)."""

    level: int
    text: str


def flash(request: HttpRequest, news: str | Flash) -> None:
    """Say ``news`` on the next page: a plain text is a success."""
    if isinstance(news, Flash):
        messages.add_message(request, news.level, news.text)
    else:
        messages.success(request, news)


def job_news(job: Job, *, what: str, started: str = "", finished: str = "") -> Flash:
    """What to tell the person who just started ``job``, as it is now: ``finished`` when it
    ran to its end already (where jobs run inside the request that starts them: eager mode
    without the demo's background worker), why when it failed, else ``started`` (it runs in
    the background and its card follows it). ``what`` names the job in the defaults."""
    job.refresh_from_db(fields=["status", "error"])
    if job.status == Job.Status.SUCCEEDED:
        return Flash(messages.SUCCESS, finished or _("%(what)s finished.") % {"what": what})
    if job.status == Job.Status.FAILED:
        reason = (job.error.strip().splitlines() or [""])[0][:300]
        text = _("%(what)s failed: %(reason)s") % {"what": what, "reason": reason}
        return Flash(messages.ERROR, text)
    return Flash(messages.SUCCESS, started or _("%(what)s started.") % {"what": what})


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
    done: str | Flash | Callable[[Any], str | Flash],
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
            flash(request, done(result) if callable(done) else done)
            return redirect(then(result) if callable(then) else then)
    status = 400 if request.method == "POST" else 200
    return render(request, template, {**context, "form": form, "error": error}, status=status)


def perform(
    request: HttpRequest,
    call: Callable[[], Any],
    *,
    back: str,
    done: str | Flash | Callable[[Any], str | Flash],
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
    flash(request, done(result) if callable(done) else done)
    return redirect(then(result) if callable(then) else then or back)


def start_job(
    request: HttpRequest,
    start: Callable[[], Job],
    *,
    page: str,
    what: str | Callable[[Job], str],
    started: str | Callable[[Job], str] = "",
    finished: str | Callable[[Job], str] = "",
    refused_at: str = "",
    job_page: bool = False,
    refuse: Callable[[HttpRequest, ServiceError], None] = refuse,
) -> HttpResponse:
    """A button that starts a job (``perform`` for jobs): a refusal goes back to ``page`` (at
    ``#refused_at``); a started job is announced as it is by now (``job_news``: "<what>
    started.", or ``started``; "<what> finished." or ``finished`` when it ran already; why when
    it failed) and leads to its progress card on ``page`` (``#job-N``), or with ``job_page`` to
    the job's own page. ``what``, ``started`` and ``finished`` may be made from the job."""

    def then(job: Job) -> str:
        return reverse("curator-job", args=[job.pk]) if job_page else f"{page}#job-{job.pk}"

    def news(job: Job) -> Flash:
        def text(value: str | Callable[[Job], str]) -> str:
            return value(job) if callable(value) else value

        return job_news(job, what=text(what), started=text(started), finished=text(finished))

    return perform(
        request,
        start,
        back=page + (f"#{refused_at}" if refused_at else ""),
        done=news,
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
