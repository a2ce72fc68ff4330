"""API token authentication that also loads the user's roles, in one query.

DRF's ``TokenAuthentication`` reads token and user through the ORM, then the role check reads
the user's groups with a second query: together about half the CPU of an annotator's ``next``.
Here one hand-written statement returns the user and their group names (one row per group), so
roles are as fresh as the token itself: nothing is cached across requests. Exchanging a password
for the token, and throttling that, is ``annotator.platform.login``.

Pages signed in by session do the same (``SessionAuthenticationMiddleware``): the user Django's
``ModelBackend`` would read comes with their groups in one statement.
"""

from __future__ import annotations

import functools

from django.conf import settings
from django.contrib import auth
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.auth.models import AnonymousUser
from django.db import connection
from django.utils.crypto import constant_time_compare
from django.utils.functional import SimpleLazyObject
from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions
from rest_framework.authtoken.models import Token

from .roles import remember_roles
from .sql_rows import Shape


@functools.cache
def _user_query(by: str = "token") -> tuple[Shape, str]:
    """The user's columns and the statement reading them with their group names, one row per
    group, ``by`` token key or user id (built once: the user model is known by then)."""
    shape = Shape(get_user_model(), "u")
    return shape, _sql(shape, by)


def _sql(shape: Shape, by: str) -> str:
    user = get_user_model()._meta
    groups = user.get_field("groups")
    through = groups.remote_field.through._meta
    if by == "token":
        source = (
            f'{Token._meta.db_table} t JOIN {user.db_table} u ON u."{user.pk.column}" = t.user_id'
        )
        where = "t.key = %s"
    else:
        source, where = f"{user.db_table} u", f'u."{user.pk.column}" = %s'
    return (
        f"SELECT {shape.columns}, g.name FROM {source}"
        f' LEFT JOIN {through.db_table} ug ON ug.{groups.m2m_column_name()} = u."{user.pk.column}"'
        f" LEFT JOIN {groups.related_model._meta.db_table} g"
        f" ON g.id = ug.{groups.m2m_reverse_name()}"
        f" WHERE {where}"
    )


def _user_with_roles(by: str, value):
    """The user (with ``roles.remember_roles`` set from their groups), or None."""
    shape, sql = _user_query(by)
    with connection.cursor() as cursor:
        cursor.execute(sql, [value])
        rows = cursor.fetchall()
    if not rows:
        return None
    user = shape.build(rows[0])
    remember_roles(user, [row[-1] for row in rows if row[-1] is not None])
    return user


class TokenAuthentication(authentication.TokenAuthentication):
    """``Authorization: Token <key>``, answered exactly like DRF's, in one round trip."""

    def authenticate_credentials(self, key):
        user = _user_with_roles("token", key)
        if user is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        if not user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        # The token object is only handed to ``request.auth``; its key is all callers use.
        token = Token(key=key, user=user)
        token._state.adding = False
        return user, token


def session_user(request):
    """``django.contrib.auth.get_user(request)``, step for step, except that a session signed
    in through ``ModelBackend`` (or a subclass keeping its ``get_user``) reads the user with
    their groups in one statement (``_user_with_roles``) instead of the user, then the groups
    at the first role check."""
    try:
        user_id = auth._get_user_session_key(request)
        backend_path = request.session[auth.BACKEND_SESSION_KEY]
    except KeyError:
        return AnonymousUser()
    if backend_path not in settings.AUTHENTICATION_BACKENDS:
        return AnonymousUser()
    backend = auth.load_backend(backend_path)
    if getattr(type(backend), "get_user", None) is ModelBackend.get_user:
        user = _user_with_roles("id", user_id)
        if user is not None and not backend.user_can_authenticate(user):
            user = None
    else:
        user = backend.get_user(user_id)
    # Verify the session (as Django does: the current secret, then the fallbacks).
    if hasattr(user, "get_session_auth_hash"):
        session_hash = request.session.get(auth.HASH_SESSION_KEY)
        if not session_hash:
            verified = False
        else:
            verified = constant_time_compare(session_hash, user.get_session_auth_hash())
        if not verified:
            if session_hash and any(
                constant_time_compare(session_hash, fallback)
                for fallback in user.get_session_auth_fallback_hash()
            ):
                request.session.cycle_key()
                request.session[auth.HASH_SESSION_KEY] = user.get_session_auth_hash()
            else:
                request.session.flush()
                user = None
    return user or AnonymousUser()


class SessionAuthenticationMiddleware(AuthenticationMiddleware):
    """Django's ``AuthenticationMiddleware`` with ``request.user`` from ``session_user``."""

    def process_request(self, request):
        super().process_request(request)
        request.user = SimpleLazyObject(lambda: session_user(request))
