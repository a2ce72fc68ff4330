"""The one job dispatcher of every recipe: each stage's and export's job kind is a Celery task
named as the kind, and each runs ``stage_job``: the (recipe, stage) of ``job.kind``, the object
of ``job.params[recipe.job_param]``, then ``stage.run`` through the platform's ``run_job``
(claimed once, heartbeat, progress, errors on the row, retried with backoff).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from celery import shared_task

from annotator.platform.jobs import job_failed_handler
from annotator.platform.models import Job
from annotator.platform.sql_rows import RowWith
from annotator.platform.worker import JOB_OPTIONS, run_job

if TYPE_CHECKING:
    from .declare import Export, Recipe, Stage

_KINDS: dict[str, tuple[Recipe, Stage | Export]] = {}


def kind_register(recipe: Recipe, step: Stage | Export) -> None:
    """Map ``step.job_kind`` to its step and make sure a Celery task of that name runs
    ``stage_job`` (registering a name twice keeps the first task: the same dispatcher)."""
    _KINDS[step.job_kind] = (recipe, step)
    shared_task(**JOB_OPTIONS, name=step.job_kind)(stage_job)
    if getattr(step, "on_failed", None) is not None:
        job_failed_handler(step.job_kind, step.on_failed)


def kind_forget(kind: str) -> None:
    _KINDS.pop(kind, None)
    job_failed_handler(kind, None)


def kind_taken(kind: str) -> bool:
    return kind in _KINDS


def step_of(kind: str) -> tuple[Recipe, Stage | Export]:
    """The recipe and the stage (or export) whose job kind is ``kind``."""
    try:
        return _KINDS[kind]
    except KeyError:
        raise LookupError(f"no recipe declares the job kind {kind!r}") from None


def job_object(recipe: Recipe, pk: int) -> Any:
    """The recipe's object a job works on, with what its stages read: one hand-written
    statement (``RowWith``) when ``Recipe.select_related`` names only forward foreign keys."""
    row = _object_row(recipe.model, tuple(recipe.select_related))
    if row is None:
        return recipe.model.objects.select_related(*recipe.select_related).get(pk=pk)
    obj = row.get(pk)
    if obj is None:
        raise recipe.model.DoesNotExist(f"{recipe.model.__name__} {pk} does not exist.")
    return obj


@functools.cache
def _object_row(model, related: tuple[str, ...]) -> RowWith | None:
    if any("__" in name for name in related):
        return None  # deeper than one level: the ORM's select_related
    return RowWith(model, related)


def job_work(job: Job) -> dict:
    """The body ``run_job`` runs: ``run(obj, *, job_id, created_by, **params)``."""
    recipe, step = step_of(job.kind)
    params = dict(job.params or {})
    obj = None
    if getattr(step, "needs_object", True):
        obj = job_object(recipe, params.pop(recipe.job_param))
    return step.run(obj, job_id=job.pk, created_by=job.created_by, **params)


def stage_job(self, job_id: int) -> None:
    """Any recipe stage or export job (bound Celery task; ``self`` is the task)."""
    run_job(self, job_id, job_work)
