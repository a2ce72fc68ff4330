"""Reports inbox and send back over the API: list a project's reports, handle one, export a
queue's reports, send one person's answer back."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, serializers
from rest_framework.response import Response

from .. import selectors, services
from ..models import Report, SentBackAnnotation
from ..platform.api import ERRORS, STAFF
from ..platform.roles import CURATOR
from ..platform.scoping import get_or_404, projects_for
from .base import CONFLICT, EngineApiView
from .exports import EXPORT_PARAMS, ExportApi, export_responses

STATUSES = [s.value for s in Report.Status]


class ReportOut(serializers.Serializer):
    """One "Report a problem": the reason, who reported which task when, and what a curator
    did about it."""

    id = serializers.IntegerField()
    task = serializers.IntegerField(source="task_id")
    queue = serializers.IntegerField(source="queue_id")
    external_id = serializers.CharField(source="task.external_id")
    task_state = serializers.CharField(source="task.state")
    reason = serializers.CharField(help_text="A reason code of the queue, or ``other: <details>``.")
    reporter = serializers.CharField(source="reporter.username")
    created_at = serializers.DateTimeField()
    status = serializers.ChoiceField(choices=STATUSES)
    handled_by = serializers.CharField(source="handled_by.username", allow_null=True, default=None)
    handled_at = serializers.DateTimeField(allow_null=True)
    note = serializers.CharField(help_text="The curator's note, when handled.")


class ReportHandleIn(serializers.Serializer):
    action = serializers.ChoiceField(
        choices=list(services.REPORT_ACTIONS),
        help_text="resolve (nothing else changes), requeue (offer the task to its reporter "
        "again; open tasks only) or cancel (withdraw the task; open tasks only).",
    )
    note = serializers.CharField(required=False, allow_blank=True, max_length=2000, default="")


class ReportHandledOut(serializers.Serializer):
    report = ReportOut()
    closed = serializers.IntegerField(help_text="Reports closed (a cancel closes the task's).")
    message = serializers.CharField()


class ProjectReportsApi(EngineApiView):
    """The reports inbox of a project: its reports, newest first, open ones by default
    (``?status=resolved|requeued|cancelled|all``), optionally of one queue (``?queue=``)."""

    roles = STAFF
    serializer_class = ReportOut

    @extend_schema(
        parameters=[
            OpenApiParameter("status", str, enum=[*STATUSES, "all"], description="open (default)"),
            OpenApiParameter("queue", int, description="only this queue's reports"),
        ],
        responses={200: ReportOut(many=True), **ERRORS},
    )
    def get(self, request, project_id: int):
        project = get_or_404(projects_for(request.user), pk=project_id)
        status = request.query_params.get("status") or Report.Status.OPEN
        if status not in (*STATUSES, "all"):
            raise exceptions.ValidationError(
                {"status": [f"Unknown status; use one of {', '.join(STATUSES)} or all."]}
            )
        queue = request.query_params.get("queue")
        queue_id = None
        if queue:
            if not queue.isdigit() or not 0 < int(queue) < 2**63:
                raise exceptions.ValidationError({"queue": ["A queue id (a positive integer)."]})
            queue_id = int(queue)
        reports = selectors.project_reports(
            project, status="" if status == "all" else status, queue_id=queue_id
        )
        page = self.paginate_queryset(reports)
        return self.get_paginated_response(ReportOut(page, many=True).data)


class ReportHandleApi(EngineApiView):
    """Handle one open report: ``resolve``, ``requeue`` or ``cancel``, with an optional note.
    A report already handled answers 409 with who handled it."""

    roles = (CURATOR,)
    serializer_class = ReportHandledOut

    @extend_schema(request=ReportHandleIn, responses={200: ReportHandledOut, **ERRORS, **CONFLICT})
    def post(self, request, report_id: int):
        reports = selectors.managed_reports_for(request.user)
        get_or_404(reports, pk=report_id)
        data = self.valid(ReportHandleIn).validated_data
        done = services.report_handle(
            reports=reports,
            report_id=report_id,
            action=data["action"],
            by=request.user,
            note=data["note"],
        )
        report = Report.objects.select_related("task", "reporter", "handled_by").get(
            pk=done.report.pk
        )
        return Response(
            {"report": ReportOut(report).data, "closed": done.closed, "message": done.message}
        )


class ReportRowOut(serializers.Serializer):
    id = serializers.IntegerField()
    task_id = serializers.IntegerField()
    external_id = serializers.CharField()
    reason = serializers.CharField()
    reporter = serializers.CharField()
    created_at = serializers.DateTimeField()
    status = serializers.CharField()
    handled_by = serializers.CharField(allow_null=True)
    handled_at = serializers.DateTimeField(allow_null=True)
    note = serializers.CharField()


@extend_schema(parameters=EXPORT_PARAMS, responses=export_responses(ReportRowOut))
class ReportsExportApi(ExportApi):
    """Every report of the queue (open and handled): task, reason, reporter, time, and who
    handled it how."""

    serializer_class = ReportRowOut
    name = "reports"
    columns = tuple(ReportRowOut().fields)
    time_columns = ("created_at", "handled_at")

    def queryset(self, queue):
        # ``queue`` comes from the scoped selector, so its reports are within reach.
        return (
            Report.objects.filter(queue=queue)
            .order_by("id")
            .values_list(
                "id",
                "task_id",
                "task__external_id",
                "reason",
                "reporter__username",
                "created_at",
                "status",
                "handled_by__username",
                "handled_at",
                "note",
            )
        )


class SendBackIn(serializers.Serializer):
    annotator = serializers.CharField(max_length=150, help_text="Whose answer (user name).")
    note = serializers.CharField(
        max_length=2000, help_text="What is wrong; its author reads it in their history."
    )


class SentBackOut(serializers.ModelSerializer):
    annotator = serializers.CharField(source="annotator.username")
    sent_back_by = serializers.CharField(source="sent_back_by.username", allow_null=True)
    reopened = serializers.SerializerMethodField()

    class Meta:
        model = SentBackAnnotation
        fields = [
            "id",
            "task",
            "queue",
            "annotator",
            "response",
            "answered_at",
            "sent_back_by",
            "sent_back_at",
            "note",
            "withdrawn_outcome",
            "reopened",
        ]

    def get_reopened(self, obj) -> bool:
        return obj.withdrawn_outcome is not None


class TaskSendBackApi(EngineApiView):
    """Send one person's answer back with a note (review): it stops counting, is kept and
    marked, and the task asks the queue for another answer from someone else.

    Open tasks always; a decided or undecided task re-opens (its outcome withdrawn) when its
    queue has no outcome handler, and is refused (409) when it has one, as are curator-settled,
    cancelled and gold tasks. Webhooks hear ``task.sent_back``.
    """

    roles = (CURATOR,)
    serializer_class = SentBackOut

    @extend_schema(request=SendBackIn, responses={200: SentBackOut, **ERRORS, **CONFLICT})
    def post(self, request, task_id: int):
        user = request.user
        task = get_or_404(
            selectors.tasks_for(user)
            .filter(queue__in=selectors.managed_queues_for(user))
            .select_related("queue"),
            pk=task_id,
        )
        data = self.valid(SendBackIn).validated_data
        record = services.annotation_send_back(
            queue=task.queue,
            task_id=task.pk,
            annotator=data["annotator"],
            by=user,
            note=data["note"],
        )
        return Response(SentBackOut(record).data)
