"""Reads of the generic recipe pages, scoped like every curation page: curators (and admins)
see the objects of their projects (with ``readers``, the projects' researchers too: pages such as
a leaderboard); anything else answers like a missing object (404)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from django.db import connection
from django.db.models import Count, QuerySet
from django.http import Http404

from annotator.platform import roles
from annotator.platform.models import Job, Project
from annotator.platform.scoping import projects_for
from annotator.platform.sql_rows import RowWith

from .declare import Recipe

LATEST_JOBS_SCAN = 50  # the newest jobs of an object read to find each kind's latest


def objects_for(recipe: Recipe, user, *, readers: bool = False) -> QuerySet:
    """The recipe's objects in the projects ``user`` curates (with ``readers``: or researches;
    none for other roles)."""
    wanted = [roles.CURATOR, roles.RESEARCHER] if readers else [roles.CURATOR]
    if not roles.has_role(user, wanted):
        return recipe.model.objects.none()
    return recipe.model.objects.select_related(*recipe.select_related).filter(
        project__in=projects_for(user)
    )


def object_or_404(recipe: Recipe, user, pk: int, *, readers: bool = False) -> Any:
    obj = objects_for(recipe, user, readers=readers).filter(pk=pk).first()
    if obj is None:
        raise Http404
    return obj


def latest_jobs(recipe: Recipe, obj: Any) -> dict[str, Job]:
    """The newest job of each stage kind for ``obj`` (one query), by job kind."""
    kinds = [stage.job_kind for stage in recipe.stages]
    latest: dict[str, Job] = {}
    jobs = (
        Job.objects.filter(kind__in=kinds, **{f"params__{recipe.job_param}": obj.pk})
        .select_related("created_by")
        .order_by("-created_at", "-id")[:LATEST_JOBS_SCAN]
    )
    for job in jobs:
        latest.setdefault(job.kind, job)
    return latest


def count_by(queryset: QuerySet, field: str, values: Iterable[str] | None = None) -> Counter | dict:
    """``{value of field: rows}`` of ``queryset`` in one GROUP BY query; with ``values`` (a
    TextChoices' ``values``): a dict of exactly those keys in that order, 0 where no row has it."""
    found = Counter(dict(queryset.values_list(field).annotate(n=Count("pk")).order_by()))
    return found if values is None else {value: found[value] for value in values}


def in_state(queryset: QuerySet, field: str, state: str) -> QuerySet:
    """``queryset`` narrowed to ``field == state`` when ``state`` is one of the field's choices
    (an item list's ``?state=``); anything else ("" included) leaves it as it is."""
    if state in {value for value, _label in queryset.model._meta.get_field(field).choices}:
        return queryset.filter(**{field: state})
    return queryset


def workable_for(recipe: Recipe, user) -> QuerySet:
    """The recipe's objects open to crowdworkers (``Recipe.workers.open_when``) in ``user``'s
    projects; none for anyone without the crowdworker role (admins pass every role check)."""
    if recipe.workers is None or not roles.has_role(user, [roles.CROWDWORKER]):
        return recipe.model.objects.none()
    related = ("project", *recipe.workers.select_related)
    objects = recipe.model.objects.select_related(*related)
    return objects.filter(project__in=projects_for(user), **recipe.workers.open_when)


def workable_or_404(recipe: Recipe, user, pk: int) -> Any:
    """``workable_for(recipe, user).get(pk=pk)`` or 404, in one hand-written statement (every
    request of a worker page reads its object here first; a hunt step waits on it)."""
    if recipe.workers is None or not roles.has_role(user, [roles.CROWDWORKER]):
        raise Http404
    admin = roles.has_role(user, [roles.ADMIN])
    row = _workable_rows.get((recipe.key, admin))
    if row is None:
        row = _workable_rows[(recipe.key, admin)] = _workable_row(recipe, admin)
    meta = recipe.model._meta
    values = [
        meta.get_field(name).get_db_prep_value(value, connection)
        for name, value in recipe.workers.open_when.items()
    ]
    obj = row.get(pk, *values) if admin else row.get(pk, *values, user.pk)
    if obj is None:
        raise Http404
    return obj


_workable_rows: dict[tuple[str, bool], RowWith] = {}


def _workable_row(recipe: Recipe, admin: bool) -> RowWith:
    """The statement of ``workable_or_404``: the object by primary key with its project and
    ``Workers.select_related``, open (``open_when``) and, but for admins, in a project of the
    person (their membership, as ``projects_for``)."""
    model = recipe.model
    where = [f'o."{model._meta.get_field(name).column}" = %s' for name in recipe.workers.open_when]
    if not admin:
        members = Project._meta.get_field("members").remote_field.through._meta
        project = Project._meta.get_field("members")
        where.append(
            f'o."{model._meta.get_field("project").column}" IN (SELECT {project.m2m_column_name()}'
            f" FROM {members.db_table} WHERE {project.m2m_reverse_name()} = %s)"
        )
    return RowWith(model, ("project", *recipe.workers.select_related), where=where)
