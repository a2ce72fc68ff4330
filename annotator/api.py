"""JSON API (DRF): one view per operation; the view validates, calls a service, returns.

Every view declares the roles it serves (``roles``; a URL that offers a second operation on
another HTTP method names that operation's roles in ``roles_by_method``). Anonymous callers get
401; a signed-in user without the role, or asking for an object outside their reach, gets 404
exactly like a missing object. Every error body is JSON with a ``message`` (and, for invalid
input, ``errors``), see :func:`exception_handler`.

Nothing a crowdworker receives holds a gold answer, whether an item is a gold check, or anyone
else's response.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response

from . import selectors, services
from .kinds import get_kind
from .models import Annotation, TaskQueue
from .platform.api import ERRORS, STAFF, ApiView, ErrorOut
from .platform.edge import JSONParser
from .platform.errors import Invalid
from .platform.roles import ALL_ROLES, CROWDWORKER, CURATOR, RESEARCHER
from .platform.scoping import curated_project_or_404, get_or_404, projects_for
from .serializers import (
    AnnotationRowOut,
    BulkCreatedOut,
    ClaimOut,
    HeartbeatOut,
    MemberOut,
    MemberRemovedOut,
    OutcomeRowOut,
    QueueCreateIn,
    QueueFieldsIn,
    QueueOut,
    QueueStatusIn,
    QueueWorkerOut,
    ReleasedOut,
    ReportIn,
    SubmitIn,
    SubmitOut,
    TaskOut,
    TaskRowIn,
    TasksCancelIn,
    TasksCancelOut,
    check_storable_json,
)


class EngineApiView(ApiView):
    """The platform's API view with the annotation engine's scoped queue lookups."""

    def get_queryset(self):
        # Only the browsable API asks for this (to render its forms); the operations call the
        # selectors themselves.
        return selectors.queues_for(self.request.user).none()

    def queue(self, queue_id: int, *, manage: bool = False) -> TaskQueue:
        user = self.request.user
        qs = selectors.managed_queues_for(user) if manage else selectors.queues_for(user)
        return get_or_404(qs, pk=queue_id)


CONFLICT = {
    409: OpenApiResponse(
        ErrorOut, description="Lease lost, task skipped, reported or already answered"
    )
}


# --------------------------------------------------------------------------------------------
# Queues
# --------------------------------------------------------------------------------------------
class QueueListCreateApi(EngineApiView):
    """GET: the queues you can see. POST (curators): create a queue in one of your projects."""

    roles = (CROWDWORKER, CURATOR, RESEARCHER)
    roles_by_method = {"POST": (CURATOR,)}
    serializer_class = QueueOut

    def get_queryset(self):
        return selectors.queues_for(self.request.user).order_by("-priority", "id")

    def _out(self, queues: list[TaskQueue], many: bool):
        if not self.is_staff():
            return QueueWorkerOut(queues, many=many).data
        progress = selectors.queue_progress([q.pk for q in (queues if many else [queues])])
        return QueueOut(queues, many=many, context={"progress": progress}).data

    @extend_schema(
        responses={200: QueueOut(many=True), **ERRORS},
        description="Crowdworkers get id, project, kind, title, instructions, config, status.",
    )
    def get(self, request):
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(self._out(page, many=True))

    @extend_schema(request=QueueCreateIn, responses={201: QueueOut, **ERRORS})
    def post(self, request):
        data = self.valid(QueueCreateIn)
        fields = data.to_service_fields()
        project = projects_for(request.user).filter(pk=fields.pop("project")).first()
        if project is None:
            raise exceptions.ValidationError({"project": ["No such project."]})
        queue = services.queue_create(
            project=project, kind=fields.pop("kind"), title=fields.pop("title"), **fields
        )
        return Response(self._out(queue, many=False), status=status.HTTP_201_CREATED)


class QueueDetailApi(EngineApiView):
    """GET: one queue. PATCH (curators): change its settings (only the fields sent)."""

    roles = (CROWDWORKER, CURATOR, RESEARCHER)
    roles_by_method = {"PATCH": (CURATOR,)}
    serializer_class = QueueOut

    def _out(self, queue: TaskQueue):
        if not self.is_staff():
            return QueueWorkerOut(queue).data
        return QueueOut(queue, context={"progress": selectors.queue_progress([queue.pk])}).data

    @extend_schema(responses={200: QueueOut, **ERRORS})
    def get(self, request, queue_id: int):
        return Response(self._out(self.queue(queue_id)))

    @extend_schema(request=QueueFieldsIn, responses={200: QueueOut, **ERRORS})
    def patch(self, request, queue_id: int):
        queue = self.queue(queue_id, manage=True)
        fields = self.valid(QueueFieldsIn).to_service_fields()
        queue = services.queue_update(queue=queue, by=request.user, **fields)
        return Response(self._out(queue))


class QueueStatusApi(EngineApiView):
    """Pause, resume (``open``) or close a queue."""

    roles = (CURATOR,)
    serializer_class = QueueOut

    @extend_schema(request=QueueStatusIn, responses={200: QueueOut, **ERRORS})
    def post(self, request, queue_id: int):
        queue = self.queue(queue_id, manage=True)
        new_status = self.valid(QueueStatusIn).validated_data["status"]
        queue = services.queue_set_status(queue=queue, status=new_status)
        progress = selectors.queue_progress([queue.pk])
        return Response(QueueOut(queue, context={"progress": progress}).data)


# --------------------------------------------------------------------------------------------
# People of a project
# --------------------------------------------------------------------------------------------
def _member_data(person) -> dict:
    return {
        "id": person.pk,
        "username": person.username,
        "roles": [r for r in ALL_ROLES if r in person.roles],
        "is_active": person.is_active,
        "live_leases": person.live_leases,
    }


class ProjectMembersApi(EngineApiView):
    """The members of a project you curate, with their roles and the tasks they hold now."""

    roles = (CURATOR,)
    serializer_class = MemberOut

    @extend_schema(responses={200: MemberOut(many=True), **ERRORS})
    def get(self, request, project_id: int):
        project = curated_project_or_404(request.user, project_id)
        return Response([_member_data(p) for p in selectors.project_people(project)])


class ProjectMemberApi(EngineApiView):
    """DELETE: remove a person from a project you curate. Their live leases there end at once
    (the tasks go back to the pool) and their submit, skip, report and heartbeat on those
    tasks answer 404."""

    roles = (CURATOR,)
    serializer_class = MemberRemovedOut

    @extend_schema(request=None, responses={200: MemberRemovedOut, **ERRORS})
    def delete(self, request, project_id: int, user_id: int):
        project = curated_project_or_404(request.user, project_id)
        person = get_or_404(project.members.all(), pk=user_id)
        ended = services.project_member_remove(project=project, user=person, by=request.user)
        return Response({"project": project.pk, "user": person.pk, "leases_ended": ended})


# --------------------------------------------------------------------------------------------
# Tasks
# --------------------------------------------------------------------------------------------
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


# --------------------------------------------------------------------------------------------
# Annotating
# --------------------------------------------------------------------------------------------
_DATETIME = serializers.DateTimeField()


def _claim_data(result: services.ClaimResult) -> dict:
    """The shape shared by ``next`` and the ``next`` of a submit (``ClaimOut``): what the
    workspace page shows (no gold, no is_gold, no provenance, forced_choice candidates by side
    only). Built by hand: this is every annotator's hot path, and ``ClaimOut(...).data`` costs
    more CPU than the claim's database work; ``test_claim_body_matches_its_serializer`` pins
    the two to the same output."""
    assignment = result.assignment
    task = None
    if assignment is not None:
        queue = assignment.queue
        kind = get_kind(queue.kind)
        payload = assignment.task.payload
        task = {
            "id": assignment.task_id,
            "queue": queue.pk,
            "kind": queue.kind,
            # What the workspace page shows, nothing more (the same function renders it).
            "payload": kind.public_payload(payload, assignment.presentation),
            "keys": [
                {"key": str(k.key), "label": str(k.label)} for k in kind.keys(queue.config, payload)
            ],
            "expires_at": _DATETIME.to_representation(assignment.expires_at),
        }
    retry_after = result.retry_after
    return {
        "task": task,
        "message": str(result.message),
        "retry_after": None if retry_after is None else int(retry_after),
    }


class NextApi(EngineApiView):
    """Claim your next task in a queue (or get back the one you hold).

    When there is none, the answer is still 200, with ``task: null``, a ``message`` saying why,
    and ``retry_after`` seconds when tasks held by others may come back to the pool.
    """

    roles = (CROWDWORKER,)
    serializer_class = ClaimOut

    @extend_schema(request=None, responses={200: ClaimOut, **ERRORS})
    def post(self, request, queue_id: int):
        queue = selectors.work_queue_or_404(request.user, queue_id)
        return Response(_claim_data(services.assignment_claim(queue=queue, annotator=request.user)))


class SubmitApi(EngineApiView):
    """Answer a task you hold; the answer carries your next task.

    Idempotent: repeating a submit with the same answer stores nothing (``created: false``,
    status 200) and returns the same next task. A different answer to a task you already
    answered is 409 ("already answered"); the first answer is kept.
    """

    roles = (CROWDWORKER,)
    serializer_class = SubmitOut

    @extend_schema(
        request=SubmitIn,
        responses={201: SubmitOut, 200: SubmitOut, **ERRORS, **CONFLICT},
    )
    def post(self, request, task_id: int):
        data = self.valid(SubmitIn).validated_data
        result = services.annotation_submit(
            task_id=task_id,
            annotator=request.user,
            response=data["response"],
            duration_ms=data.get("duration_ms", 0),
        )
        body = {
            "annotation_id": result.annotation.pk,
            "created": result.created,
            "next": _claim_data(result.next),
        }
        return Response(body, status=status.HTTP_201_CREATED if result.created else 200)


class SkipApi(EngineApiView):
    """Give a task back; it is never offered to you again."""

    roles = (CROWDWORKER,)
    serializer_class = ReleasedOut

    @extend_schema(request=None, responses={200: ReleasedOut, **ERRORS, **CONFLICT})
    def post(self, request, task_id: int):
        assignment = services.assignment_skip(task_id=task_id, annotator=request.user)
        return Response({"task_id": assignment.task_id, "state": assignment.state})


class ReportApi(EngineApiView):
    """Report a problem with a task: the reason is recorded and the task released.

    ``reason`` is one of the queue's report reason codes (``report_reasons`` of the queue);
    free text goes in ``details``, and only with the reason ``other``. Anything else is 400
    naming the field.
    """

    roles = (CROWDWORKER,)
    serializer_class = ReleasedOut

    @extend_schema(request=ReportIn, responses={200: ReleasedOut, **ERRORS, **CONFLICT})
    def post(self, request, task_id: int):
        data = self.valid(ReportIn).validated_data
        assignment = services.assignment_report(
            task_id=task_id, annotator=request.user, reason=data["reason"], details=data["details"]
        )
        return Response({"task_id": assignment.task_id, "state": assignment.state})


class HeartbeatApi(EngineApiView):
    """Extend the lease on a task you hold by the queue's lease time."""

    roles = (CROWDWORKER,)
    serializer_class = HeartbeatOut

    @extend_schema(request=None, responses={200: HeartbeatOut, **ERRORS, **CONFLICT})
    def post(self, request, task_id: int):
        assignment = services.assignment_heartbeat(task_id=task_id, annotator=request.user)
        expires_at = _DATETIME.to_representation(assignment.expires_at)
        return Response({"task_id": task_id, "expires_at": expires_at})


# --------------------------------------------------------------------------------------------
# Exports
# --------------------------------------------------------------------------------------------
class JSONLinesRenderer(BaseRenderer):
    """Selects JSON Lines; the export views stream the body themselves."""

    media_type = "application/x-ndjson"
    format = "jsonl"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return json.dumps(data, ensure_ascii=False).encode()


class CSVRenderer(JSONLinesRenderer):
    media_type = "text/csv"
    format = "csv"


EXPORT_FORMATS = ("json", "jsonl", "csv")


def _iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _canonical(value: Any) -> Any:
    """Sorted object keys, so exports read the same on PostgreSQL (jsonb reorders) and SQLite."""
    if isinstance(value, dict):
        return {key: _canonical(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_canonical(item) for item in value]
    return value


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


class _Echo:
    def write(self, value: str) -> str:
        return value


class ExportApi(EngineApiView):
    """Base for per-queue exports in JSON (paginated), JSON Lines or CSV (streamed).

    Choose the format with ``?format=json|jsonl|csv`` (DRF's format override, also reachable
    through the Accept header) or, equivalently, ``?as=json|jsonl|csv``.
    """

    roles = STAFF
    renderer_classes = [JSONRenderer, JSONLinesRenderer, CSVRenderer]
    columns: tuple[str, ...] = ()
    name = ""

    def rows(self, queue: TaskQueue, qs) -> Iterable[dict]:
        raise NotImplementedError

    def queryset(self, queue: TaskQueue):
        raise NotImplementedError

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        if isinstance(response, Response) and response.status_code >= 400:
            # Errors are JSON whatever format the export was asked in.
            response.accepted_renderer = JSONRenderer()
            response.accepted_media_type = JSONRenderer.media_type
        return response

    def export_format(self) -> str:
        wanted = self.request.query_params.get("as")
        if wanted is None:
            return self.request.accepted_renderer.format
        if wanted not in EXPORT_FORMATS:
            raise exceptions.ValidationError(
                {"as": [f"Unknown format {wanted[:20]!r}; use json, jsonl or csv."]}
            )
        return wanted

    def get(self, request, queue_id: int):
        fmt = self.export_format()
        queue = self.queue(queue_id)
        qs = self.queryset(queue)
        if fmt == "json":
            page = self.paginate_queryset(qs)
            return self.get_paginated_response(list(self.rows(queue, page)))
        rows = self.rows(queue, qs.iterator(chunk_size=2000))
        if fmt == "jsonl":
            body: Iterable[str] = (json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
            content_type = "application/x-ndjson; charset=utf-8"
        else:
            writer = csv.writer(_Echo())
            header = (writer.writerow(self.columns),)
            lines = (writer.writerow([_cell(row[c]) for c in self.columns]) for row in rows)
            body = (line for part in (header, lines) for line in part)
            content_type = "text/csv; charset=utf-8"
        response = StreamingHttpResponse(body, content_type=content_type)
        filename = f"queue-{queue.pk}-{self.name}.{fmt}"
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response


EXPORT_PARAMS = [
    OpenApiParameter(
        "as",
        str,
        enum=list(EXPORT_FORMATS),
        description="json (default, paginated), jsonl or csv (streamed files). "
        "``?format=`` does the same.",
    ),
]


def export_responses(row_serializer) -> dict:
    errors = {
        (code, "application/json"): response
        for code, response in {**ERRORS, 406: ERRORS[400]}.items()
    }
    return {
        (200, "application/json"): row_serializer(many=True),
        (200, "application/x-ndjson"): OpenApiResponse(
            OpenApiTypes.STR, description="One JSON object per line (streamed)."
        ),
        (200, "text/csv"): OpenApiResponse(
            OpenApiTypes.STR, description="CSV with a header row; JSON values as JSON text."
        ),
        **errors,
    }


class OutcomesExportApi(ExportApi):
    """Per task: state, outcome, agreement, escalations, external id, payload (and gold)."""

    serializer_class = OutcomeRowOut
    name = "outcomes"
    columns = tuple(OutcomeRowOut().fields)

    def queryset(self, queue):
        return (
            selectors.tasks_for(self.request.user)
            .filter(queue=queue)
            .order_by("id")
            .values_list(
                "id",
                "external_id",
                "state",
                "is_gold",
                "outcome",
                "agreement",
                "escalations",
                "required",
                "done_count",
                "decided_at",
                "payload",
                "gold",
            )
        )

    def rows(self, queue, qs):
        for row in qs:
            data = dict(zip(self.columns, row, strict=True))
            data["decided_at"] = _iso(data["decided_at"])
            for key in ("outcome", "payload", "gold"):
                data[key] = _canonical(data[key])
            yield data

    @extend_schema(parameters=EXPORT_PARAMS, responses=export_responses(OutcomeRowOut))
    def get(self, request, queue_id: int):
        return super().get(request, queue_id)


class AnnotationsExportApi(ExportApi):
    """Every annotation: task id, annotator user name, response, duration, time, gold flags."""

    serializer_class = AnnotationRowOut
    name = "annotations"
    columns = tuple(AnnotationRowOut().fields)

    def queryset(self, queue):
        # ``queue`` comes from the scoped selector, so its annotations are within reach.
        return (
            Annotation.objects.filter(queue=queue)
            .order_by("id")
            .values_list(
                "id",
                "task_id",
                "task__external_id",
                "annotator__username",
                "response",
                "duration_ms",
                "created_at",
                "is_gold",
                "gold_correct",
            )
        )

    def rows(self, queue, qs):
        for row in qs:
            data = dict(zip(self.columns, row, strict=True))
            data["created_at"] = _iso(data["created_at"])
            data["response"] = _canonical(data["response"])
            yield data

    @extend_schema(parameters=EXPORT_PARAMS, responses=export_responses(AnnotationRowOut))
    def get(self, request, queue_id: int):
        return super().get(request, queue_id)
