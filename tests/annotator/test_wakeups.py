"""Wake-ups (annotator.platform.wakeups) through the Redis the suite runs with."""

import threading
import time
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


def test_wait_for_hands_over_what_every_wake_up_said_in_order(live_redis):
    name = f"test-{uuid.uuid4().hex}"
    wakeups.wake(name, {"answers": [1]})
    wakeups.wake(name)
    wakeups.wake(name, {"answers": [2]})
    assert wakeups.wait_for(name, 0.05) == [{"answers": [1]}, None, {"answers": [2]}]
    assert wakeups.wait_for(name, 0.05) is None  # all taken: the next one waits


def test_wait_for_returns_at_once_when_woken_meanwhile(live_redis):
    name = f"test-{uuid.uuid4().hex}"
    started = time.monotonic()
    threading.Timer(0.1, wakeups.wake, args=(name, "stored")).start()
    assert wakeups.wait_for(name, 5) == ["stored"]
    assert time.monotonic() - started < 2
