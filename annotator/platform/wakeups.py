"""Wake-ups: a job tells a waiting page that something it shows has changed, so the page
long-polls (one request that returns as soon as the change happens, or after a bound) instead of
polling on a timer. Through Redis (``BLINDSPOT_WAKEUPS_URL``, by default the Celery broker's
URL when it is Redis): ``wake`` pushes to a short-lived list, ``wait`` blocks on it (BLPOP),
so a waiting request costs no CPU and no database query. A wake-up may carry what changed
(``wake(name, data)``, JSON): ``wait_for`` hands every one collected to the page, which can then
show the change without reading it back from the database.

Without Redis (the demo runs jobs in the web process) ``enabled()`` is False, ``wait`` returns
at once and pages poll on a timer; a Redis that stops answering is treated alike, never as an
error of the request.
"""

from __future__ import annotations

import json
import logging
import threading

import redis
from django.conf import settings

log = logging.getLogger(__name__)
KEEP_S = 30  # a wake-up nobody collected expires
_local = threading.local()


def _url() -> str:
    url = getattr(settings, "BLINDSPOT_WAKEUPS_URL", None)
    if url is None:
        broker = getattr(settings, "CELERY_BROKER_URL", "") or ""
        eager = getattr(settings, "CELERY_TASK_ALWAYS_EAGER", False)
        url = broker if broker.startswith(("redis://", "rediss://")) and not eager else ""
    return url


def enabled() -> bool:
    return bool(_url())


def _client() -> redis.Redis | None:
    url = _url()
    if not url:
        return None
    client = getattr(_local, "client", None)
    if client is None or getattr(_local, "url", "") != url:
        client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=None)
        _local.client, _local.url = client, url
    return client


def _key(name: str) -> str:
    # Named after the database too: two Blindspots on one Redis (two sites, a test run next to
    # a dev server) hold the same ids and must not wake each other's pages.
    return f"blindspot:wake:{settings.DATABASES['default']['NAME']}:{name}"


def wake(name: str, data=None) -> None:
    """Tell whoever waits on ``name`` (and the next one to wait within KEEP_S) to look again;
    ``data`` (JSON-serialisable, None: nothing said) tells them what changed."""
    client = _client()
    if client is None:
        return
    try:
        with client.pipeline() as pipe:
            pipe.rpush(_key(name), json.dumps(data)).expire(_key(name), KEEP_S).execute()
    except redis.RedisError:
        log.warning("wake-up %s not sent", name, exc_info=True)


def wait(name: str, timeout_s: float) -> bool:
    """Block until ``name`` is woken (True) or ``timeout_s`` passes (False); at once False
    without Redis."""
    return wait_for(name, timeout_s) is not None


def wait_for(name: str, timeout_s: float) -> list | None:
    """Block until ``name`` is woken or ``timeout_s`` passes (None; at once without Redis).
    Woken: the data of every wake-up sent since the last wait, oldest first (None for one
    that said nothing); they are all taken, so several count as one wake-up."""
    client = _client()
    if client is None:
        return None
    key = _key(name)
    try:
        found = client.blpop([key], timeout=max(timeout_s, 0.01))
    except redis.RedisError:
        log.warning("wake-up %s: waiting failed", name, exc_info=True)
        return None
    if not found:
        return None
    try:
        with client.pipeline() as pipe:  # MULTI: what came with it, and nothing left behind
            rest, _deleted = pipe.lrange(key, 0, -1).delete(key).execute()
    except redis.RedisError:
        log.warning("wake-up %s: the rest not taken", name, exc_info=True)
        rest = [b"null"]  # something more may have been said: the page reads afresh
    return [_data(raw) for raw in (found[1], *rest)]


def _data(raw: bytes):
    try:
        return json.loads(raw)
    except ValueError:
        return None
