"""Pages signed in by session read the user with their roles in one statement
(``platform.auth.session_user``) and the session in one (``platform.sessions``): each answers
exactly as Django's ``get_user`` and database session store do, case for case."""

from __future__ import annotations

import pytest
from django.contrib import auth
from django.contrib.sessions.backends.db import SessionStore as DjangoStore
from django.contrib.sessions.models import Session
from django.db import connection
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotator.platform import roles
from annotator.platform.auth import session_user
from annotator.platform.sessions import SessionStore
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
MODEL = "django.contrib.auth.backends.ModelBackend"


def request_with(user=None, backend=MODEL, hash_=None, store=SessionStore):
    request = RequestFactory().get("/")
    request.session = store()
    if user is not None:
        request.session[auth.SESSION_KEY] = str(user.pk)
        request.session[auth.BACKEND_SESSION_KEY] = backend
        request.session[auth.HASH_SESSION_KEY] = (
            user.get_session_auth_hash() if hash_ is None else hash_
        )
        request.session.save()
    return request


def both(request_of) -> tuple:
    """(ours, Django's) for two requests made alike."""
    return session_user(request_of()), auth.get_user(request_of())


def same(ours, django) -> bool:
    if not ours.is_authenticated or not django.is_authenticated:
        return ours.is_authenticated == django.is_authenticated
    fields = type(django)._meta.concrete_fields
    return [getattr(ours, f.attname) for f in fields] == [
        getattr(django, f.attname) for f in fields
    ]


def test_a_signed_in_user_comes_with_their_roles_in_one_statement():
    # Given a crowdworker who is also a curator, signed in
    backend = MODEL
    user = UserFactory(role=roles.CROWDWORKER)
    roles.grant_role(user, roles.CURATOR)
    request = request_with(user, backend)
    # When the request's user is read
    with CaptureQueriesContext(connection) as queries:
        found = session_user(request)
        mine = roles.user_roles(found)
    # Then it is Django's user, and the roles came with it: one statement
    assert same(found, auth.get_user(request_with(user, backend)))
    assert mine == {roles.CROWDWORKER, roles.CURATOR}
    assert len(queries) == 1


def test_every_way_a_session_can_fail_answers_as_django():
    user = UserFactory(role=roles.CROWDWORKER)
    inactive = UserFactory(is_active=False)
    cases = {
        "signed in": lambda: request_with(user),
        "no one": lambda: request_with(None),
        "a backend no longer listed": lambda: request_with(user, backend="x.y.Backend"),
        "an inactive user": lambda: request_with(inactive),
        "a wrong hash": lambda: request_with(user, hash_="0" * 64),
        "no hash": lambda: request_with(user, hash_=""),
    }
    for name, make in cases.items():
        ours, django = both(make)
        assert same(ours, django), name
    # A user deleted since they signed in
    gone = UserFactory()
    made = [request_with(gone), request_with(gone)]
    gone.delete()
    assert not session_user(made[0]).is_authenticated
    assert not auth.get_user(made[1]).is_authenticated
    # A wrong hash ends the session, as Django's does
    request = request_with(user, hash_="0" * 64)
    session_user(request)
    assert auth.SESSION_KEY not in request.session


def test_a_hash_made_with_an_old_secret_is_renewed_as_django_does(settings):
    # Given a session signed in under a secret since rotated to the fallbacks
    user = UserFactory()
    old_secret = "an-old-secret-" + "x" * 40
    settings.SECRET_KEY = old_secret
    stale = user.get_session_auth_hash()
    settings.SECRET_KEY = "the-new-secret-" + "y" * 40
    settings.SECRET_KEY_FALLBACKS = [old_secret]
    request = request_with(user, hash_=stale)
    key = request.session.session_key
    # When its user is read: still signed in, the hash renewed and the key cycled
    assert session_user(request).pk == user.pk
    assert request.session[auth.HASH_SESSION_KEY] == user.get_session_auth_hash() != stale
    assert request.session.session_key != key


def test_the_session_store_reads_what_djangos_reads():
    # Given a session saved through Django's store
    theirs = DjangoStore()
    theirs["answer"] = 42
    theirs.create()
    # When ours loads it (and an unknown key, and an expired one)
    assert SessionStore(theirs.session_key).load() == {"answer": 42}
    assert SessionStore(theirs.session_key).load() == DjangoStore(theirs.session_key).load()
    unknown = SessionStore("k" * 32)
    assert unknown.load() == {} and unknown.session_key is None
    Session.objects.filter(session_key=theirs.session_key).update(expire_date="2000-01-01T00:00Z")
    expired = SessionStore(theirs.session_key)
    assert expired.load() == {} and expired.session_key is None


def test_a_page_reads_session_user_and_roles_in_two_statements(client, crowdworker):
    # Given a crowdworker signed in through the login page
    client.force_login(crowdworker)
    # When their home page is read, the first statements are the session, then the user with
    # their groups; no other statement reads the user or the groups
    with CaptureQueriesContext(connection) as queries:
        assert client.get(reverse("home")).status_code == 200
    sql = [q["sql"] for q in queries.captured_queries]
    assert "django_session" in sql[0] and "auth_group" in sql[1] and "auth_user" in sql[1]
    assert not [s for s in sql[2:] if 'FROM "auth_group"' in s or 'FROM "auth_user"' in s]
