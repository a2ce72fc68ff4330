"""The engine's API view (scoped queue lookups) and the error responses its endpoints declare."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse

from .. import selectors
from ..models import TaskQueue
from ..platform.api import ApiView, ErrorOut
from ..platform.scoping import get_or_404


class EngineApiView(ApiView):
    """The platform's API view with the annotation engine's scoped queue lookups."""

    def get_queryset(self):
        # Only the browsable API asks for this (to render its forms); the operations call the
        # selectors themselves.
        return selectors.queues_for(self.request.user).none()

    def queue(self, queue_id: int, *, manage: bool = False) -> TaskQueue:
        user = self.request.user
        qs = selectors.managed_queues_for(user) if manage else selectors.queues_for(user)
        return get_or_404(qs, pk=queue_id)


CONFLICT = {
    409: OpenApiResponse(
        ErrorOut, description="Lease lost, task skipped, reported or already answered"
    )
}
