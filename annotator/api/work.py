"""Annotating: the next task, submit, skip, report, heartbeat.

Nothing a crowdworker receives holds a gold answer, whether an item is a gold check, or anyone
else's response."""

from __future__ import annotations

from django.db import DatabaseError
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response

from .. import selectors, services
from ..kinds import get_kind
from ..platform.api import ERRORS
from ..platform.roles import CROWDWORKER
from ..serializers import (
    ClaimOut,
    HeartbeatOut,
    HistoryEntryOut,
    ReleasedOut,
    ReportIn,
    SubmitIn,
    SubmitOut,
)
from .base import CONFLICT, EngineApiView

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
    """Claim your next task in a queue (or get back the one you hold). A task you hold in
    another queue goes back to its pool: you work in one queue at a time.

    When there is none, the answer is still 200, with ``task: null``, a ``message`` saying why,
    and ``retry_after`` seconds when tasks held by others may come back to the pool.
    """

    roles = (CROWDWORKER,)
    serializer_class = ClaimOut

    def http_method_not_allowed(self, request, *args, **kwargs):
        # A GET here is the common slip (claiming changes state): say which call claims.
        raise exceptions.MethodNotAllowed(
            request.method,
            detail=f"Method {request.method} not allowed: claim your next task with "
            f"POST {request.path} (no body).",
        )

    @extend_schema(request=None, responses={200: ClaimOut, **ERRORS})
    def post(self, request, queue_id: int):
        queue = selectors.work_queue_or_404(request.user, queue_id)
        services.leases_elsewhere_release(annotator=request.user, queue=queue)
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
        try:
            following = _claim_data(result.next)
        except DatabaseError:
            # The answer's transaction committed: it is stored, and the answer says so; the
            # next task is asked for again (POST .../next/) once the database answers.
            following = None
        body = {"annotation_id": result.annotation.pk, "created": result.created, "next": following}
        return Response(body, status=status.HTTP_201_CREATED if result.created else 200)


class UndoApi(EngineApiView):
    """Take back your answer to a task within the queue's undo window, while the task is not
    decided; the task is yours again as a live lease (in ``task``) to answer anew.

    The answer undone is kept in the task's history (who, what, when answered, when undone);
    your other live lease in the queue goes back to the pool. 409 when the window has passed,
    the task is decided or withdrawn, or you have no answer on it.
    """

    roles = (CROWDWORKER,)
    serializer_class = ClaimOut

    @extend_schema(request=None, responses={200: ClaimOut, **ERRORS, **CONFLICT})
    def post(self, request, task_id: int):
        assignment = services.annotation_undo(task_id=task_id, annotator=request.user)
        return Response(_claim_data(services.ClaimResult(assignment)))


class HistoryApi(EngineApiView):
    """Your recent answers in a queue (the last 50), newest first, with the ones you undid and
    until when each may still be undone."""

    roles = (CROWDWORKER,)
    serializer_class = HistoryEntryOut

    @extend_schema(request=None, responses={200: HistoryEntryOut(many=True), **ERRORS})
    def get(self, request, queue_id: int):
        queue = selectors.work_queue_or_404(request.user, queue_id)
        entries = selectors.my_recent_answers(request.user, queue)
        return Response(HistoryEntryOut(entries, many=True).data)


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
