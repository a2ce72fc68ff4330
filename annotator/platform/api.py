"""The JSON API's base (DRF): one view per operation, token or session auth, the role check,
strict format negotiation, the one error shape every endpoint answers with, and the jobs
endpoints.

Every view declares the roles it serves (``roles``; a URL that offers a second operation on
another HTTP method names that operation's roles in ``roles_by_method``). Anonymous callers get
401; a signed-in user without the role, or asking for an object outside their reach, gets 404
exactly like a missing object. Every error body is JSON with a ``message`` (and, for invalid
input, ``errors``), see :func:`exception_handler`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.generics import GenericAPIView
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from .errors import MAX_ERRORS, SchemaError, ServiceError, clip
from .models import Job, Project
from .roles import CURATOR, RESEARCHER, RolePermission, has_role
from .scoping import get_or_404, jobs_for, projects_for

STAFF = (CURATOR, RESEARCHER)


class JobOut(serializers.ModelSerializer):
    # A plain string: a second "status" enum would collide with the queue's in the schema.
    status = serializers.CharField(help_text="queued, running, succeeded or failed.")
    percent = serializers.SerializerMethodField()
    waiting_to_send = serializers.BooleanField(
        read_only=True,
        help_text="Queued, but the task queue (Redis) did not take it yet; it is sent by itself "
        "as soon as the queue answers.",
    )

    class Meta:
        model = Job
        fields = [
            "id",
            "kind",
            "params",
            "status",
            "done",
            "total",
            "percent",
            "message",
            "error",
            "result",
            "attempts",
            "waiting_to_send",
            "send_error",
            "sent_at",
            "project",
            "created_at",
            "started_at",
            "finished_at",
        ]

    def get_percent(self, job: Job) -> int:
        return job.percent


class ProjectOut(serializers.ModelSerializer):
    class Meta:
        model = Project
        fields = ["id", "name", "slug", "description", "created_at"]


class ErrorOut(serializers.Serializer):
    message = serializers.CharField()
    errors = serializers.ListField(child=serializers.DictField(), required=False)


# --------------------------------------------------------------------------------------------
# Errors: every body is {"message": "...", "errors": [...]?}
# --------------------------------------------------------------------------------------------
def _flatten(detail: Any, prefix: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = "" if key == "non_field_errors" else str(key)
            yield from _flatten(value, f"{prefix}.{name}" if prefix and name else prefix or name)
    elif isinstance(detail, list):
        if all(isinstance(item, str) for item in detail):
            for item in detail:
                yield prefix, str(item)
        else:
            for i, item in enumerate(detail):
                yield from _flatten(item, f"{prefix}.{i}" if prefix else str(i))
    else:
        yield prefix, str(detail)


def _validation_body(detail: Any) -> dict:
    errors = [
        {"field": clip(field, 200), "error": clip(error)} for field, error in _flatten(detail)
    ]
    parts = [f"{e['field']}: {e['error']}" if e["field"] else e["error"] for e in errors]
    message = "Invalid input: " + "; ".join(parts[:5]) + (" …" if len(parts) > 5 else "")
    return {"message": message, "errors": errors}


def exception_handler(exc: Exception, context: dict) -> Response | None:
    """Map refusals to JSON with a ``message``; bad input is always a 4xx, never a 500."""
    if isinstance(exc, ServiceError):
        body: dict[str, Any] = {"message": exc.message}
        if getattr(exc, "errors", None):
            body["errors"] = exc.errors[:MAX_ERRORS]
        return Response(body, status=exc.status)
    if isinstance(exc, SchemaError):
        return Response({"message": clip(str(exc))}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, RecursionError):
        return Response(
            {"message": "The request body is nested too deeply."},
            status=status.HTTP_400_BAD_REQUEST,
        )
    if isinstance(exc, Http404 | exceptions.NotFound):
        return Response({"message": "Not found."}, status=status.HTTP_404_NOT_FOUND)
    if isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        response.data = _validation_body(exc.detail)
    elif isinstance(exc, exceptions.ParseError):
        response.data = {"message": f"Malformed request body: {exc.detail}"}
    elif isinstance(exc, exceptions.APIException):
        response.data = {"message": clip(str(exc.detail))}
    return response


class StrictNegotiation(DefaultContentNegotiation):
    """An unknown ``?format=`` answers 406 with a message instead of DRF's bare 404."""

    def select_renderer(self, request, renderers, format_suffix=None):
        wanted = format_suffix or request.query_params.get(self.settings.URL_FORMAT_OVERRIDE)
        offered = [r.format for r in renderers]
        if wanted and wanted not in offered:
            raise exceptions.NotAcceptable(
                f"Unknown format {wanted[:20]!r}; this endpoint offers: {', '.join(offered)}."
            )
        return super().select_renderer(request, renderers, format_suffix)


# --------------------------------------------------------------------------------------------
# Base view
# --------------------------------------------------------------------------------------------
class ApiView(GenericAPIView):
    """Token or session auth, the role check, strict negotiation, validation."""

    permission_classes = [IsAuthenticated, RolePermission]
    content_negotiation_class = StrictNegotiation
    roles: tuple[str, ...] = ()
    roles_by_method: dict[str, tuple[str, ...]] = {}

    def initial(self, request, *args, **kwargs):
        # RolePermission reads ``view.roles``: pick the roles of the operation being called.
        self.roles = self.roles_by_method.get(request.method, type(self).roles)
        super().initial(request, *args, **kwargs)

    def get_queryset(self):
        # Only the browsable API asks for this (to render its forms); the operations call the
        # selectors themselves.
        return Project.objects.none()

    def is_staff(self) -> bool:
        return has_role(self.request.user, STAFF)

    def valid(self, serializer_class, data=None, **kwargs):
        serializer = serializer_class(data=self.request.data if data is None else data, **kwargs)
        serializer.is_valid(raise_exception=True)
        return serializer


ERRORS = {
    400: OpenApiResponse(ErrorOut, description="Invalid input"),
    401: OpenApiResponse(ErrorOut, description="Not signed in"),
    404: OpenApiResponse(ErrorOut, description="Missing or outside your reach"),
}


# --------------------------------------------------------------------------------------------
# Jobs
# --------------------------------------------------------------------------------------------
class JobListApi(ApiView):
    """Background jobs of your projects and the ones you started, newest first."""

    roles = STAFF
    serializer_class = JobOut

    def get_queryset(self):
        return jobs_for(self.request.user).order_by("-created_at", "-id")

    @extend_schema(responses={200: JobOut(many=True), **ERRORS})
    def get(self, request):
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(JobOut(page, many=True).data)


class JobDetailApi(ApiView):
    """One job with its progress, message and error."""

    roles = STAFF
    serializer_class = JobOut

    @extend_schema(responses={200: JobOut, **ERRORS})
    def get(self, request, job_id: int):
        job: Job = get_or_404(jobs_for(request.user), pk=job_id)
        return Response(JobOut(job).data)


# --------------------------------------------------------------------------------------------
# Projects
# --------------------------------------------------------------------------------------------
class ProjectListApi(ApiView):
    """The projects you are a member of (admins: all), by name."""

    roles = STAFF
    serializer_class = ProjectOut

    @extend_schema(responses={200: ProjectOut(many=True), **ERRORS})
    def get(self, request):
        page = self.paginate_queryset(projects_for(request.user).order_by("name", "id"))
        return self.get_paginated_response(ProjectOut(page, many=True).data)
