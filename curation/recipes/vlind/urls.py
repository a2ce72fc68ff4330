"""URLs of the VLind-Bench pages; curation/urls.py mounts them under ``curate/``."""

from django.urls import path

from . import views

urlpatterns = [
    path("vlind/", views.benches, name="curator-vlind-benches"),
    path("projects/<int:project_id>/vlind/new/", views.bench_new, name="curator-vlind-new"),
    path("vlind/<int:bench_id>/", views.bench_detail, name="curator-vlind-bench"),
    path("vlind/<int:bench_id>/settings/", views.bench_settings, name="curator-vlind-settings"),
    path("vlind/<int:bench_id>/concepts/new/", views.concept_new, name="curator-vlind-concept-new"),
    path(
        "vlind/<int:bench_id>/concepts/<int:concept_id>/",
        views.concept_edit,
        name="curator-vlind-concept",
    ),
    path("vlind/<int:bench_id>/draft/", views.draft, name="curator-vlind-draft"),
    path("vlind/<int:bench_id>/images/", views.generate_images, name="curator-vlind-generate"),
    path("vlind/<int:bench_id>/nouns/", views.draft_nouns, name="curator-vlind-nouns-draft"),
    path("vlind/<int:bench_id>/triples/", views.triples, name="curator-vlind-triples"),
    path(
        "vlind/<int:bench_id>/triples/<int:triple_id>/",
        views.triple_detail,
        name="curator-vlind-triple",
    ),
    path(
        "vlind/<int:bench_id>/triples/<int:triple_id>/images/",
        views.triple_images,
        name="curator-vlind-upload",
    ),
    path(
        "vlind/<int:bench_id>/triples/<int:triple_id>/factual/",
        views.triple_factual,
        name="curator-vlind-factual",
    ),
    path(
        "vlind/<int:bench_id>/triples/<int:triple_id>/nouns/",
        views.triple_nouns,
        name="curator-vlind-nouns",
    ),
    path(
        "vlind/<int:bench_id>/triples/<int:triple_id>/best/",
        views.triple_best,
        name="curator-vlind-best",
    ),
    path("vlind/<int:bench_id>/publish/", views.publish, name="curator-vlind-publish"),
    path("vlind/<int:bench_id>/export/", views.download, name="curator-vlind-export"),
    path(
        "vlind/<int:bench_id>/versions/<int:version_id>/export/",
        views.version_download,
        name="curator-vlind-version-export",
    ),
    path(
        "vlind/<int:bench_id>/exports/<int:job_id>/",
        views.export_file,
        name="curator-vlind-export-file",
    ),
]
