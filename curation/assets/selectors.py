"""Reads of corpora and images, scoped like the platform's selectors: what is out of reach
answers like what is missing."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Q, QuerySet

from annotator.platform import roles
from annotator.platform.scoping import projects_for

from ..models import Corpus, Image, Sample


def corpora_for(user) -> QuerySet[Corpus]:
    """Corpora of the projects a curator (or admin) is a member of."""
    if not roles.has_role(user, [roles.CURATOR]):
        return Corpus.objects.none()
    return Corpus.objects.filter(project__in=projects_for(user))


def images_for(user) -> QuerySet[Image]:
    """Images a curator may open: used by a sample in reach, derived from one, or their own."""
    if roles.has_role(user, [roles.ADMIN]):
        return Image.objects.all()
    if not roles.has_role(user, [roles.CURATOR]):
        return Image.objects.none()
    in_reach = Sample.objects.filter(corpus__project__in=projects_for(user))
    return Image.objects.filter(
        Q(Exists(in_reach.filter(image=OuterRef("pk"))))
        | Q(Exists(in_reach.filter(image=OuterRef("derived_from"))))
        | Q(created_by=user)
    )
