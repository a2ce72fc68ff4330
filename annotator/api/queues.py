"""Queues and the people of a project: list, create, change, pause; members."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, status
from rest_framework.response import Response

from .. import quality, selectors, services
from ..models import TaskQueue
from ..platform.api import ERRORS
from ..platform.roles import ALL_ROLES, CROWDWORKER, CURATOR, RESEARCHER
from ..platform.scoping import curated_project_or_404, get_or_404, projects_for
from ..serializers import (
    AgreementOut,
    MemberOut,
    MemberRemovedOut,
    QueueCreateIn,
    QueueFieldsIn,
    QueueOut,
    QueueStatusIn,
    QueueWorkerOut,
)
from .base import EngineApiView


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


def _member_data(person, acceptance: dict) -> dict:
    mine = acceptance.get(person.pk) or {}
    return {
        "id": person.pk,
        "username": person.username,
        "roles": [r for r in ALL_ROLES if r in person.roles],
        "is_active": person.is_active,
        "live_leases": person.live_leases,
        "accepted": mine.get("accepted", 0),
        "sent_back": mine.get("sent_back", 0),
        "acceptance_rate": mine.get("rate"),
    }


class ProjectMembersApi(EngineApiView):
    """The members of a project you curate, with their roles and the tasks they hold now."""

    roles = (CURATOR,)
    serializer_class = MemberOut

    @extend_schema(responses={200: MemberOut(many=True), **ERRORS})
    def get(self, request, project_id: int):
        project = curated_project_or_404(request.user, project_id)
        acceptance = selectors.acceptance_by_person(project)
        return Response([_member_data(p, acceptance) for p in selectors.project_people(project)])


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


class QueueAgreementApi(EngineApiView):
    """GET (curators, researchers): the queue's agreement figures, per tag and per annotator.

    Single-label kinds: percent agreement, Cohen's κ, Fleiss' κ, Krippendorff's α. Multi-label
    kinds (skill tags) add Krippendorff's α with MASI and Jaccard set distances, the mean set
    similarity and, per tag (each tag as a yes/no label), percent agreement, κ and α.
    """

    roles = (CURATOR, RESEARCHER)
    serializer_class = AgreementOut

    @extend_schema(responses={200: AgreementOut, **ERRORS})
    def get(self, request, queue_id: int):
        queue = self.queue(queue_id)
        figures = quality.cached_queue_quality(queue)
        return Response(AgreementOut({"queue_id": queue.pk, "kind": queue.kind, **figures}).data)
