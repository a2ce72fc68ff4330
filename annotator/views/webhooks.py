"""The webhooks pages of a project (curators): the list with a form to add one; one hook with
its settings, its delivery log, "send test event", enable / disable, a new secret, delete.

A hook's secret is shown once, on the page the curator lands on after making the hook or asking
for a new secret (kept in the session for that one page)."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from ..forms import WebhookForm
from ..platform import roles, webhooks
from ..platform.errors import ServiceError
from ..platform.models import Webhook
from ..platform.scoping import curated_project_or_404, get_or_404
from .base import CURATOR

SECRET_KEY = "webhook_secret"  # session key: {"hook": id, "secret": "..."} for one page


def _hook(request: HttpRequest, webhook_id: int) -> Webhook:
    return get_or_404(webhooks.webhooks_curated_by(request.user), pk=webhook_id)


def _show_secret_once(request: HttpRequest, hook: Webhook) -> None:
    request.session[SECRET_KEY] = {"hook": hook.pk, "secret": hook.secret}


@roles.roles_required(*CURATOR)
def webhook_list(request: HttpRequest, project_id: int) -> HttpResponse:
    """GET: the project's hooks and the form. POST: register a hook, then show its secret."""
    project = curated_project_or_404(request.user, project_id)
    form = WebhookForm(request.POST or None)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                hook = webhooks.webhook_create(
                    project=project, created_by=request.user, **form.cleaned_data
                )
            except ServiceError as exc:
                form.add_error("url", exc.message)
            else:
                _show_secret_once(request, hook)
                messages.success(request, _("Webhook added. Copy its secret now."))
                return redirect("curator-webhook", webhook_id=hook.pk)
        status = 400
    hooks = webhooks.webhooks_curated_by(request.user).filter(project=project).order_by("id")
    return render(
        request,
        "annotator/curator/webhooks.html",
        {"project": project, "hooks": hooks, "form": form, "events": webhooks.EVENTS},
        status=status,
    )


@roles.roles_required(*CURATOR)
def webhook_detail(request: HttpRequest, webhook_id: int) -> HttpResponse:
    """GET: the hook, its settings and its delivery log. POST: save the settings."""
    hook = _hook(request, webhook_id)
    initial = {"url": hook.url, "description": hook.description, "events": hook.events}
    form = WebhookForm(request.POST or None, initial=initial)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                webhooks.webhook_update(webhook=hook, **form.cleaned_data)
            except ServiceError as exc:
                form.add_error("url", exc.message)
            else:
                messages.success(request, _("Webhook saved."))
                return redirect("curator-webhook", webhook_id=hook.pk)
        status = 400
    shown = request.session.pop(SECRET_KEY, None)
    secret = shown["secret"] if shown and shown.get("hook") == hook.pk else ""
    page = Paginator(hook.deliveries.order_by("-created_at", "-id"), 50).get_page(
        request.GET.get("page")
    )
    return render(
        request,
        "annotator/curator/webhook.html",
        {"hook": hook, "project": hook.project, "form": form, "secret": secret, "page": page},
        status=status,
    )


@roles.roles_required(*CURATOR)
@require_POST
def webhook_test(request: HttpRequest, webhook_id: int) -> HttpResponse:
    hook = _hook(request, webhook_id)
    webhooks.webhook_test(webhook=hook)
    messages.success(request, _("A test event is on its way; its delivery shows in the log."))
    return redirect("curator-webhook", webhook_id=hook.pk)


@roles.roles_required(*CURATOR)
@require_POST
def webhook_active(request: HttpRequest, webhook_id: int) -> HttpResponse:
    """Enable (``active=1``: its failures are forgotten) or disable a hook by hand."""
    hook = _hook(request, webhook_id)
    active = request.POST.get("active") == "1"
    webhooks.webhook_update(webhook=hook, is_active=active)
    messages.success(request, _("Webhook enabled.") if active else _("Webhook disabled."))
    return redirect("curator-webhook", webhook_id=hook.pk)


@roles.roles_required(*CURATOR)
@require_POST
def webhook_secret(request: HttpRequest, webhook_id: int) -> HttpResponse:
    hook = webhooks.webhook_secret_rotate(webhook=_hook(request, webhook_id))
    _show_secret_once(request, hook)
    messages.success(request, _("New secret made; the old one no longer signs anything."))
    return redirect("curator-webhook", webhook_id=hook.pk)


@roles.roles_required(*CURATOR)
@require_POST
def webhook_delete(request: HttpRequest, webhook_id: int) -> HttpResponse:
    hook = _hook(request, webhook_id)
    project_id = hook.project_id
    webhooks.webhook_delete(webhook=hook)
    messages.success(request, _("Webhook deleted with its delivery log."))
    return redirect("curator-webhooks", project_id=project_id)
