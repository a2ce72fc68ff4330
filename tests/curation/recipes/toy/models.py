"""The toy recipe's one model: a run that sends three yes/no items to its queue. Its table is made
by this app's own migration (``migrations/0001_initial.py``), like any recipe's."""

from __future__ import annotations

from django.db import models

from curation.recipes.framework.models import RecipePipeline


class ToyRun(RecipePipeline):
    queue = models.ForeignKey(
        "annotator.TaskQueue", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    labels = models.JSONField(default=dict, blank=True)  # external id -> decided label
    frozen = models.BooleanField(default=False)
