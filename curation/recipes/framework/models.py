"""The abstract pipeline every recipe's object extends: what all four share (a project, a name,
who made it and when, newest first). Subclasses keep their own table, constraint names and
other fields, and make no migration.

The project foreign key's reverse name is ``+`` here; a subclass that still carries today's
reverse name (``naturalbench_pipelines`` …) declares ``project`` again with it until migration
0007 turns those names into ``+``.
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

    class Meta:
        abstract = True
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.name
