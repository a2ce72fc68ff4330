"""Invitations (a one-time link that creates an account) and the API token page."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from rest_framework.authtoken.models import Token

from .. import forms, services
from ..platform import roles
from ..platform.errors import NotFound, ServiceError
from ..platform.models import Invitation
from ..platform.scoping import (
    projects_for,
)
from .base import CURATOR, EVERYONE


def _invites_for(user):
    """The invitations of the user's projects and the project-less ones they made. Someone
    removed from a project no longer sees its invitation links (one would let them back in)."""
    qs = Invitation.objects.select_related("project", "created_by", "used_by")
    if roles.has_role(user, [roles.ADMIN]):
        return qs
    return qs.filter(Q(project__isnull=True, created_by=user) | Q(project__in=projects_for(user)))


@roles.roles_required(*CURATOR)
def invites(request: HttpRequest) -> HttpResponse:
    projects_qs = projects_for(request.user)
    form = forms.InviteForm(request.POST or None, user=request.user, projects=projects_qs)
    created = None
    if request.method == "POST" and form.is_valid():
        try:
            created = services.invitation_create(
                created_by=request.user,
                role=form.cleaned_data["role"],
                project=form.cleaned_data["project"],
                days=form.cleaned_data["days"],
            )
        except ServiceError as exc:
            form.add_error("role", exc.message)
        else:
            messages.success(request, _("Invitation created. Copy the link and send it."))
            form = forms.InviteForm(user=request.user, projects=projects_qs)
    now = timezone.now()
    items = list(_invites_for(request.user)[:200])
    for inv in items:
        inv.status = "used" if inv.used_at else ("expired" if inv.expires_at <= now else "unused")
        inv.link = request.build_absolute_uri(reverse("invite-accept", args=[inv.token]))
    return render(
        request,
        "annotator/curator/invites.html",
        {
            "form": form,
            "invites": items,
            "created": created,
            "created_link": request.build_absolute_uri(
                reverse("invite-accept", args=[created.token])
            )
            if created
            else "",
        },
    )


def invite_accept(request: HttpRequest, token: str) -> HttpResponse:
    """Public: a one-time link creates an account with the invitation's role."""
    invitation = (
        Invitation.objects.select_related("project")
        .filter(token=token, used_at__isnull=True, expires_at__gt=timezone.now())
        .first()
    )
    if invitation is None:
        raise Http404
    form = forms.InviteAcceptForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            user = services.invitation_accept(
                token=token,
                username=form.cleaned_data["username"],
                password=form.cleaned_data["password1"],
            )
        except NotFound as exc:
            raise Http404 from exc
        except ServiceError as exc:
            form.add_error("username", exc.message)
        else:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(request, _("Welcome, %(u)s!") % {"u": user.username})
            return redirect("home")
    return render(
        request,
        "annotator/accounts/invite_accept.html",
        {
            "form": form,
            "invitation": invitation,
            "role_label": roles.ROLE_LABELS.get(invitation.role, invitation.role),
        },
    )


invite_accept.roles = ()  # type: ignore[attr-defined]  # public: the token is the credential


@roles.roles_required(*EVERYONE)
def token(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        Token.objects.filter(user=request.user).delete()
        Token.objects.create(user=request.user)
        messages.success(request, _("A new token was made; the old one no longer works."))
        return redirect("token")
    tok, _created = Token.objects.get_or_create(user=request.user)
    return render(request, "annotator/accounts/token.html", {"token": tok})
