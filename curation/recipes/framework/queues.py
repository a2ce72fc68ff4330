"""The annotation queues a recipe object owns: each declared once as a ``QueueSpec`` and made
on first use, under the object's row lock (two first tasks at once make one queue)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from annotator import services as annotator_services
from annotator.models import TaskQueue

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
