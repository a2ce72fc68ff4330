"""The client's tests run it against a live Blindspot server (pytest-django's live_server: the
real HTTP stack and middleware on the test PostgreSQL database), never a mock of the API.

The client is imported from this tree (``client/``), as ``pip install ./client`` would install
it; ``test_install.py`` checks that install in a fresh virtual environment."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

CLIENT_DIR = Path(__file__).resolve().parents[1]
if str(CLIENT_DIR) not in sys.path:
    sys.path.insert(0, str(CLIENT_DIR))

from rest_framework.authtoken.models import Token  # noqa: E402

from annotator.platform import roles  # noqa: E402
from tests.factories import ProjectFactory, UserFactory  # noqa: E402


@pytest.fixture(autouse=True)
def _fast(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def eager(settings):
    """Jobs run in the server's request thread, after its commit (Celery eager)."""
    from celery import current_app

    settings.CELERY_TASK_ALWAYS_EAGER = True
    current_app.conf.task_always_eager = True
    yield
    current_app.conf.task_always_eager = False


@dataclass
class Site:
    url: str
    project: object
    other_project: object
    tokens: dict[str, str]  # curator, researcher, worker1 to 3, outsider


@pytest.fixture
def site(live_server, transactional_db, eager) -> Site:
    people = {
        "curator": roles.CURATOR,
        "researcher": roles.RESEARCHER,
        "worker1": roles.CROWDWORKER,
        "worker2": roles.CROWDWORKER,
        "worker3": roles.CROWDWORKER,
        "outsider": roles.CURATOR,
    }
    users = {name: UserFactory(username=f"c-{name}", role=role) for name, role in people.items()}
    project = ProjectFactory(
        name="Colours",
        members=[users[n] for n in ("curator", "researcher", "worker1", "worker2", "worker3")],
    )
    other = ProjectFactory(name="Elsewhere", members=[users["outsider"]])
    tokens = {name: Token.objects.get_or_create(user=u)[0].key for name, u in users.items()}
    return Site(live_server.url, project, other, tokens)


@pytest.fixture
def client_for(site):
    from blindspot_client import Client

    made = []

    def make(who: str = "curator"):
        c = Client(site.url, site.tokens[who])
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()
