"""Wake-ups (annotator.platform.wakeups) through the Redis the suite runs with."""

import uuid

import pytest
import redis
from django.conf import settings

from annotator.platform import wakeups


@pytest.fixture
def live_redis():
    if not wakeups.enabled():
        pytest.skip("wake-ups are off (no Redis broker configured)")
    try:
        wakeups._client().ping()
    except redis.RedisError:
        pytest.skip("Redis does not answer")


def test_a_wake_up_reaches_the_next_wait_once(live_redis):
    name = f"test-{uuid.uuid4().hex}"
    wakeups.wake(name)
    wakeups.wake(name)  # two while nobody waited count as one
    assert wakeups.wait(name, 0.05) is True
    assert wakeups.wait(name, 0.05) is False


def test_a_wake_up_does_not_reach_another_database_on_the_same_redis(live_redis, monkeypatch):
    # Two sites (or two test processes) on one Redis hold the same ids: "hunt:5" of one is not
    # "hunt:5" of the other
    name = f"test-{uuid.uuid4().hex}"
    monkeypatch.setitem(settings.DATABASES["default"], "NAME", "another-site")
    wakeups.wake(name)
    monkeypatch.undo()
    assert wakeups.wait(name, 0.05) is False
    monkeypatch.setitem(settings.DATABASES["default"], "NAME", "another-site")
    assert wakeups.wait(name, 0.05) is True
