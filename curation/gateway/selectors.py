"""What a user may see of the gateway's records (anything else answers 404)."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from annotator.platform import roles
from annotator.platform.scoping import projects_for

from ..models import Generation, LLMProvider, TemplatePin


def generations_for(user) -> QuerySet[Generation]:
    """Admins: all. Curators and researchers: their projects' generations and project-less ones
    (seeded defaults, command-line runs)."""
    if roles.has_role(user, [roles.ADMIN]):
        return Generation.objects.all()
    if not roles.has_role(user, [roles.CURATOR, roles.RESEARCHER]):
        return Generation.objects.none()
    return Generation.objects.filter(Q(project__in=projects_for(user)) | Q(project__isnull=True))


def providers_for(user) -> QuerySet[LLMProvider]:
    """Curators see shared providers and their projects' own; admins see all."""
    if roles.has_role(user, [roles.ADMIN]):
        return LLMProvider.objects.all()
    if not roles.has_role(user, [roles.CURATOR]):
        return LLMProvider.objects.none()
    return LLMProvider.objects.filter(Q(project__isnull=True) | Q(project__in=projects_for(user)))


def providers_of(project) -> QuerySet[LLMProvider]:
    """The providers a recipe object of ``project`` may call: the shared ones and the project's
    own, by name."""
    return LLMProvider.objects.filter(Q(project=project) | Q(project__isnull=True)).order_by("name")


def provider_choices_for(user) -> QuerySet[LLMProvider]:
    """Providers a reader of the generations log may filter by (names only, no settings)."""
    if roles.has_role(user, [roles.ADMIN]):
        return LLMProvider.objects.all()
    if not roles.has_role(user, [roles.CURATOR, roles.RESEARCHER]):
        return LLMProvider.objects.none()
    return LLMProvider.objects.filter(Q(project__isnull=True) | Q(project__in=projects_for(user)))


def provider_editable(user, provider: LLMProvider) -> bool:
    """Shared providers serve every project, so only admins change them."""
    if roles.has_role(user, [roles.ADMIN]):
        return True
    if provider.project_id is None or not roles.has_role(user, [roles.CURATOR]):
        return False
    return projects_for(user).filter(pk=provider.project_id).exists()


def template_pins_for(user) -> QuerySet[TemplatePin]:
    """The template versions the user's projects render (curators and researchers: their
    projects'; admins: every project's), with the project and the pinned version loaded."""
    if not roles.has_role(user, [roles.CURATOR, roles.RESEARCHER]):
        return TemplatePin.objects.none()
    return TemplatePin.objects.filter(project__in=projects_for(user)).select_related(
        "project", "template", "pinned_by"
    )
