"""Small helpers the annotation engine's tests share: API clients and crowdworkers."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.db import connections, transaction
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotator.platform import roles
from tests.factories import UserFactory


def session_api(user) -> APIClient:
    """An API client signed in with ``user``'s session."""
    client = APIClient()
    client.force_login(user)
    return client


def token_api(user) -> APIClient:
    """An API client that sends ``user``'s API token."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def workers(n: int) -> list:
    """``n`` new crowdworkers."""
    return [UserFactory(role=roles.CROWDWORKER) for _ in range(n)]


@contextmanager
def committing_later(work: Callable[[], object], *, after_s: float = 0.5) -> Iterator[list]:
    """Run ``work()`` in a thread, in a transaction that holds its row locks and commits
    ``after_s`` seconds after the block starts (the block's statement waits for those locks).
    Yields the list of exceptions the thread raised (empty when it went well)."""
    done, release = threading.Event(), threading.Event()
    problems: list[BaseException] = []

    def hold() -> None:
        try:
            with transaction.atomic():
                work()
                done.set()
                release.wait(30)
        except BaseException as exc:  # noqa: BLE001 - reported to the main thread
            problems.append(exc)
            done.set()
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert done.wait(10)
    threading.Timer(after_s, release.set).start()
    try:
        yield problems
    finally:
        release.set()
        holder.join(timeout=30)
