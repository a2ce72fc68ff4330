"""The interface language, remembered on the person's profile as well as in the browser.

Django keeps the choice in a cookie (``set_language``), so a fresh browser shows English again
after login. Choosing a language while signed in also stores it on the profile
(:func:`profile_language_set`), and logging in puts the profile's language back into the cookie
(:func:`language_cookie_set`): no query on any other request.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.translation import check_for_language
from django.views.i18n import set_language

from .models import Profile


def profile_language_set(*, user, language: str) -> None:
    """Remember ``language`` (a code of settings.LANGUAGES) as ``user``'s interface language."""
    if language not in dict(settings.LANGUAGES):
        return
    Profile.objects.update_or_create(user=user, defaults={"language": language})


def profile_language(user) -> str:
    """The language ``user`` chose when signed in ("" when they never did)."""
    return Profile.objects.filter(user=user).values_list("language", flat=True).first() or ""


def language_cookie_set(response: HttpResponse, language: str) -> None:
    """The cookie Django's LocaleMiddleware reads, as ``set_language`` writes it."""
    if not language or not check_for_language(language):
        return
    response.set_cookie(
        settings.LANGUAGE_COOKIE_NAME,
        language,
        max_age=settings.LANGUAGE_COOKIE_AGE,
        path=settings.LANGUAGE_COOKIE_PATH,
        domain=settings.LANGUAGE_COOKIE_DOMAIN,
        secure=settings.LANGUAGE_COOKIE_SECURE,
        httponly=settings.LANGUAGE_COOKIE_HTTPONLY,
        samesite=settings.LANGUAGE_COOKIE_SAMESITE,
    )


def language_set(request: HttpRequest) -> HttpResponse:
    """Django's ``set_language`` (cookie, then back to ``next``), remembered on the profile too."""
    response = set_language(request)
    language = request.POST.get("language", "")
    if request.method == "POST" and request.user.is_authenticated and check_for_language(language):
        profile_language_set(user=request.user, language=language)
    return response


language_set.roles = ()  # anyone, signed in or not, as Django's own view
