"""URLs of the curation llm pages (see curation/urls.py)."""

urlpatterns: list = []
