"""URLs of the curation llm pages (see curation/urls.py)."""

from django.urls import path

from .views import llm

urlpatterns = [
    path("llm/templates/", llm.templates, name="curator-llm-templates"),
    path("llm/templates/seed/", llm.templates_seed, name="curator-llm-templates-seed"),
    path("llm/templates/new/", llm.template_new, name="curator-llm-template-new"),
    path("llm/templates/<slug:name>/", llm.template_detail, name="curator-llm-template"),
    path("llm/templates/<slug:name>/edit/", llm.template_edit, name="curator-llm-template-edit"),
    path(
        "llm/templates/<slug:name>/restore/<int:version>/",
        llm.template_restore,
        name="curator-llm-template-restore",
    ),
    path("llm/providers/", llm.providers, name="curator-llm-providers"),
    path("llm/providers/new/", llm.provider_new, name="curator-llm-provider-new"),
    path(
        "llm/providers/<int:provider_id>/edit/", llm.provider_edit, name="curator-llm-provider-edit"
    ),
    path(
        "llm/providers/<int:provider_id>/test/", llm.provider_test, name="curator-llm-provider-test"
    ),
    path("llm/generations/", llm.generations, name="curator-llm-generations"),
    path(
        "llm/generations/<int:generation_id>/",
        llm.generation_detail,
        name="curator-llm-generation",
    ),
]
