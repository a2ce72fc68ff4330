"""URLs of the NaturalBench pages; curation/urls.py mounts them under ``curate/``."""

from django.urls import path

from . import views

urlpatterns = [
    path("naturalbench/", views.pipelines, name="curator-nb-pipelines"),
    path("projects/<int:project_id>/naturalbench/new/", views.pipeline_new, name="curator-nb-new"),
    path("naturalbench/<int:pipeline_id>/", views.pipeline_detail, name="curator-nb-pipeline"),
    path(
        "naturalbench/<int:pipeline_id>/settings/",
        views.pipeline_settings,
        name="curator-nb-settings",
    ),
    path(
        "naturalbench/<int:pipeline_id>/run/<slug:stage>/",
        views.stage_start,
        name="curator-nb-stage",
    ),
    path("naturalbench/<int:pipeline_id>/pairs/", views.pairs, name="curator-nb-pairs"),
    path("naturalbench/<int:pipeline_id>/questions/", views.questions, name="curator-nb-questions"),
    path("naturalbench/<int:pipeline_id>/samples/", views.samples, name="curator-nb-samples"),
    path(
        "naturalbench/<int:pipeline_id>/versions/<int:version_id>/",
        views.version_detail,
        name="curator-nb-version",
    ),
    path(
        "naturalbench/<int:pipeline_id>/versions/<int:version_id>/<slug:fmt>/",
        views.version_download,
        name="curator-nb-download",
    ),
]
