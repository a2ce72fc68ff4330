"""Curation pages, all under ``curate/`` and named ``curator-*`` so the Curate tab lights up:
the corpora and images, the scorers, the LLM templates, providers and generations. Each
registered recipe brings its patterns (``framework.urls.patterns_for``)."""

from django.urls import include, path

from curation.recipes.framework.registry import recipes
from curation.recipes.framework.urls import dataset_patterns, patterns_for, worker_patterns_for

from .views import assets, llm_pins, llm_providers, llm_templates, scorers

pages = [
    path("corpora/", assets.corpora, name="curator-corpora"),
    path(
        "projects/<int:project_id>/corpora/",
        assets.project_corpora,
        name="curator-project-corpora",
    ),
    path("corpora/<int:corpus_id>/", assets.corpus_detail, name="curator-corpus"),
    path("images/<int:image_id>/", assets.image_detail, name="curator-image"),
    path("scorers/", scorers.scorer_list, name="curator-scorers"),
    path("scorers/new/", scorers.scorer_new, name="curator-scorer-new"),
    path("scorers/default/", scorers.scorer_add_default, name="curator-scorer-default"),
    path("scorers/tiny/", scorers.scorer_add_tiny, name="curator-scorer-tiny"),
    path("scorers/<int:scorer_id>/edit/", scorers.scorer_edit, name="curator-scorer-edit"),
    path("scorers/<int:scorer_id>/embed/", scorers.scorer_embed, name="curator-scorer-embed"),
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
    path(
        "llm/templates/<slug:name>/projects/<int:project_id>/",
        llm_pins.template_pin,
        name="curator-llm-template-pin",
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

urlpatterns = [
    path("curate/", include(pages)),
    *(path("curate/", include(patterns_for(recipe))) for recipe in recipes()),
    *(path("work/", include(worker_patterns_for(r))) for r in recipes() if r.workers),
    path("datasets/", include(dataset_patterns(recipes()))),
]
