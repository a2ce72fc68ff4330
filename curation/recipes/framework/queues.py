"""The annotation queues a recipe object owns: each declared once as a ``QueueSpec`` and made
on first use, under the object's row lock (two first tasks at once make one queue)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from annotator import services as annotator_services
from annotator.models import Task, TaskQueue
from annotator.platform.errors import Invalid
from annotator.platform.files import media_url
from annotator.platform.jobs import job_progress

from .declare import QueueSpec


def _value(value: Any, obj: Any) -> Any:
    return value(obj) if callable(value) else value


def queue_fields(obj: Any, spec: QueueSpec) -> dict:
    """``queue_create``'s keywords for ``obj``'s queue of ``spec``."""
    fields = {
        "kind": spec.kind,
        "title": str(spec.title(obj))[:200],
        "instructions": _value(spec.instructions, obj),
        "config": dict(_value(spec.config, obj)),
        "redundancy": _value(spec.redundancy, obj),
        "rule": spec.rule,
        "outcome_handler": spec.handler,
    }
    if spec.max_redundancy is not None:
        fields["max_redundancy"] = _value(spec.max_redundancy, obj)
    return fields


def queue_ensure(obj: Any, spec: QueueSpec) -> TaskQueue:
    """``obj``'s queue in ``spec.field``, created on first use; ``obj`` gets it set too."""
    model = type(obj)
    with transaction.atomic():
        locked = model.objects.select_for_update(of=("self",)).select_related(spec.field)
        fresh = locked.get(pk=obj.pk)
        queue = getattr(fresh, spec.field)
        if queue is None:
            fields = queue_fields(fresh, spec)
            queue = annotator_services.queue_create(project=fresh.project, **fields)
            model.objects.filter(pk=obj.pk).update(**{spec.field: queue})
    setattr(obj, spec.field, queue)
    return queue


def _people_follow(obj: Any, spec: QueueSpec, queue: TaskQueue, people: int, **most: int):
    """``queue`` (``obj``'s of ``spec``) with ``people`` per item, updated only when that differs
    (its open tasks not escalated yet follow), and stored back on ``obj``."""
    if people != queue.redundancy:
        queue = annotator_services.queue_update(queue=queue, redundancy=people, **most)
        setattr(obj, spec.field, queue)
    return queue


def queues_follow(obj: Any, specs) -> None:
    """``obj``'s queues made already take the people per item of each spec (its ``redundancy``
    and ``max_redundancy`` for ``obj`` now); their open tasks not escalated yet follow."""
    for spec in specs:
        queue = getattr(obj, spec.field)
        if queue is None:
            continue
        most = {}
        if spec.max_redundancy is not None:
            most["max_redundancy"] = _value(spec.max_redundancy, obj)
        _people_follow(obj, spec, queue, _value(spec.redundancy, obj), **most)


def tasks_create(queue: TaskQueue, rows: list) -> dict[str, int]:
    """Create a task per ``TaskRow`` in ``queue``; the new tasks' ids by external id."""
    annotator_services.tasks_bulk_create(queue=queue, rows=rows)
    tasks = Task.objects.filter(queue=queue, external_id__in=[r.external_id for r in rows])
    return dict(tasks.values_list("external_id", "pk"))


def tasks_link(queue: TaskQueue, rows: list[tuple[Any, dict, str]]) -> None:
    """A task per (object, payload, external id) in ``queue``, its id stored in the object's
    ``task`` field (one update for all; the objects are of one model). Same transaction."""
    if not rows:
        return
    tasks = tasks_create(
        queue, [annotator_services.TaskRow(payload=p, external_id=e) for _o, p, e in rows]
    )
    for obj, _payload, external_id in rows:
        obj.task_id = tasks[external_id]
    objs = [obj for obj, _payload, _external_id in rows]
    type(objs[0]).objects.bulk_update(objs, ["task"])


def task_row(rows: QuerySet, task: Task) -> Any | None:
    """For an outcome handler: the row of ``rows`` whose ``task`` is ``task``, locked for the
    submit's transaction (its own row: rows ``select_related`` joins are read, not locked)."""
    return rows.select_for_update(of=("self",)).filter(task_id=task.pk).first()


def with_tiebreak(n: int) -> int:
    """An even number of people can tie; a tie asks one more person."""
    return n + 1 if n % 2 == 0 else n


def queue_people_set(obj: Any, spec: QueueSpec, people: int, *, most: int, what: str) -> TaskQueue:
    """``people`` per item on ``obj``'s queue of ``spec`` (made on first use), a tie asking one
    more; outside 1 to ``most`` refused as "<what> must be between 1 and <most>."."""
    if not 1 <= people <= most:
        raise Invalid(f"{what} must be between 1 and {most}.")
    queue = queue_ensure(obj, spec)
    return _people_follow(obj, spec, queue, people, max_redundancy=with_tiebreak(people))


def tasks_send(
    *, queue, todo: list, rows_of, still_todo, attach, fields, job_id, what: str, chunk: int = 500
) -> dict:
    """Send ``todo`` objects to ``queue`` a chunk at a time, idempotently: under a row lock only
    the objects ``still_todo`` (a queryset) still selects are sent; ``rows_of(obj)`` gives an
    object's TaskRows, ``attach(obj, tasks)`` stores the new task ids (by external id) on it,
    saved as ``fields``. Progress reads "<n> <what>". Returns the stage's result: how many
    objects were sent, and the queue's id."""
    sent = 0
    for start in range(0, len(todo), chunk):
        batch = todo[start : start + chunk]
        with transaction.atomic():
            fresh = set(
                still_todo.select_for_update()
                .filter(pk__in=[obj.pk for obj in batch])
                .values_list("pk", flat=True)
            )
            changed = [obj for obj in batch if obj.pk in fresh]
            rows = [row for obj in changed for row in rows_of(obj)]
            if not rows:
                continue
            tasks = tasks_create(queue, rows)
            for obj in changed:
                attach(obj, tasks)
            still_todo.model.objects.bulk_update(changed, fields)
            sent += len(changed)
        job_progress(
            job_id=job_id, done=start + len(batch), total=len(todo), message=f"{sent} {what}"
        )
    return {"sent": sent, "queue_id": queue.pk}


def image_payload(image, alt: str, **extra: Any) -> dict:
    """An image (``curation.Image``) as the engine's task payloads show it: its URL, its alt
    text and any ``extra`` keys (a caption)."""
    return {"url": media_url(image.file.name), "alt": alt, **extra}
