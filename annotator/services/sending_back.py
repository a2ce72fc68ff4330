"""Send back (review): a curator rejects one person's answer to a task, with a note.

The answer moves, as it was, to ``SentBackAnnotation`` with who sent it back, when and why (the
task page shows it; its author sees it with the note in their history). Outcome and agreement
read ``Annotation`` only, so it no longer counts. The person's assignment ends ``sent_back``:
the slot it held opens (``active_count`` and ``done_count`` go down by one) and the task asks
the queue for another answer, from someone else (nobody is served the same task twice).

Which tasks (decided here, and said on the page and in the README):

- open tasks (still collecting answers): always;
- decided or undecided tasks of a queue **without an outcome handler**: the task re-opens, its
  outcome is withdrawn (kept on the send-back record as ``withdrawn_outcome``) and it is decided
  again by its answers when the new one arrives (``task.decided`` is emitted again);
- decided or undecided tasks of a queue **with an outcome handler** are refused: a recipe has
  already acted on the decision (made the next stage's work) and cannot take it back; the
  curator settles the task instead, which is what overriding a decision means;
- curator-settled, cancelled and gold tasks are refused (a settlement does not rest on the
  answers; a cancelled task is out of the pool; gold answers are scored, not reviewed).

Webhooks hear ``task.sent_back`` (the task, whose answer, the note, whether it re-opened).
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from ..kinds import get_kind
from ..models import Annotation, Assignment, SentBackAnnotation, Task, TaskQueue
from ..platform.errors import Conflict, Invalid, NotFound
from .decisions import task_event_emit

MAX_NOTE = 2000


def send_back_refusal(task: Task, queue: TaskQueue) -> str:
    """Why no answer of ``task`` can be sent back ("" when they can)."""
    if task.is_gold:
        return _("Gold tasks score people against their known answer: nothing to send back.")
    if task.state == Task.State.CANCELLED:
        return _("This task was cancelled; its answers stay as they are.")
    if task.settled_at is not None:
        return _("A curator settled this task; settle it again to change its outcome.")
    if task.state != Task.State.OPEN and queue.outcome_handler:
        return _(
            "This task is decided and its recipe has already acted on the decision: "
            "settle it instead to change its outcome."
        )
    return ""


def annotation_send_back(
    *, queue: TaskQueue, task_id: int, annotator: str, by, note: str, now=None
) -> SentBackAnnotation:
    """Send back ``annotator``'s (a user name) answer to task ``task_id`` of ``queue`` (the
    caller scoped the queue to what ``by`` may change), with a required ``note``."""
    note = (note or "").strip()[:MAX_NOTE]
    if not note:
        raise Invalid(
            _("note: say what is wrong with the answer; its author reads it."),
            [{"field": "note", "error": _("This field is required.")}],
        )
    person = get_user_model().objects.filter(username=annotator or "").first()
    now = now or timezone.now()
    with transaction.atomic():
        task = (
            Task.objects.select_for_update(of=("self",))
            .select_related("queue")
            .filter(queue=queue, pk=task_id)
            .first()
        )
        if task is None:
            raise NotFound(_("No such task."))
        answer = (
            Annotation.objects.select_for_update().filter(task=task, annotator=person).first()
            if person is not None
            else None
        )
        if answer is None:
            raise Invalid(
                _("%(who)s has no answer on task %(id)d to send back.")
                % {"who": (annotator or "—")[:150], "id": task.pk},
                [{"field": "annotator", "error": _("no answer by this person on this task")}],
            )
        why = send_back_refusal(task, queue)
        if why:
            raise Conflict(why)
        reopened = task.state != Task.State.OPEN
        record = SentBackAnnotation.objects.create(
            task=task,
            queue=queue,
            annotator=person,
            response=answer.response,
            duration_ms=answer.duration_ms,
            answered_at=answer.created_at,
            sent_back_by=by,
            sent_back_at=now,
            note=note,
            withdrawn_outcome=task.outcome if reopened else None,
        )
        answer.delete()
        Assignment.objects.filter(task=task, annotator=person).update(
            state=Assignment.State.SENT_BACK
        )
        responses = list(
            Annotation.objects.filter(task=task, is_gold=False)
            .order_by("id")
            .values_list("response", flat=True)
        )
        task.active_count -= 1
        task.done_count -= 1
        if task.agreement is not None:  # among the answers that stand
            kind = get_kind(queue.kind)
            task.agreement = kind.aggregate(responses, queue.rule).agreement if responses else None
        fields = ["active_count", "done_count", "agreement"]
        if reopened:
            task.state = Task.State.OPEN
            task.outcome = None
            task.decided_at = None
            fields += ["state", "outcome", "decided_at"]
        task.save(update_fields=fields)
        task_event_emit(
            task=task,
            event="task.sent_back",
            extra={"annotator": person.get_username(), "note": note, "reopened": reopened},
        )
    return record
