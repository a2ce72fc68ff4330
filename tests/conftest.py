import pytest

from annotator.platform import roles
from tests.factories import ProjectFactory, QueueFactory, UserFactory


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # Real hashers take seconds per user on a busy 2-core machine; tests only need a hasher.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def eager(settings):
    """Celery jobs run in-process, in the test's transaction; reset afterwards."""
    from celery import current_app

    settings.CELERY_TASK_ALWAYS_EAGER = True
    current_app.conf.task_always_eager = True
    yield
    current_app.conf.task_always_eager = False


@pytest.fixture
def crowdworker(db):
    return UserFactory(username="worker", role=roles.CROWDWORKER)


@pytest.fixture
def other_worker(db):
    return UserFactory(username="worker2", role=roles.CROWDWORKER)


@pytest.fixture
def curator(db):
    return UserFactory(username="curator", role=roles.CURATOR)


@pytest.fixture
def researcher(db):
    return UserFactory(username="researcher", role=roles.RESEARCHER)


@pytest.fixture
def project(db, crowdworker, other_worker, curator, researcher):
    return ProjectFactory(members=[crowdworker, other_worker, curator, researcher])


@pytest.fixture
def queue(project):
    return QueueFactory(project=project)
