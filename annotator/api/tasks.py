"""A queue's tasks: bulk upload (JSON, JSONL, NDJSON, plain text) and cancelling."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, status
from rest_framework.parsers import BaseParser
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param

from .. import forms, selectors, services
from ..platform.api import ERRORS, STAFF
from ..platform.edge import JSONParser
from ..platform.errors import Invalid
from ..platform.roles import CURATOR
from ..platform.scoping import get_or_404
from ..serializers import (
    BulkCreatedOut,
    QueueSettleIn,
    SettleIn,
    SettleOut,
    TaskOut,
    TaskPageOut,
    TaskRowIn,
    TasksCancelIn,
    TasksCancelOut,
    check_storable_json,
)
from .base import EngineApiView

API_PAGE_SIZE = 100


def _choices(field: str) -> list[str]:
    return [value for value, _label in forms.TaskFilterForm.base_fields[field].choices if value]


TASK_FILTER_PARAMS = [
    OpenApiParameter(
        "q", str, description="Text in the payload (case-insensitive) or an external id"
    ),
    OpenApiParameter("state", str, enum=_choices("state")),
    OpenApiParameter("flag", str, enum=_choices("flag")),
    OpenApiParameter("annotator", str, description="User name: tasks this person answered"),
    OpenApiParameter("gold", str, enum=_choices("gold")),
    OpenApiParameter("sort", str, enum=_choices("sort"), description="Default: id"),
    OpenApiParameter("page", int, description="1, 2, …"),
]


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


def _task_rows(queue, data: Any) -> list[services.TaskRow]:
    """Rows from a JSONL body (errors carry ``line``) or a JSON list (errors carry ``index``),
    unreadable rows and schema errors reported in one answer (``services.task_rows_check``)."""
    if isinstance(data, bytes | str):
        rows = services.task_rows_check(queue=queue, data=data)
        where = "line"
    elif isinstance(data, list):
        try:
            rows = services.task_rows_check(queue=queue, data=data)
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

    @extend_schema(
        parameters=TASK_FILTER_PARAMS,
        responses={200: TaskPageOut, **ERRORS},
        description="The task browser's filters, search and sorts (as on "
        "/curate/queues/{id}/tasks/), 100 tasks a page. ``count`` stops at 1,001 "
        "(``count_capped``): follow ``next`` to read everything.",
    )
    def get(self, request, queue_id: int):
        queue = self.queue(queue_id)
        form = forms.TaskFilterForm(request.query_params)
        if not form.is_valid():
            raise exceptions.ValidationError({k: list(v) for k, v in form.errors.items()})
        number = form.cleaned_data.get("page") or 1
        page = selectors.task_page(queue, form.task_filter(), number=number, per_page=API_PAGE_SIZE)
        url = request.build_absolute_uri()
        return Response(
            {
                "count": page.count,
                "count_capped": page.count_capped,
                "next": replace_query_param(url, "page", number + 1) if page.has_next else None,
                "previous": replace_query_param(url, "page", number - 1) if number > 1 else None,
                "results": TaskOut(page.tasks, many=True).data,
            }
        )

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
        rows = _task_rows(queue, request.data)
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


def _settle_out(selection: services.SelectionSettle) -> dict:
    result = selection.result
    return {
        "selected": selection.selected,
        "settled": result.settled if result else None,
        "no_majority": result.no_majority if result else None,
        "refused": result.refused if result else None,
        "skipped": result.skipped if result else None,
        "job": selection.job.pk if selection.job else None,
        "message": selection.message,
    }


class TaskSettleApi(EngineApiView):
    """Settle one task: set its final outcome by majority or by your answer, with a reason.

    The task is decided as a submit would decide it (its queue's outcome handler runs, so the
    recipe moves on; webhooks get ``task.settled``), and who settled it, when and why is kept
    on the task and in ``outcome.settled``. Gold and cancelled tasks cannot be settled; a tie
    cannot be settled by majority (400 says so).
    """

    roles = (CURATOR,)
    serializer_class = TaskOut

    @extend_schema(request=SettleIn, responses={200: TaskOut, **ERRORS})
    def post(self, request, task_id: int):
        user = request.user
        task = get_or_404(
            selectors.tasks_for(user)
            .filter(queue__in=selectors.managed_queues_for(user))
            .select_related("queue"),
            pk=task_id,
        )
        data = self.valid(SettleIn).validated_data
        task = services.task_curator_settle(
            task_id=task.pk,
            queue=task.queue,
            by=user,
            method=data["method"],
            response=data["response"],
            reason=data["reason"],
        )
        return Response(TaskOut(task).data)


class QueueTasksSettleApi(EngineApiView):
    """Settle every task of the queue that ``filter`` selects (the task browser's filters).

    Up to 200 tasks are settled at once (the counts come back); more are settled by a job
    (``job``: follow it at /api/jobs/{id}/). Tasks that cannot be settled (a tie for majority,
    an answer that does not fit, gold or cancelled) are counted and left as they were.
    """

    roles = (CURATOR,)
    serializer_class = SettleOut

    @extend_schema(request=QueueSettleIn, responses={200: SettleOut, **ERRORS})
    def post(self, request, queue_id: int):
        queue = self.queue(queue_id, manage=True)
        data = self.valid(QueueSettleIn).validated_data
        form = forms.TaskFilterForm({k: v for k, v in data["filter"].items() if k != "page"})
        if not form.is_valid():
            raise exceptions.ValidationError(
                {f"filter.{k}": list(v) for k, v in form.errors.items()}
            )
        selection = services.tasks_curator_settle_selection(
            queue=queue,
            task_filter=form.task_filter(),
            by=request.user,
            method=data["method"],
            response=data["response"],
            reason=data["reason"],
        )
        return Response(_settle_out(selection))
