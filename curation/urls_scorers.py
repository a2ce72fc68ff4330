"""URLs of the curation scorers pages (see curation/urls.py)."""

from django.urls import path

from .views import scorers as views

urlpatterns = [
    path("scorers/", views.scorer_list, name="curator-scorers"),
    path("scorers/new/", views.scorer_new, name="curator-scorer-new"),
    path("scorers/default/", views.scorer_add_default, name="curator-scorer-default"),
    path("scorers/tiny/", views.scorer_add_tiny, name="curator-scorer-tiny"),
    path("scorers/<int:scorer_id>/edit/", views.scorer_edit, name="curator-scorer-edit"),
    path("scorers/<int:scorer_id>/embed/", views.scorer_embed, name="curator-scorer-embed"),
]
