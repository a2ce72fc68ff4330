from django.conf import settings
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from annotator.files import media

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/eval/", include("evaluation.api_urls")),
    path("api/visit/", include("curation.recipes.visit.api_urls")),
    path("api/", include("annotator.api_urls")),
    path("eval/", include("evaluation.urls")),
    path("i18n/", include("django.conf.urls.i18n")),
    path("", include("curation.urls")),
    path("", include("annotator.urls")),
]
# Media are never public: signed-in people, declared prefixes only (annotator/files.py); exports
# and uploaded archives are read only through their checked download views, in DEBUG too.
if not settings.MEDIA_URL.startswith(("http://", "https://", "//")):
    urlpatterns.append(path(f"{settings.MEDIA_URL.strip('/')}/<path:path>", media, name="media"))
