"""Project scoping: what a user may reach. Admins reach everything; curators and researchers
the projects they are members of. Anything outside reach is answered exactly like a missing
object (404)."""

from __future__ import annotations

from django.db.models import Q, QuerySet
from django.http import Http404

from . import roles
from .models import Job, Project


def projects_for(user) -> QuerySet[Project]:
    if roles.has_role(user, [roles.ADMIN]):
        return Project.objects.all()
    if not user.is_authenticated:
        return Project.objects.none()
    return Project.objects.filter(members=user)


def get_or_404(qs: QuerySet, **lookup):
    obj = qs.filter(**lookup).first()
    if obj is None:
        raise Http404
    return obj


def curated_project_or_404(user, pk: int) -> Project:
    """A project the user curates (a curator or admin in its reach); 404 for anyone else."""
    if not roles.has_role(user, [roles.CURATOR]):
        raise Http404
    return get_or_404(projects_for(user), pk=pk)


def jobs_for(user) -> QuerySet[Job]:
    """The jobs of the user's projects, and the project-less jobs they started. A job of a
    project belongs to the project: someone removed from it no longer sees the jobs they
    started there."""
    if roles.has_role(user, [roles.ADMIN]):
        return Job.objects.all()
    if not roles.has_role(user, [roles.CURATOR, roles.RESEARCHER]):
        return Job.objects.none()
    return Job.objects.filter(
        Q(project__in=projects_for(user)) | Q(project__isnull=True, created_by=user)
    )


def jobs_curated_by(user) -> QuerySet[Job]:
    """Jobs a user may run again: those of the projects they curate (admins: every job)."""
    if roles.has_role(user, [roles.ADMIN]):
        return Job.objects.all()
    if not roles.has_role(user, [roles.CURATOR]):
        return Job.objects.none()
    return Job.objects.filter(project__in=projects_for(user))
