"""Password checks and their throttling (django-axes).

Passwords are checked in three places, all through ``django.contrib.auth.authenticate`` with the
request, so django-axes counts the failures of each: the login page, the admin's login page and
``POST /api/token/`` (``token_obtain``, here). ``lockout_response`` is what a locked-out person
sees and ``client_ip`` is the address failures are counted against (settings.py, "Login
throttling").
"""

from __future__ import annotations

import functools
import ipaddress
import logging

from axes.helpers import get_cool_off
from django.conf import settings
from django.contrib.auth import authenticate
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.authtoken.models import Token
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

logger = logging.getLogger(__name__)


def client_ip(request: HttpRequest) -> str | None:
    """The client's address: REMOTE_ADDR, or behind BLINDSPOT_PROXY_COUNT proxies the address the
    outermost of them saw (counted from the right of X-Forwarded-For, which a client can only
    prepend to). Anything that is not an IP address falls back to REMOTE_ADDR."""
    hops = settings.BLINDSPOT_PROXY_COUNT
    if hops == 0 and "HTTP_X_FORWARDED_FOR" in request.META:
        _warn_proxy_once()
    if hops > 0:
        forwarded = [a.strip() for a in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
        forwarded = [a for a in forwarded if a]
        if len(forwarded) >= hops:
            try:
                return str(ipaddress.ip_address(forwarded[-hops]))
            except ValueError:
                pass
    return request.META.get("REMOTE_ADDR")


@functools.cache
def _warn_proxy_once() -> None:
    # Behind a proxy every client has the proxy's address: a few wrong passwords from anyone
    # would lock everybody's address. Said once per process, in the log the operator reads.
    logger.warning(
        "A login request carried X-Forwarded-For but BLINDSPOT_PROXY_COUNT is 0: behind a "
        "proxy, failed logins are counted against the proxy's address. Set "
        "BLINDSPOT_PROXY_COUNT to the number of proxies in front of the app."
    )


def _wants_json(request: HttpRequest) -> bool:
    return request.path.startswith("/api/") or "application/json" in request.headers.get(
        "Accept", ""
    )


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials=None
) -> HttpResponse:
    """429 after too many failed logins: a page (or JSON for the API) saying how long to wait."""
    cool_off = get_cool_off(request)
    seconds = max(1, int(cool_off.total_seconds())) if cool_off else 0
    minutes = max(1, round(seconds / 60))
    if seconds:
        wait = ngettext("Try again in %(n)d minute.", "Try again in %(n)d minutes.", minutes) % {
            "n": minutes
        }
    else:
        wait = _("Ask an administrator to unlock it.")
    message = _("Too many failed logins for this account or from this address.") + " " + wait
    if _wants_json(request):
        body = {"message": message, "retry_after_seconds": seconds}
        response: HttpResponse = JsonResponse(body, status=429)
    else:
        context = {"message": message}
        response = render(request, "registration/lockout.html", context, status=429)
    if seconds:
        response["Retry-After"] = str(seconds)
    return response


class TokenObtainView(APIView):
    """``POST /api/token/`` with a user name and password: that user's API token (made when
    missing). Throttled like the login page; the token page shows the same key to a browser."""

    roles = ()  # public: the password is the credential
    authentication_classes: list = []
    permission_classes = [AllowAny]

    class Input(serializers.Serializer):
        username = serializers.CharField(max_length=150, trim_whitespace=False)
        password = serializers.CharField(max_length=4096, trim_whitespace=False)

    @extend_schema(
        request=inline_serializer(
            "TokenObtainIn",
            {"username": serializers.CharField(), "password": serializers.CharField()},
        ),
        responses={
            200: inline_serializer("TokenObtainOut", {"token": serializers.CharField()}),
            400: OpenApiResponse(description="Wrong user name or password, or a field missing."),
            429: OpenApiResponse(
                description="Locked: AXES_FAILURE_LIMIT (5) failures for this user name or "
                "from this address; try again AXES_COOLOFF_MINUTES (15) after the last one "
                "(Retry-After, retry_after_seconds)."
            ),
        },
        description="Exchange a user name and password for the API token (the key on the "
        "token page). Throttled like the login page.",
    )
    def post(self, request: Request) -> Response:
        data = self.Input(data=request.data)
        data.is_valid(raise_exception=True)
        # The Django request, not DRF's wrapper: django-axes marks it when it refuses, and its
        # middleware then answers with ``lockout_response`` instead of this 400.
        user = authenticate(request._request, **data.validated_data)
        if user is None:
            return Response({"message": _("Wrong user name or password.")}, status=400)
        token, _created = Token.objects.get_or_create(user=user)
        return Response({"token": token.key})


token_obtain = TokenObtainView.as_view()
