"""Roles are Django groups. Every view and endpoint declares the roles it serves."""

from collections.abc import Callable, Iterable
from functools import wraps

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, Group
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse
from django.utils.translation import gettext_lazy as _
from rest_framework.permissions import BasePermission

CROWDWORKER = "crowdworker"
CURATOR = "curator"
RESEARCHER = "researcher"
ADMIN = "admin"
ALL_ROLES = (CROWDWORKER, CURATOR, RESEARCHER, ADMIN)
ROLE_LABELS = {
    CROWDWORKER: _("Crowdworker"),
    CURATOR: _("Curator"),
    RESEARCHER: _("Researcher"),
    ADMIN: _("Admin"),
}


def user_roles(user: AbstractBaseUser | AnonymousUser) -> frozenset[str]:
    """The user's roles, cached on the user object for the request."""
    if not user.is_authenticated:
        return frozenset()
    cached = getattr(user, "_blindspot_roles", None)
    if cached is None:
        cached = remember_roles(user, user.groups.values_list("name", flat=True))  # type: ignore[arg-type]
    return cached


def remember_roles(user: AbstractBaseUser, group_names: Iterable[str]) -> frozenset[str]:
    """Set the user's roles for this request from group names read with the user."""
    names = set(group_names)
    if user.is_superuser:
        names.add(ADMIN)
    roles = frozenset(n for n in names if n in ALL_ROLES)
    user._blindspot_roles = roles  # type: ignore[attr-defined]
    return roles


def has_role(user: AbstractBaseUser | AnonymousUser, roles: Iterable[str]) -> bool:
    """Admins pass every role check."""
    mine = user_roles(user)
    return ADMIN in mine or bool(mine.intersection(roles))


def grant_role(user: AbstractBaseUser, role: str) -> None:
    if role not in ALL_ROLES:
        raise ValueError(f"Unknown role {role!r}; expected one of {', '.join(ALL_ROLES)}.")
    group, _ = Group.objects.get_or_create(name=role)
    user.groups.add(group)  # type: ignore[attr-defined]
    if hasattr(user, "_blindspot_roles"):
        del user._blindspot_roles  # type: ignore[attr-defined]


def roles_required(*roles: str) -> Callable:
    """View decorator: anonymous users go to the login page, users without the role get 404.

    A 404 (not 403) so that a page outside someone's reach looks exactly like a missing one.
    """

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not has_role(request.user, roles):
                raise Http404
            return view(request, *args, **kwargs)

        wrapped.roles = roles  # type: ignore[attr-defined]
        return wrapped

    return decorator


class RolePermission(BasePermission):
    """DRF: the view's ``roles`` attribute lists who may call it; others get 404."""

    def has_permission(self, request, view) -> bool:
        if not request.user or not request.user.is_authenticated:
            return False
        if not has_role(request.user, getattr(view, "roles", ())):
            raise Http404
        return True


def roles_context(request: HttpRequest) -> dict:
    roles = user_roles(request.user) if hasattr(request, "user") else frozenset()
    return {
        "my_roles": roles,
        "is_admin": ADMIN in roles,
        "is_curator": bool(roles & {CURATOR, ADMIN}),
        "is_researcher": bool(roles & {RESEARCHER, ADMIN}),
        "is_crowdworker": bool(roles & {CROWDWORKER, ADMIN}),
    }
