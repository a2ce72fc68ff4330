"""A queue's outcomes and annotations as JSON, JSON Lines or CSV, streamed."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response

from .. import selectors
from ..models import Annotation, TaskQueue
from ..platform.api import ERRORS, STAFF
from ..serializers import (
    AnnotationRowOut,
    OutcomeRowOut,
)
from .base import EngineApiView


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

    time_columns: tuple[str, ...] = ()  # written as ISO 8601
    json_columns: tuple[str, ...] = ()  # written canonically (sorted keys)

    def rows(self, queue: TaskQueue, qs) -> Iterable[dict]:
        for row in qs:
            data = dict(zip(self.columns, row, strict=True))
            for key in self.time_columns:
                data[key] = _iso(data[key])
            for key in self.json_columns:
                data[key] = _canonical(data[key])
            yield data

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


@extend_schema(parameters=EXPORT_PARAMS, responses=export_responses(OutcomeRowOut))
class OutcomesExportApi(ExportApi):
    """Per task: state, outcome, agreement, escalations, external id, payload (and gold), and
    who settled it, when and why (a curator's settlement; else empty)."""

    serializer_class = OutcomeRowOut
    name = "outcomes"
    columns = tuple(OutcomeRowOut().fields)
    time_columns = ("decided_at", "settled_at")
    json_columns = ("outcome", "payload", "gold")

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
                "settled_by__username",
                "settled_at",
                "settle_reason",
            )
        )


@extend_schema(parameters=EXPORT_PARAMS, responses=export_responses(AnnotationRowOut))
class AnnotationsExportApi(ExportApi):
    """Every annotation: task id, annotator user name, response, duration, time, gold flags."""

    serializer_class = AnnotationRowOut
    name = "annotations"
    columns = tuple(AnnotationRowOut().fields)
    time_columns = ("created_at",)
    json_columns = ("response",)

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
