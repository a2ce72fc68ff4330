"""HTML routes, mounted at /eval/ (names prefixed ``eval-``)."""

from .views import urlpatterns

__all__ = ["urlpatterns"]
