"""Projects: creating one, and taking a person out of one."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction
from django.utils.translation import gettext as _

from ..platform.errors import Invalid, NotFound
from ..platform.models import Project
from .leases import annotator_leases_revoke


def project_create(
    *, name: str, slug: str, description: str = "", created_by=None, members: Iterable = ()
) -> Project:
    with transaction.atomic():
        project = Project.objects.create(
            name=name, slug=slug, description=description, created_by=created_by
        )
        project.members.add(*members, *([created_by] if created_by else []))
    return project


def project_member_remove(*, project: Project, user, by=None, now=None) -> int:
    """Take ``user`` out of ``project``; their live leases there end at once.

    ``by`` (the curator removing them) may not remove themselves: a curator who did would lose
    the page they did it from. Returns how many leases ended.
    """
    if by is not None and by.pk == user.pk:
        raise Invalid(_("You cannot remove yourself from a project; ask another curator."))
    if not project.members.filter(pk=user.pk).exists():
        raise NotFound(_("%(u)s is not a member of this project.") % {"u": user.username})
    project.members.remove(user)
    return annotator_leases_revoke(annotator=user, now=now)
