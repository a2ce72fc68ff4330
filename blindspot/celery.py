"""The Celery app. Jobs live in each app's ``jobs.py`` ("task" means an annotation item here)."""

import os

from celery import Celery
from celery.signals import task_postrun, task_prerun
from django.db import close_old_connections

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
