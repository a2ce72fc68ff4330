"""The abstract pipeline every recipe's object extends: what all four share (a project, a name,
who made it and when, newest first, and the evaluation benchmark it publishes to). Subclasses
keep their own table, constraint names and other fields.

The project foreign key's reverse name is ``+`` (nothing reads it); ``benchmark`` is set by the
object's first publish (migration curation 0007 filled it in for objects published before).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class RecipePipeline(models.Model):
    project = models.ForeignKey("annotator.Project", on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=200)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # The evaluation benchmark this pipeline publishes to (set by its first publish).
    benchmark = models.ForeignKey(
        "evaluation.Benchmark", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        abstract = True
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.name
