"""URLs of the curation assets pages (see curation/urls.py)."""

from django.urls import path

from .views import assets as views

urlpatterns = [
    path("corpora/", views.corpora, name="curator-corpora"),
    path(
        "projects/<int:project_id>/corpora/",
        views.project_corpora,
        name="curator-project-corpora",
    ),
    path("corpora/<int:corpus_id>/", views.corpus_detail, name="curator-corpus"),
    path("images/<int:image_id>/", views.image_detail, name="curator-image"),
]
