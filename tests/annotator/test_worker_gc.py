"""A Celery worker freezes what it holds once started out of the cyclic garbage collector
(``blindspot.celery._startup_frozen``), as gunicorn's workers do: a full collection of a
started worker's objects stalled a running job for up to 200 ms (``benchmarks/hunt.py``)."""

from __future__ import annotations

import gc

import pytest
from celery.signals import worker_process_init, worker_ready

import blindspot.celery  # noqa: F401 - connects the worker's signal handlers


@pytest.mark.parametrize("signal", [worker_ready, worker_process_init], ids=lambda s: s.name)
def test_a_started_worker_process_freezes_its_objects(signal):
    gc.unfreeze()
    try:
        assert gc.get_freeze_count() == 0
        signal.send(sender=None)
        assert gc.get_freeze_count() > 10_000  # Django, the apps, the test run's modules
    finally:
        gc.unfreeze()
