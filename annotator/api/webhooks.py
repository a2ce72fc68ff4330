"""Webhooks of a project you curate: register, change, enable or disable, rotate the secret,
send a test event, read the delivery log (``annotator.platform.webhooks`` does the work)."""

from __future__ import annotations

from django.core.validators import URLValidator
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from ..platform import webhooks
from ..platform.api import ERRORS, ApiView
from ..platform.models import Webhook, WebhookDelivery
from ..platform.roles import CURATOR
from ..platform.scoping import curated_project_or_404, get_or_404

EVENT_CHOICES = [(name, str(label)) for name, label in webhooks.EVENTS.items()]


def _url_field(**kw) -> serializers.URLField:
    return serializers.URLField(
        max_length=500, validators=[URLValidator(schemes=["http", "https"])], **kw
    )


class WebhookIn(serializers.Serializer):
    url = _url_field()
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=EVENT_CHOICES), allow_empty=False, max_length=50
    )
    description = serializers.CharField(max_length=200, required=False, allow_blank=True)


class WebhookPatchIn(serializers.Serializer):
    url = _url_field(required=False)
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=EVENT_CHOICES),
        allow_empty=False,
        max_length=50,
        required=False,
    )
    description = serializers.CharField(max_length=200, required=False, allow_blank=True)
    is_active = serializers.BooleanField(
        required=False, help_text="true enables the hook again (its failures are forgotten)."
    )


class WebhookOut(serializers.ModelSerializer):
    class Meta:
        model = Webhook
        fields = [
            "id",
            "project",
            "url",
            "description",
            "events",
            "is_active",
            "consecutive_failures",
            "disabled_at",
            "disabled_reason",
            "created_at",
        ]


class WebhookSecretOut(WebhookOut):
    secret = serializers.CharField(help_text="The signing secret: shown this once.")

    class Meta(WebhookOut.Meta):
        fields = [*WebhookOut.Meta.fields, "secret"]


class DeliveryOut(serializers.ModelSerializer):
    # A plain string: another "status" enum would collide in the schema.
    status = serializers.CharField(help_text="pending, retrying, succeeded or failed.")

    class Meta:
        model = WebhookDelivery
        fields = [
            "id",
            "event",
            "event_id",
            "status",
            "attempts",
            "response_code",
            "response_body",
            "error",
            "duration_ms",
            "created_at",
            "attempted_at",
            "next_attempt_at",
            "payload",
        ]


class WebhookApiView(ApiView):
    roles = (CURATOR,)

    def hook(self, webhook_id: int) -> Webhook:
        return get_or_404(webhooks.webhooks_curated_by(self.request.user), pk=webhook_id)


class WebhookListCreateApi(WebhookApiView):
    """GET: the project's webhooks. POST: register one; the answer holds its signing secret,
    shown this once."""

    serializer_class = WebhookOut

    @extend_schema(responses={200: WebhookOut(many=True), **ERRORS})
    def get(self, request, project_id: int):
        project = curated_project_or_404(request.user, project_id)
        hooks = webhooks.webhooks_curated_by(request.user).filter(project=project)
        return Response(WebhookOut(hooks.order_by("id"), many=True).data)

    @extend_schema(request=WebhookIn, responses={201: WebhookSecretOut, **ERRORS})
    def post(self, request, project_id: int):
        project = curated_project_or_404(request.user, project_id)
        data = self.valid(WebhookIn).validated_data
        hook = webhooks.webhook_create(project=project, created_by=request.user, **data)
        return Response(WebhookSecretOut(hook).data, status=status.HTTP_201_CREATED)


class WebhookDetailApi(WebhookApiView):
    """GET, PATCH (url, events, description, is_active) or DELETE one webhook."""

    serializer_class = WebhookOut

    @extend_schema(responses={200: WebhookOut, **ERRORS})
    def get(self, request, webhook_id: int):
        return Response(WebhookOut(self.hook(webhook_id)).data)

    @extend_schema(request=WebhookPatchIn, responses={200: WebhookOut, **ERRORS})
    def patch(self, request, webhook_id: int):
        hook = self.hook(webhook_id)
        data = self.valid(WebhookPatchIn).validated_data
        return Response(WebhookOut(webhooks.webhook_update(webhook=hook, **data)).data)

    @extend_schema(responses={204: None, **ERRORS})
    def delete(self, request, webhook_id: int):
        webhooks.webhook_delete(webhook=self.hook(webhook_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class WebhookTestApi(WebhookApiView):
    """Send a ``ping`` event to this webhook alone (a disabled one too: check a receiver before
    enabling it again). The delivery is queued; read its outcome in the log."""

    serializer_class = DeliveryOut

    @extend_schema(request=None, responses={202: DeliveryOut, **ERRORS})
    def post(self, request, webhook_id: int):
        delivery = webhooks.webhook_test(webhook=self.hook(webhook_id))
        return Response(DeliveryOut(delivery).data, status=status.HTTP_202_ACCEPTED)


class WebhookSecretApi(WebhookApiView):
    """A new signing secret, shown this once; deliveries from now on are signed with it."""

    serializer_class = WebhookSecretOut

    @extend_schema(request=None, responses={200: WebhookSecretOut, **ERRORS})
    def post(self, request, webhook_id: int):
        hook = webhooks.webhook_secret_rotate(webhook=self.hook(webhook_id))
        return Response(WebhookSecretOut(hook).data)


class WebhookDeliveriesApi(WebhookApiView):
    """The webhook's delivery log, newest first (paginated)."""

    serializer_class = DeliveryOut

    @extend_schema(responses={200: DeliveryOut(many=True), **ERRORS})
    def get(self, request, webhook_id: int):
        hook = self.hook(webhook_id)
        page = self.paginate_queryset(hook.deliveries.order_by("-created_at", "-id"))
        return self.get_paginated_response(DeliveryOut(page, many=True).data)
