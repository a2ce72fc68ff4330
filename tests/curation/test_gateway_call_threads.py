"""The process's threads for gateway calls (``calls.CallThreads``): kept between batches, so a
batch (a hunt step's three calls) starts no thread once the process has run one; an idle
thread ends; a call's exception reaches its caller."""

from __future__ import annotations

import threading
import time

import pytest

from curation.gateway import calls


def _blocked_calls(pool: calls.CallThreads, n: int, release: threading.Event):
    """``n`` calls that each report their thread and wait for ``release``."""
    started = []
    lock = threading.Lock()

    def call():
        with lock:
            started.append(threading.current_thread())
        release.wait(5)
        return threading.current_thread().name

    return [pool.submit(call, name="probe") for _ in range(n)], started


def test_a_second_batch_runs_on_the_threads_the_first_left():
    pool = calls.CallThreads(idle_s=5)
    release = threading.Event()
    first, started = _blocked_calls(pool, 3, release)
    deadline = time.monotonic() + 5
    while len(started) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len({t.ident for t in started}) == 3  # three calls at once: three threads
    release.set()
    assert all(f.result(5).startswith("probe-gateway-call-") for f in first)
    deadline = time.monotonic() + 5
    while pool.idle() < 3 and time.monotonic() < deadline:
        time.sleep(0.01)

    again, started_again = _blocked_calls(pool, 3, release)
    assert [f.result(5) for f in again]
    assert {t.ident for t in started_again} <= {t.ident for t in started}
    assert pool._made == 3  # no thread started for the second batch


def test_an_idle_thread_ends():
    pool = calls.CallThreads(idle_s=0.05)
    future = pool.submit(threading.current_thread)
    thread = future.result(5)
    thread.join(5)
    assert not thread.is_alive()
    assert pool.idle() == 0
    assert pool.submit(lambda: 7).result(5) == 7  # a new one is started when needed


def test_a_calls_exception_reaches_its_caller_and_the_thread_is_kept():
    pool = calls.CallThreads(idle_s=5)

    def boom():
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        pool.submit(boom).result(5)
    deadline = time.monotonic() + 5
    while pool.idle() < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pool.submit(lambda: "next").result(5) == "next"
    assert pool._made == 1


def test_execute_concurrently_starts_no_thread_for_a_second_batch(monkeypatch):
    in_flight, most = [0], [0]
    lock = threading.Lock()

    def execute(request):
        with lock:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        time.sleep(0.02)
        with lock:
            in_flight[0] -= 1
        return (request, threading.current_thread().name)

    monkeypatch.setattr(calls, "execute", execute)
    monkeypatch.setattr(calls, "call_threads", calls.CallThreads(idle_s=5))

    def batch():
        todo = iter(range(6))

        def next_call():
            n = next(todo, None)
            return None if n is None else (n, n)

        got = {}
        for arrived in calls.execute_concurrently(next_call, workers=3, name="hunt"):
            for tag, (request, name) in arrived:
                got[tag] = (request, name)
        return got

    first = batch()
    assert sorted(first) == list(range(6))
    assert all(
        request == tag and name.startswith("hunt-") for tag, (request, name) in first.items()
    )
    assert most[0] <= 3
    made = calls.call_threads._made
    deadline = time.monotonic() + 5
    while calls.call_threads.idle() < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sorted(batch()) == list(range(6))
    assert calls.call_threads._made == made
