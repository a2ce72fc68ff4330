"""URLs of the VisIT-Bench pages; curation/urls.py mounts them under ``curate/``."""

from django.urls import path

from . import views

urlpatterns = [
    path("visit/", views.pipelines, name="curator-visit-pipelines"),
    path("projects/<int:project_id>/visit/new/", views.pipeline_new, name="curator-visit-new"),
    path("visit/<int:pipeline_id>/", views.pipeline_detail, name="curator-visit-pipeline"),
    path(
        "visit/<int:pipeline_id>/settings/", views.pipeline_settings, name="curator-visit-settings"
    ),
    path("visit/<int:pipeline_id>/import/", views.dataset_import, name="curator-visit-import"),
    path("visit/<int:pipeline_id>/fetch/", views.images_fetch, name="curator-visit-fetch"),
    path(
        "visit/<int:pipeline_id>/families/new/", views.family_new, name="curator-visit-family-new"
    ),
    path(
        "visit/<int:pipeline_id>/families/<int:family_id>/instructions/",
        views.instructions,
        name="curator-visit-instructions",
    ),
    path("visit/<int:pipeline_id>/instances/", views.instances, name="curator-visit-instances"),
    path("visit/<int:pipeline_id>/draft/", views.draft, name="curator-visit-draft"),
    path("visit/<int:pipeline_id>/publish/", views.publish, name="curator-visit-publish"),
    path("visit/<int:pipeline_id>/generate/", views.generate, name="curator-visit-generate"),
    path("visit/<int:pipeline_id>/pairs/", views.pairs, name="curator-visit-pairs"),
    path("visit/<int:pipeline_id>/sync/", views.sync, name="curator-visit-sync"),
    path("visit/<int:pipeline_id>/judge/", views.judge, name="curator-visit-judge"),
    path(
        "visit/<int:pipeline_id>/leaderboard/",
        views.leaderboard,
        name="curator-visit-leaderboard",
    ),
    path(
        "visit/<int:pipeline_id>/export/<str:what>.<str:fmt>",
        views.download,
        name="curator-visit-export",
    ),
    path(
        "visit/<int:pipeline_id>/exports/<int:job_id>/",
        views.export_file,
        name="curator-visit-export-file",
    ),
]
