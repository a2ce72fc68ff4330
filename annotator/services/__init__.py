"""Every change to annotation data goes through these functions; each is atomic.

One module per noun: projects, queues, tasks (rows, bulk create, cancel), claiming (the hot path),
leases (expiry, revocation, heartbeat, skip, report), reports (the curators' inbox),
sending_back (a curator rejects an answer), decisions (deciding a task, gold,
enrollments), submitting, undoing (an answer taken back within the queue's window),
invitations. This package re-exports their public API, so callers write
``from annotator import services`` and ``services.assignment_claim(...)``.
"""

from .claiming import (
    ClaimResult,
    assignment_claim,
    look_ahead_presentation,
    tasks_keep_from,
    tasks_up_next,
)
from .decisions import enrollment_resume, task_decide, task_event_emit
from .invitations import invitation_accept, invitation_create
from .leases import (
    annotator_leases_revoke,
    assignment_heartbeat,
    assignment_release,
    assignment_report,
    assignment_skip,
    leases_elsewhere_release,
    leases_expire,
    may_work,
    report_reason_check,
)
from .projects import project_create, project_member_remove
from .queues import (
    QUEUE_FIELDS,
    SETTLE_INLINE_MAX,
    queue_create,
    queue_set_status,
    queue_update,
    tasks_settle,
)
from .reports import REPORT_ACTIONS, ReportHandled, report_handle
from .sending_back import annotation_send_back, send_back_refusal
from .settling import (
    SelectionSettle,
    SettleResult,
    task_curator_settle,
    tasks_curator_settle,
    tasks_curator_settle_selection,
)
from .submitting import SubmitResult, annotation_submit
from .tasks import (
    CancelResult,
    TaskRow,
    parse_task_rows,
    task_rows_check,
    tasks_bulk_create,
    tasks_cancel,
    validate_task_rows,
)
from .undoing import annotation_undo, annotation_undo_last, undo_refusal

__all__ = [
    "CancelResult",
    "ClaimResult",
    "QUEUE_FIELDS",
    "REPORT_ACTIONS",
    "ReportHandled",
    "SETTLE_INLINE_MAX",
    "SelectionSettle",
    "SettleResult",
    "SubmitResult",
    "TaskRow",
    "annotation_send_back",
    "annotation_submit",
    "annotation_undo",
    "annotation_undo_last",
    "annotator_leases_revoke",
    "assignment_claim",
    "assignment_heartbeat",
    "assignment_release",
    "assignment_report",
    "assignment_skip",
    "enrollment_resume",
    "invitation_accept",
    "invitation_create",
    "leases_elsewhere_release",
    "leases_expire",
    "may_work",
    "parse_task_rows",
    "project_create",
    "project_member_remove",
    "queue_create",
    "queue_set_status",
    "queue_update",
    "report_handle",
    "report_reason_check",
    "send_back_refusal",
    "task_decide",
    "task_event_emit",
    "tasks_bulk_create",
    "task_curator_settle",
    "task_rows_check",
    "tasks_keep_from",
    "tasks_up_next",
    "look_ahead_presentation",
    "tasks_cancel",
    "tasks_curator_settle",
    "tasks_curator_settle_selection",
    "tasks_settle",
    "undo_refusal",
    "validate_task_rows",
]
