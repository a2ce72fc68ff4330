"""URLs of the VHExpansion pages; curation/urls.py mounts them under ``curate/``."""

from django.urls import path

from . import views

urlpatterns = [
    path("vhexpansion/", views.case_sets, name="curator-vhx-sets"),
    path("projects/<int:project_id>/vhexpansion/new/", views.case_set_new, name="curator-vhx-new"),
    path(
        "projects/<int:project_id>/vhexpansion/from-naturalbench/",
        views.case_set_from_naturalbench,
        name="curator-vhx-from-naturalbench",
    ),
    path("vhexpansion/<int:set_id>/", views.case_set_detail, name="curator-vhx-set"),
    path("vhexpansion/<int:set_id>/cases/", views.cases, name="curator-vhx-cases"),
    path(
        "vhexpansion/<int:set_id>/settings/", views.case_set_settings, name="curator-vhx-settings"
    ),
    path("vhexpansion/<int:set_id>/negate/", views.negate, name="curator-vhx-negate"),
    path("vhexpansion/<int:set_id>/perturb/", views.perturb, name="curator-vhx-perturb"),
    path(
        "vhexpansion/<int:set_id>/adversarial/", views.adversarial, name="curator-vhx-adversarial"
    ),
    path("vhexpansion/<int:set_id>/publish/", views.publish, name="curator-vhx-publish"),
    path("vhexpansion/<int:set_id>/export/<str:fmt>/", views.download, name="curator-vhx-export"),
    path(
        "vhexpansion/<int:set_id>/exports/<int:job_id>/",
        views.export_file,
        name="curator-vhx-export-file",
    ),
]
