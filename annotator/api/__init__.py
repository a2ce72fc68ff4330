"""The annotation engine's JSON API (DRF): one view per operation; the view validates, calls a
service, returns. Queues and members (``queues``), tasks (``tasks``), annotating (``work``),
exports (``exports``), the reports inbox and send back (``reports``); the base view, errors and
jobs endpoints are the platform's (``annotator.platform.api``).

Every view declares the roles it serves; anonymous callers get 401; a signed-in user without the
role, or asking for an object outside their reach, gets 404 exactly like a missing object.
Nothing a crowdworker receives holds a gold answer, whether an item is a gold check, or anyone
else's response.
"""

from .base import CONFLICT, EngineApiView
from .exports import (
    EXPORT_FORMATS,
    EXPORT_PARAMS,
    AnnotationsExportApi,
    CSVRenderer,
    ExportApi,
    JSONLinesRenderer,
    OutcomesExportApi,
    export_responses,
)
from .queues import (
    ProjectMemberApi,
    ProjectMembersApi,
    QueueAgreementApi,
    QueueDetailApi,
    QueueListCreateApi,
    QueueStatusApi,
)
from .reports import ProjectReportsApi, ReportHandleApi, ReportsExportApi, TaskSendBackApi
from .tasks import (
    JsonlParser,
    NdjsonParser,
    PlainTextParser,
    QueueTasksApi,
    QueueTasksCancelApi,
    QueueTasksSettleApi,
    TaskSettleApi,
)
from .work import HeartbeatApi, HistoryApi, NextApi, ReportApi, SkipApi, SubmitApi, UndoApi

__all__ = [
    "AnnotationsExportApi",
    "CONFLICT",
    "CSVRenderer",
    "EXPORT_FORMATS",
    "EXPORT_PARAMS",
    "EngineApiView",
    "ExportApi",
    "HeartbeatApi",
    "HistoryApi",
    "JSONLinesRenderer",
    "JsonlParser",
    "NdjsonParser",
    "NextApi",
    "OutcomesExportApi",
    "PlainTextParser",
    "ProjectMemberApi",
    "ProjectMembersApi",
    "QueueAgreementApi",
    "QueueDetailApi",
    "QueueListCreateApi",
    "QueueStatusApi",
    "QueueTasksApi",
    "QueueTasksCancelApi",
    "QueueTasksSettleApi",
    "ProjectReportsApi",
    "ReportApi",
    "ReportHandleApi",
    "ReportsExportApi",
    "SkipApi",
    "SubmitApi",
    "TaskSendBackApi",
    "TaskSettleApi",
    "UndoApi",
    "export_responses",
]
