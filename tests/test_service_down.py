"""PostgreSQL down (issue 23, item 4): ``/api/`` answers JSON 503 with Retry-After, pages a short
"try again in a moment" page, and a submit whose transaction committed answers success even
when a later step fails.

"Down" is real here: the connection is closed and pointed at a port where nothing listens, so
every query the request makes fails to connect, as with a stopped server.
"""

from __future__ import annotations

import socket
from contextlib import contextmanager

import pytest
from django.contrib.sessions.backends.db import SessionStore
from django.db import OperationalError, connection
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token

from annotator import services
from annotator.api import work as work_api
from annotator.models import Annotation
from annotator.platform import roles
from annotator.views import workspace
from tests.factories import QueueFactory, TaskFactory, UserFactory


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def database_down():
    """Every new connection of this process goes to a port where nothing listens."""
    saved = dict(connection.settings_dict)
    connection.close()
    connection.settings_dict.update(HOST="127.0.0.1", PORT=str(closed_port()))
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)


@pytest.mark.django_db(transaction=True)
def test_api_answers_json_503_while_the_database_is_down():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (a server to be unreachable)")
    curator = UserFactory(username="down-curator", role=roles.CURATOR)
    token = Token.objects.create(user=curator).key
    session = Client(raise_request_exception=False)
    session.force_login(curator)
    client = Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Token {token}")
    with database_down():
        # the view's query fails (token authentication reads the database first)
        api = client.get(reverse("api-jobs"))
        # a session-authenticated call fails in the session middleware
        api_session = session.get(reverse("api-jobs"))
        page = session.get(reverse("curator-projects"))
    for response in (api, api_session):
        assert response.status_code == 503
        assert response["Content-Type"] == "application/json"
        assert response["Retry-After"] == "10"
        assert response.json() == {
            "message": "The database is not answering; nothing was lost. Try again in a moment."
        }
    assert page.status_code == 503 and page["Retry-After"] == "10"
    assert page["Content-Type"].startswith("text/html")
    assert "Try again in a moment" in page.content.decode()
    # and once it is back, everything answers again
    assert client.get(reverse("api-jobs")).status_code == 200


@pytest.fixture
def held(db):
    worker = UserFactory(username="down-worker", role=roles.CROWDWORKER)
    queue = QueueFactory(redundancy=1)
    queue.project.members.add(worker)
    task = TaskFactory(queue=queue)
    services.assignment_claim(queue=queue, annotator=worker)
    return worker, task


def test_api_submit_that_committed_answers_success_when_the_next_task_fails(held, monkeypatch):
    worker, task = held

    def database_gone(_result):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(work_api, "_claim_data", database_gone)
    client = Client()
    client.force_login(worker)
    response = client.post(
        reverse("api-submit", args=[task.pk]),
        {"response": {"answer": "Yes"}},
        content_type="application/json",
    )
    assert response.status_code == 201
    assert response.json()["next"] is None and response.json()["created"] is True
    assert Annotation.objects.filter(task=task, annotator=worker).count() == 1


def test_page_submit_that_committed_answers_success_when_later_steps_fail(held, monkeypatch):
    worker, task = held

    def database_gone(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    client = Client()
    client.force_login(worker)
    monkeypatch.setattr(workspace, "_after", database_gone)
    monkeypatch.setattr(SessionStore, "save", database_gone)
    plain = client.post(reverse("work-submit", args=[task.pk]), {"answer": "Yes"})
    assert plain.status_code == 302
    assert plain["Location"] == reverse("work", args=[task.queue_id])
    again = client.post(
        reverse("work-submit", args=[task.pk]), {"answer": "Yes"}, HTTP_HX_REQUEST="true"
    )
    assert again.status_code == 200
    assert "Your answer is saved" in again.content.decode()
    assert Annotation.objects.filter(task=task, annotator=worker).count() == 1
