from csp.decorators import csp_update
from django.conf import settings
from django.contrib import admin
from django.contrib.auth.decorators import login_required
from django.urls import include, path
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularRedocView,
    SpectacularSwaggerSplitView,
)

from annotator.platform.apidocs import redoc_bundle
from annotator.platform.files import media
from annotator.platform.language import language_set
from annotator.platform.login import token_obtain
from curation.recipes.framework.registry import recipes

# The schema answers 401 without a session or token (SERVE_PERMISSIONS); the two documentation
# pages send a visitor who is not logged in to the login page. Both pages load Swagger UI and ReDoc
# from the app's static files (drf-spectacular-sidecar). Swagger UI's start-up script is a separate
# URL (the split view) so no inline script is needed; ReDoc writes <style> elements at run time
# and searches in a blob: worker, so its page alone relaxes those two directives.
redoc = csp_update({"style-src": ["'unsafe-inline'"], "worker-src": ["blob:"]})(
    SpectacularRedocView.as_view(url_name="api-schema")
)

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path(
        "api/docs/",
        login_required(SpectacularSwaggerSplitView.as_view(url_name="api-schema")),
        name="api-docs",
    ),
    path("api/redoc/", login_required(redoc), name="api-redoc"),
    # ReDoc's script without its CDN logo (platform/apidocs.py); public, like a static file
    path("api/redoc/redoc.standalone.js", redoc_bundle, name="api-redoc-bundle"),
    path("api/token/", token_obtain, name="api-token"),
    path("api/eval/", include("evaluation.api_urls")),
    path("api/recipes/", include("curation.recipes.framework.api_urls")),
    *(path(f"api/{r.slug}/", include(r.api_urls)) for r in recipes() if r.api_urls),
    path("api/", include("annotator.api_urls")),
    path("eval/", include("evaluation.urls")),
    path("i18n/setlang/", language_set, name="set_language"),
    path("", include("curation.urls")),
    path("", include("annotator.urls")),
]
# Media are never public: signed-in people, declared prefixes only (platform/files.py); exports
# and uploaded archives are read only through their checked download views, in DEBUG too.
if not settings.MEDIA_URL.startswith(("http://", "https://", "//")):
    urlpatterns.append(path(f"{settings.MEDIA_URL.strip('/')}/<path:path>", media, name="media"))
