"""URLs of the curation assets pages (see curation/urls.py)."""

urlpatterns: list = []
