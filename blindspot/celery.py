"""The Celery app. Jobs live in each app's ``jobs.py`` ("task" means an annotation item here)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "blindspot.settings")

app = Celery("blindspot")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(related_name="jobs")
