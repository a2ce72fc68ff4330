"""The reports inbox: what a curator does about a crowdworker's "Report a problem".

A report is made when an assignment ends ``reported`` (``leases.assignment_report``): the slot
went back to the pool then, so the task is already offered to others. A curator handles each
open report once, with an optional note kept on it:

- ``resolve``: the report is dealt with (the image was fixed, or nothing was wrong); the task
  goes on as it was.
- ``requeue``: the task is fine: it is offered again to the person who reported it too (their
  assignment becomes an expired lease, which the claim may revive). Only while the task is open.
- ``cancel``: the task is withdrawn (``tasks.tasks_cancel``: never offered again, live leases
  end, answers kept); every open report of that task is closed with it. Only while it is open.

Rows are locked task first, then the report, as everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ..models import Assignment, Report, Task
from ..platform.errors import Conflict, Invalid, NotFound
from .tasks import tasks_cancel

RESOLVE, REQUEUE, CANCEL = "resolve", "requeue", "cancel"
REPORT_ACTIONS = {
    RESOLVE: gettext_lazy("Resolve"),
    REQUEUE: gettext_lazy("Requeue"),
    CANCEL: gettext_lazy("Cancel task"),
}
_STATUS = {
    RESOLVE: Report.Status.RESOLVED,
    REQUEUE: Report.Status.REQUEUED,
    CANCEL: Report.Status.CANCELLED,
}
MAX_NOTE = 2000


@dataclass(frozen=True)
class ReportHandled:
    report: Report
    closed: int  # reports closed: this one, and with a cancel the task's other open ones

    @property
    def message(self) -> str:
        done = {
            RESOLVE: _("Report %(id)d resolved."),
            REQUEUE: _("Report %(id)d: task %(task)d is offered again, to its reporter too."),
            CANCEL: _("Report %(id)d: task %(task)d cancelled."),
        }
        action = {v: k for k, v in _STATUS.items()}[self.report.status]
        text = done[action] % {"id": self.report.pk, "task": self.report.task_id}
        if self.closed > 1:
            text += " " + _("%(n)d other open report(s) of the task closed with it.") % {
                "n": self.closed - 1
            }
        return text


def report_handle(
    *, reports: QuerySet[Report], report_id: int, action: str, by, note: str = "", now=None
) -> ReportHandled:
    """Handle one open report among ``reports`` (the caller scoped them to what ``by`` may
    change): resolve, requeue or cancel (see the module). Refused with a clear error when the
    action does not apply; a report already handled answers 409 with who handled it."""
    if action not in REPORT_ACTIONS:
        raise Invalid(
            _("action: one of %(a)s.") % {"a": ", ".join(REPORT_ACTIONS)},
            [{"field": "action", "error": _("not a report action")}],
        )
    note = (note or "").strip()[:MAX_NOTE]
    now = now or timezone.now()
    found = reports.filter(pk=report_id).values_list("task_id", "queue_id").first()
    if found is None:
        raise NotFound(_("No such report."))
    task_id, _queue_id = found
    with transaction.atomic():
        task = Task.objects.select_for_update().select_related("queue").get(pk=task_id)
        report = Report.objects.select_for_update().select_related("reporter").get(pk=report_id)
        if report.status != Report.Status.OPEN:
            raise Conflict(
                _("This report was already handled (%(s)s by %(who)s).")
                % {
                    "s": report.get_status_display().lower(),
                    "who": report.handled_by.get_username() if report.handled_by else "—",
                }
            )
        if action in (REQUEUE, CANCEL) and task.state != Task.State.OPEN:
            raise Conflict(
                _("Task %(id)d is %(state)s, no longer open: resolve the report instead.")
                % {"id": task.pk, "state": task.get_state_display().lower()}
            )
        closing = [report.pk]
        if action == REQUEUE:
            # an expired lease: the claim offers the task to its reporter again (and revives it)
            Assignment.objects.filter(
                task=task, annotator=report.reporter, state=Assignment.State.REPORTED
            ).update(state=Assignment.State.EXPIRED)
        elif action == CANCEL:
            tasks_cancel(
                queue=task.queue,
                task_ids=[task.pk],
                reason=note
                or _("Cancelled from report %(id)d: %(r)s") % {"id": report.pk, "r": report.reason},
                now=now,
            )
            closing = list(
                Report.objects.select_for_update()
                .filter(task=task, status=Report.Status.OPEN)
                .order_by("id")
                .values_list("pk", flat=True)
            )
        Report.objects.filter(pk__in=closing).update(
            status=_STATUS[action], handled_by=by, handled_at=now, note=note
        )
        report.refresh_from_db()
    return ReportHandled(report=report, closed=len(closing))
