"""Project-wide middleware."""

from csp.middleware import CSPMiddleware
from django.conf import settings


class ContentSecurityPolicyMiddleware(CSPMiddleware):
    """django-csp's middleware, except on Django's own DEBUG error pages.

    With DEBUG on, a 404 or 500 is Django's technical page, styled and scripted inline; under the
    policy it would show unstyled and without its toggles. Those pages exist only in DEBUG, so
    production answers keep the policy whatever their status.
    """

    def process_response(self, request, response):
        if settings.DEBUG and response.status_code in (404, 500):
            response._csp_exempt = True
        return super().process_response(request, response)
