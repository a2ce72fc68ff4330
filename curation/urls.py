"""Curation pages, all under ``curate/`` and named ``curator-*`` so the Curate tab lights up.
Each registered recipe brings its patterns (``framework.urls.patterns_for``)."""

from django.urls import include, path

from curation.recipes.framework.registry import recipes
from curation.recipes.framework.urls import patterns_for

urlpatterns = [
    path("curate/", include("curation.urls_assets")),
    path("curate/", include("curation.urls_scorers")),
    path("curate/", include("curation.urls_llm")),
    *(path("curate/", include(patterns_for(recipe))) for recipe in recipes()),
]
