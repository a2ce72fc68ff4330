"""Curation pages, all under ``curate/`` and named ``curator-*`` so the Curate tab lights up."""

from django.urls import include, path

urlpatterns = [
    path("curate/", include("curation.urls_assets")),
    path("curate/", include("curation.urls_scorers")),
    path("curate/", include("curation.urls_llm")),
    path("curate/", include("curation.recipes.naturalbench.urls")),
    path("curate/", include("curation.recipes.vhexpansion.urls")),
    path("curate/", include("curation.recipes.vlind.urls")),
    path("curate/", include("curation.recipes.visit.urls")),
]
