"""Curator pages: projects and their people."""

from __future__ import annotations

from django.contrib import messages
from django.db.models import Prefetch
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from .. import forms, selectors, services
from ..models import TaskQueue
from ..platform import roles
from ..platform.errors import ServiceError
from ..platform.scoping import (
    curated_project_or_404,
    get_or_404,
    projects_for,
)
from .base import CURATOR, STAFF, progress_attach


@roles.roles_required(*STAFF)
def projects(request: HttpRequest) -> HttpResponse:
    """Every project in reach with its queues and their progress (four queries in all)."""
    items = list(
        projects_for(request.user).prefetch_related(
            Prefetch("queues", queryset=TaskQueue.objects.order_by("-priority", "id"))
        )
    )
    progress_attach([q for p in items for q in p.queues.all()])
    return render(request, "annotator/curator/projects.html", {"projects": items})


@roles.roles_required(*CURATOR)
def project_new(request: HttpRequest) -> HttpResponse:
    form = forms.ProjectForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        project = services.project_create(created_by=request.user, **form.cleaned_data)
        messages.success(request, _("Project “%(p)s” created.") % {"p": project.name})
        return redirect("curator-project", project_id=project.pk)
    return render(request, "annotator/curator/project_new.html", {"form": form})


@roles.roles_required(*STAFF)
def project_detail(request: HttpRequest, project_id: int) -> HttpResponse:
    project = get_or_404(projects_for(request.user), pk=project_id)
    queues = progress_attach(
        list(selectors.queues_for(request.user).filter(project=project).order_by("-priority", "id"))
    )
    counts = selectors.open_report_counts(project)
    for q in queues:
        q.open_reports = counts.get(q.pk, 0)
    return render(
        request,
        "annotator/curator/project.html",
        {"project": project, "queues": queues, "open_reports": sum(counts.values())},
    )


def _role_names(person) -> list[str]:
    return [str(roles.ROLE_LABELS[r]) for r in roles.ALL_ROLES if r in person.roles]


@roles.roles_required(*CURATOR)
def project_people(request: HttpRequest, project_id: int) -> HttpResponse:
    """The project's members and their roles; curators of the project remove people here."""
    project = curated_project_or_404(request.user, project_id)
    people = selectors.project_people(project)
    held = selectors.live_leases_by_person(project)
    acceptance = selectors.acceptance_by_person(project)
    for person in people:
        person.role_names = _role_names(person)
        person.held = held.get(person.pk, [])
        person.acceptance = acceptance.get(person.pk)
    return render(request, "annotator/curator/people.html", {"project": project, "people": people})


@roles.roles_required(*CURATOR)
def project_member_remove(request: HttpRequest, project_id: int, user_id: int) -> HttpResponse:
    """GET: a confirmation page (the page works without JavaScript). POST: remove the person;
    their live leases in the project end at once. htmx posts answer with the emptied row."""
    project = curated_project_or_404(request.user, project_id)
    found = selectors.project_people(project, user_id=user_id)
    if not found:
        raise Http404
    person = found[0]
    if request.method != "POST":
        return render(
            request,
            "annotator/curator/people_remove.html",
            {"project": project, "person": person, "role_names": _role_names(person)},
        )
    try:
        ended = services.project_member_remove(project=project, user=person, by=request.user)
    except ServiceError as exc:
        if request.htmx:
            return HttpResponse(exc.message, status=exc.status, content_type="text/plain")
        messages.error(request, exc.message)
        return redirect("curator-project-people", project_id=project.pk)
    text = ngettext(
        "%(u)s was removed from %(p)s; %(n)d task they held went back to the pool.",
        "%(u)s was removed from %(p)s; %(n)d tasks they held went back to the pool.",
        ended,
    ) % {"u": person.username, "p": project.name, "n": ended}
    if request.htmx:
        return render(request, "annotator/curator/_person_removed.html", {"message": text})
    messages.success(request, text)
    return redirect("curator-project-people", project_id=project.pk)
