"""A Celery worker freezes what it holds once started out of the cyclic garbage collector
(``blindspot.celery._startup_frozen``), as gunicorn's workers do: a full collection of a
started worker's objects stalled a running job for up to 200 ms (``benchmarks/hunt.py``). Both
freeze once more after their first jobs or requests (``blindspot.gcfreeze``)."""

from __future__ import annotations

import gc
import runpy
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from celery.signals import task_postrun, worker_process_init, worker_ready

import blindspot
import blindspot.celery  # noqa: F401 - connects the worker's signal handlers
from blindspot import gcfreeze


@pytest.mark.parametrize("signal", [worker_ready, worker_process_init], ids=lambda s: s.name)
def test_a_started_worker_process_freezes_its_objects(signal):
    gc.unfreeze()
    try:
        assert gc.get_freeze_count() == 0
        signal.send(sender=None)
        assert gc.get_freeze_count() > 10_000  # Django, the apps, the test run's modules
    finally:
        gc.unfreeze()


def test_a_worker_freezes_once_more_after_its_first_jobs_or_requests(monkeypatch):
    # Given a process's counter of requests or jobs, freezing after the third
    froze = []
    monkeypatch.setattr(gcfreeze.gc, "freeze", lambda: froze.append(True))
    counter = gcfreeze.FreezeAfter(after=3)
    # When ten end, from four threads at once
    threads = [
        threading.Thread(target=lambda: [counter.tick() for _ in range(5)]) for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then it froze once, whichever thread ended the third
    assert froze == [True] and counter.seen == 10


def test_a_celery_job_and_a_gunicorn_request_count_toward_it(monkeypatch):
    ticks = []
    monkeypatch.setattr(gcfreeze.served, "tick", lambda: ticks.append(True))
    broker = type("Task", (), {"request": SimpleNamespace(is_eager=False)})
    eager = type("Task", (), {"request": SimpleNamespace(is_eager=True)})
    task_postrun.send(sender=broker)
    task_postrun.send(sender=eager)  # a job run in a caller's process is not the worker's
    conf = runpy.run_path(
        str(Path(blindspot.__file__).resolve().parent.parent / "gunicorn.conf.py")
    )
    conf["post_request"](None, None, {}, None)
    assert ticks == [True, True]
