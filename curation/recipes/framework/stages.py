"""Starting a recipe's stage: what blocks it, one job at a time where the stage asks for it, the
stage's own check, then the job (enqueued after commit; its card shows the progress the stage
reports through ``annotator.platform.jobs.job_progress``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from django.db import transaction

from annotator.platform.errors import Invalid
from annotator.platform.jobs import job_enqueue, job_progress, job_task, jobs_inline
from annotator.platform.models import Job

from .declare import Recipe, Stage
from .registry import stage_of_run

ACTIVE = (Job.Status.QUEUED, Job.Status.RUNNING)


def stage_or_invalid(recipe: Recipe, name: str) -> Stage:
    stage = recipe.stage(name)
    if stage is None:
        names = ", ".join(s.name for s in recipe.stages)
        raise Invalid(f"Unknown stage {name!r}; stages: {names}.")
    return stage


def stage_blocker(recipe: Recipe, name: str, obj: Any, counts: dict | None = None) -> str:
    """Why stage ``name`` cannot start now ("" when it can): what to do first, in words."""
    stage = stage_or_invalid(recipe, name)
    return stage.blocked_by(obj, recipe.funnel(obj) if counts is None else counts)


def _checked(recipe: Recipe, stage: Stage, obj: Any, params: dict | None) -> tuple[dict, int]:
    blocker = stage.blocked_by(obj, recipe.funnel(obj))
    if blocker:
        raise Invalid(blocker)
    params = dict(params or {})
    total = stage.check(obj, params) if stage.check is not None else 0
    return {recipe.job_param: obj.pk, **params}, int(total or 0)


def stage_start(
    recipe: Recipe, name: str, obj: Any, *, created_by=None, params: dict | None = None
) -> Job:
    """Enqueue stage ``name``'s job for ``obj`` (after commit); refuses (``Invalid``) with what
    to do first, or when the stage runs one job at a time and one is queued or running."""
    stage = stage_or_invalid(recipe, name)
    job_params, total = _checked(recipe, stage, obj, params)
    with transaction.atomic():
        if stage.one_at_a_time:
            type(obj).objects.select_for_update().get(pk=obj.pk)
            running = Job.objects.filter(
                kind=stage.job_kind,
                status__in=ACTIVE,
                **{f"params__{recipe.job_param}": obj.pk},
            ).first()
            if running is not None:
                raise Invalid(f"This stage already has a job (#{running.pk}) queued or running.")
        return job_enqueue(
            kind=stage.job_kind,
            params=job_params,
            created_by=created_by,
            project=obj.project,
            total=total,
        )


def stage_once(run: Callable, obj: Any, **params: Any) -> Job | None:
    """Enqueue the job of the stage that ``run`` runs, for ``obj`` (after commit, started by no
    one), unless one is queued already: that one picks up whatever waits when it runs (an
    outcome handler's follow-up work)."""
    recipe, stage = stage_of_run(run)
    waiting = Job.objects.filter(
        kind=stage.job_kind, status=Job.Status.QUEUED, **{f"params__{recipe.job_param}": obj.pk}
    )
    if waiting.exists():
        return None
    params = {recipe.job_param: obj.pk, **params}
    return job_enqueue(kind=stage.job_kind, params=params, project=obj.project)


def stage_run_now(run: Callable, obj: Any, *, created_by=None, params: dict | None = None) -> Job:
    """The real job of the stage that ``run`` runs, in this process (commands and demos need no
    broker). The Job row records it like any other; its error, if any, is on the row."""
    recipe, stage = stage_of_run(run)
    job_params, total = _checked(recipe, stage, obj, params)
    job = Job.objects.create(
        kind=stage.job_kind,
        params=job_params,
        project=obj.project,
        created_by=created_by,
        total=total,
        message="Running in this process",
    )
    with jobs_inline():  # its chunk jobs too, if it fans out (annotator.platform.chunks)
        job_task(stage.job_kind).apply(args=[job.pk])
    job.refresh_from_db()
    return job


def in_rounds(
    todo: Callable[[int], list],
    *,
    rounds: int,
    job_id,
    message: str,
    progress: Callable[[], str],
) -> Iterator[Any]:
    """A drafting job's loop: each object ``todo(r)`` lists in round r, for at most ``rounds``
    rounds (a later round picks up what became due while the job ran, as drafts people rejected
    meanwhile; an empty list ends it). The job's progress: ``message`` with done and total as a
    round starts, then ``progress()`` after each object (no report when it returns "")."""
    done = 0
    for round_ in range(rounds):
        objs = todo(round_)
        if not objs:
            return
        job_progress(job_id=job_id, done=done, total=done + len(objs), message=message)
        for obj in objs:
            yield obj
            done += 1
            text = progress()
            if text:
                job_progress(job_id=job_id, done=done, message=text)
