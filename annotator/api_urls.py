"""JSON API routes, mounted at /api/ (schema at /api/schema/, Swagger UI at /api/docs/)."""

from django.urls import path

from . import api
from .api import webhooks
from .platform.api import JobDetailApi, JobListApi, ProjectListApi

urlpatterns = [
    path("queues/", api.QueueListCreateApi.as_view(), name="api-queues"),
    path("queues/<int:queue_id>/", api.QueueDetailApi.as_view(), name="api-queue"),
    path("queues/<int:queue_id>/status/", api.QueueStatusApi.as_view(), name="api-queue-status"),
    path("queues/<int:queue_id>/tasks/", api.QueueTasksApi.as_view(), name="api-queue-tasks"),
    path(
        "queues/<int:queue_id>/tasks/cancel/",
        api.QueueTasksCancelApi.as_view(),
        name="api-queue-tasks-cancel",
    ),
    path(
        "queues/<int:queue_id>/agreement/",
        api.QueueAgreementApi.as_view(),
        name="api-queue-agreement",
    ),
    path("queues/<int:queue_id>/next/", api.NextApi.as_view(), name="api-next"),
    path(
        "queues/<int:queue_id>/outcomes/",
        api.OutcomesExportApi.as_view(),
        name="api-queue-outcomes",
    ),
    path(
        "queues/<int:queue_id>/annotations/",
        api.AnnotationsExportApi.as_view(),
        name="api-queue-annotations",
    ),
    path("projects/", ProjectListApi.as_view(), name="api-projects"),
    path(
        "projects/<int:project_id>/members/",
        api.ProjectMembersApi.as_view(),
        name="api-project-members",
    ),
    path(
        "projects/<int:project_id>/members/<int:user_id>/",
        api.ProjectMemberApi.as_view(),
        name="api-project-member",
    ),
    path(
        "queues/<int:queue_id>/tasks/settle/",
        api.QueueTasksSettleApi.as_view(),
        name="api-queue-tasks-settle",
    ),
    path("tasks/<int:task_id>/settle/", api.TaskSettleApi.as_view(), name="api-task-settle"),
    path(
        "tasks/<int:task_id>/send-back/", api.TaskSendBackApi.as_view(), name="api-task-send-back"
    ),
    path(
        "projects/<int:project_id>/reports/",
        api.ProjectReportsApi.as_view(),
        name="api-project-reports",
    ),
    path(
        "reports/<int:report_id>/handle/",
        api.ReportHandleApi.as_view(),
        name="api-report-handle",
    ),
    path(
        "queues/<int:queue_id>/reports/",
        api.ReportsExportApi.as_view(),
        name="api-queue-reports",
    ),
    path("tasks/<int:task_id>/submit/", api.SubmitApi.as_view(), name="api-submit"),
    path("tasks/<int:task_id>/skip/", api.SkipApi.as_view(), name="api-skip"),
    path("tasks/<int:task_id>/undo/", api.UndoApi.as_view(), name="api-undo"),
    path("queues/<int:queue_id>/history/", api.HistoryApi.as_view(), name="api-queue-history"),
    path("tasks/<int:task_id>/report/", api.ReportApi.as_view(), name="api-report"),
    path("tasks/<int:task_id>/heartbeat/", api.HeartbeatApi.as_view(), name="api-heartbeat"),
    path(
        "projects/<int:project_id>/webhooks/",
        webhooks.WebhookListCreateApi.as_view(),
        name="api-webhooks",
    ),
    path("webhooks/<int:webhook_id>/", webhooks.WebhookDetailApi.as_view(), name="api-webhook"),
    path(
        "webhooks/<int:webhook_id>/test/",
        webhooks.WebhookTestApi.as_view(),
        name="api-webhook-test",
    ),
    path(
        "webhooks/<int:webhook_id>/secret/",
        webhooks.WebhookSecretApi.as_view(),
        name="api-webhook-secret",
    ),
    path(
        "webhooks/<int:webhook_id>/deliveries/",
        webhooks.WebhookDeliveriesApi.as_view(),
        name="api-webhook-deliveries",
    ),
    path("jobs/", JobListApi.as_view(), name="api-jobs"),
    path("jobs/<int:job_id>/", JobDetailApi.as_view(), name="api-job"),
]
