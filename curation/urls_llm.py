"""URLs of the curation llm pages (see curation/urls.py)."""

from django.urls import path

from .views import llm_providers, llm_templates

urlpatterns = [
    path("llm/templates/", llm_templates.templates, name="curator-llm-templates"),
    path("llm/templates/seed/", llm_templates.templates_seed, name="curator-llm-templates-seed"),
    path("llm/templates/new/", llm_templates.template_new, name="curator-llm-template-new"),
    path("llm/templates/<slug:name>/", llm_templates.template_detail, name="curator-llm-template"),
    path(
        "llm/templates/<slug:name>/edit/",
        llm_templates.template_edit,
        name="curator-llm-template-edit",
    ),
    path(
        "llm/templates/<slug:name>/restore/<int:version>/",
        llm_templates.template_restore,
        name="curator-llm-template-restore",
    ),
    path("llm/providers/", llm_providers.providers, name="curator-llm-providers"),
    path("llm/providers/new/", llm_providers.provider_new, name="curator-llm-provider-new"),
    path(
        "llm/providers/<int:provider_id>/edit/",
        llm_providers.provider_edit,
        name="curator-llm-provider-edit",
    ),
    path(
        "llm/providers/<int:provider_id>/test/",
        llm_providers.provider_test,
        name="curator-llm-provider-test",
    ),
    path("llm/generations/", llm_templates.generations, name="curator-llm-generations"),
    path(
        "llm/generations/<int:generation_id>/",
        llm_templates.generation_detail,
        name="curator-llm-generation",
    ),
]
