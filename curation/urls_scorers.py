"""URLs of the curation scorers pages (see curation/urls.py)."""

urlpatterns: list = []
