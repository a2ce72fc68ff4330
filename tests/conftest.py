import io

import pytest
from django.utils import translation

from annotator.platform import roles
from tests.factories import ProjectFactory, QueueFactory, UserFactory
from tests.fake_openai import FakeOpenAI


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # Real hashers take seconds per user on a busy 2-core machine; tests only need a hasher.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _language_reset():
    """A request in Hindi or Chinese leaves its language active in the test's thread
    (LocaleMiddleware activates and never deactivates): back to the default after every test, so
    no later test reads another language because of file order."""
    yield
    translation.deactivate()


@pytest.fixture
def eager(settings):
    """Celery jobs run in-process, in the test's transaction; reset afterwards."""
    from celery import current_app

    settings.CELERY_TASK_ALWAYS_EAGER = True
    current_app.conf.task_always_eager = True
    yield
    current_app.conf.task_always_eager = False


class Terminal(io.StringIO):
    """A text stream that says it is a terminal (where commands draw their progress bars)."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def terminal():
    """A command's standard error as a terminal (``call_command(..., stderr=terminal)``): what
    its progress bars drew is kept."""
    return Terminal()


def user_fixture(username: str, role: str):
    """A fixture giving one user, `username`, with `role` (named by the variable it is bound to)."""

    @pytest.fixture
    def user(db):
        return UserFactory(username=username, role=role)

    return user


crowdworker = user_fixture("worker", roles.CROWDWORKER)
other_worker = user_fixture("worker2", roles.CROWDWORKER)
curator = user_fixture("curator", roles.CURATOR)
researcher = user_fixture("researcher", roles.RESEARCHER)


@pytest.fixture
def project(db, crowdworker, other_worker, curator, researcher):
    return ProjectFactory(members=[crowdworker, other_worker, curator, researcher])


@pytest.fixture
def queue(project):
    return QueueFactory(project=project)


@pytest.fixture
def fake_openai():
    """The fake OpenAI-compatible server of tests/fake_openai.py (real sockets, real client)."""
    server = FakeOpenAI()
    yield server
    server.close()


@pytest.fixture
def fast_llm_backoff(settings):
    """Gateway retries without waiting (backoff base and Retry-After cap near zero)."""
    settings.BLINDSPOT_LLM_BACKOFF_BASE_S = 0.001
    settings.BLINDSPOT_LLM_BACKOFF_MAX_S = 0.01
    settings.BLINDSPOT_LLM_RETRY_AFTER_MAX_S = 0.01


@pytest.fixture
def media(settings, tmp_path):
    """Files land in a throwaway MEDIA_ROOT, which this returns, and Django serves /media/ itself
    (no X-Accel-Redirect / X-Sendfile). A module that needs more, such as an embeddings folder,
    has its own."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.BLINDSPOT_PROTECTED_MEDIA_REDIRECT = ""
    return settings.MEDIA_ROOT


LONG_MARKS = ("slow", "browser", "celery")


def pytest_collection_modifyitems(session, config, items):
    """Files holding a slow, browser or Celery test first, the rest after, each file's tests
    in their order. ``make test`` hands out whole files (``--dist loadfile``) in this order, so
    the long files start at once and the short ones fill the end instead of one long file
    running alone at the end while the other process waits."""
    long_files = {
        item.path for item in items if any(item.get_closest_marker(m) for m in LONG_MARKS)
    }
    items.sort(key=lambda item: item.path not in long_files)  # stable: the rest keep their order
