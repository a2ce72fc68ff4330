from django.conf import settings
from django.conf.urls.static import static
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

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
if settings.DEBUG:
    urlpatterns += static(settings.MEDIA_URL, document_root=settings.MEDIA_ROOT)
