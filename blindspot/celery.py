"""The Celery app. Jobs live in each app's ``jobs.py`` ("task" means an annotation item here)."""

import gc
import os

from celery import Celery
from celery.signals import task_postrun, task_prerun, worker_process_init, worker_ready
from django.db import close_old_connections

from blindspot.gcfreeze import served

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "blindspot.settings")

app = Celery("blindspot")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(related_name="jobs")


@task_prerun.connect
@task_postrun.connect
def _connections_checked(sender=None, **_kwargs) -> None:
    """Before and after each task a worker runs, what Django does around each request: close
    this thread's database connections that broke or outlived CONN_MAX_AGE. (Celery's own
    closing of every connection is off: CELERY_DB_REUSE_MAX.) Not in eager runs: those happen
    inside a caller's transaction."""
    if getattr(getattr(sender, "request", None), "is_eager", False):
        return
    close_old_connections()


@task_postrun.connect
def _warm_frozen(sender=None, **_kwargs) -> None:
    """After the process's first jobs, what they made lazily is frozen too (gcfreeze.py)."""
    if not getattr(getattr(sender, "request", None), "is_eager", False):
        served.tick()


@worker_ready.connect
@worker_process_init.connect
def _startup_frozen(**_kwargs) -> None:
    """What a worker process holds once started (Django, the apps, torch…) is frozen out of the
    cyclic garbage collector, as gunicorn's workers are (gunicorn.conf.py): otherwise each full
    collection rescans all of it, and the jobs running then wait (gen-2 collections of 120–200
    ms were seen in the worker under ``benchmarks/hunt.py``). ``worker_ready``: the worker's own
    process (a threads pool runs its jobs there); ``worker_process_init``: each child of a
    prefork pool."""
    gc.collect()
    gc.freeze()
