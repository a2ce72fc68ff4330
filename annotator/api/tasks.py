"""A queue's tasks: bulk upload (JSON, JSONL, NDJSON, plain text) and cancelling."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, status
from rest_framework.parsers import BaseParser
from rest_framework.response import Response

from .. import selectors, services
from ..platform.api import ERRORS, STAFF
from ..platform.edge import JSONParser
from ..platform.errors import Invalid
from ..platform.roles import CURATOR
from ..serializers import (
    BulkCreatedOut,
    TaskOut,
    TaskRowIn,
    TasksCancelIn,
    TasksCancelOut,
    check_storable_json,
)
from .base import EngineApiView


class _TextParser(BaseParser):
    """Hands the raw body to the view, which parses it as JSON Lines with line numbers."""

    def parse(self, stream, media_type=None, parser_context=None):
        return stream.read() if stream is not None else b""


class NdjsonParser(_TextParser):
    media_type = "application/x-ndjson"


class JsonlParser(_TextParser):
    media_type = "application/jsonl"


class PlainTextParser(_TextParser):
    media_type = "text/plain"


def _task_rows(data: Any) -> list[services.TaskRow]:
    """Rows from a JSONL body (errors carry ``line``) or a JSON list (errors carry ``index``)."""
    if isinstance(data, bytes | str):
        rows = services.parse_task_rows(data)
        where = "line"
    elif isinstance(data, list):
        try:
            rows = services.parse_task_rows(data)
        except Invalid as exc:
            exc.errors = [{"index": e["line"] - 1, "error": e["error"]} for e in exc.errors]
            raise
        where = "index"
    else:
        raise Invalid(
            "Send a JSON list of tasks, or JSON Lines with Content-Type application/x-ndjson."
        )
    errors = []
    for row in rows:
        try:
            check_storable_json(row.payload, "payload")
            check_storable_json(row.gold, "gold")
            check_storable_json(row.external_id, "id")
        except exceptions.ValidationError as exc:
            number = row.line if where == "line" else row.line - 1
            errors.append({where: number, "error": str(exc.detail[0])})
    if errors:
        raise Invalid(f"{len(errors)} task(s) could not be stored.", errors)
    return rows


class QueueTasksApi(EngineApiView):
    """GET (curators, researchers): the queue's tasks with gold and outcome, paginated.

    POST (curators): bulk-create tasks, all or nothing. The body is a JSON list whose items are
    payload objects or ``{"payload": {...}, "gold": {...}, "id": "external id"}`` (errors name
    the 0-based ``index``), or JSON Lines of the same with Content-Type
    ``application/x-ndjson``, ``application/jsonl`` or ``text/plain`` (errors name the 1-based
    ``line``).
    """

    roles = STAFF
    roles_by_method = {"POST": (CURATOR,)}
    serializer_class = TaskOut
    parser_classes = [JSONParser, NdjsonParser, JsonlParser, PlainTextParser]

    @extend_schema(responses={200: TaskOut(many=True), **ERRORS})
    def get(self, request, queue_id: int):
        queue = self.queue(queue_id)
        tasks = selectors.tasks_for(request.user).filter(queue=queue).order_by("id")
        page = self.paginate_queryset(tasks)
        return self.get_paginated_response(TaskOut(page, many=True).data)

    @extend_schema(
        request={
            "application/json": TaskRowIn(many=True),
            "application/x-ndjson": OpenApiTypes.STR,
            "text/plain": OpenApiTypes.STR,
        },
        responses={201: BulkCreatedOut, **ERRORS},
    )
    def post(self, request, queue_id: int):
        queue = self.queue(queue_id, manage=True)
        rows = _task_rows(request.data)
        created = services.tasks_bulk_create(queue=queue, rows=rows)
        return Response({"created": created}, status=status.HTTP_201_CREATED)


class QueueTasksCancelApi(EngineApiView):
    """Cancel open tasks of a queue: they are never offered again and their leases end.

    The body is ``{"ids": [task ids], "reason": "optional text"}``. All or nothing: an id that
    is not a task of this queue answers 400 and nothing changes. Tasks already finished
    (decided, undecided or cancelled) are skipped and counted. Whoever holds a lease on a
    cancelled task gets 409 on submit: the curator withdrew it.
    """

    roles = (CURATOR,)
    serializer_class = TasksCancelOut

    @extend_schema(request=TasksCancelIn, responses={200: TasksCancelOut, **ERRORS})
    def post(self, request, queue_id: int):
        queue = self.queue(queue_id, manage=True)
        data = self.valid(TasksCancelIn).validated_data
        result = services.tasks_cancel(queue=queue, task_ids=data["ids"], reason=data["reason"])
        return Response(
            {
                "cancelled": result.cancelled,
                "skipped": result.skipped,
                "leases_ended": result.leases_ended,
                "message": result.message,
            }
        )
