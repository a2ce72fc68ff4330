"""Invitations: a one-time link that creates an account with a role."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from ..platform import roles
from ..platform.errors import Invalid, NotFound
from ..platform.models import Invitation, Project


def invitation_create(
    *, created_by, role: str, project: Project | None = None, days: int = 7
) -> Invitation:
    if role not in roles.ALL_ROLES:
        raise Invalid(_("Unknown role %(r)s.") % {"r": role})
    if role == roles.ADMIN and not roles.has_role(created_by, [roles.ADMIN]):
        raise Invalid(_("Only an admin can invite an admin."))
    return Invitation.objects.create(
        created_by=created_by,
        role=role,
        project=project,
        expires_at=timezone.now() + timedelta(days=days),
    )


def invitation_accept(*, token: str, username: str, password: str) -> AbstractBaseUser:
    User = get_user_model()
    with transaction.atomic():
        invitation = Invitation.objects.select_for_update().filter(token=token).first()
        if invitation is None or invitation.used_at or invitation.expires_at <= timezone.now():
            raise NotFound(_("This invitation link is not valid any more."))
        if User.objects.filter(username__iexact=username).exists():
            raise Invalid(_("That user name is taken."))
        user = User.objects.create_user(username=username, password=password)
        roles.grant_role(user, invitation.role)
        if invitation.project_id:
            invitation.project.members.add(user)
        invitation.used_at = timezone.now()
        invitation.used_by = user
        invitation.save(update_fields=["used_at", "used_by"])
    return user
