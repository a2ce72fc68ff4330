"""The abstract models recipes build on. ``RecipePipeline`` is what every recipe's object shares
(a project, a name, who made it and when, newest first, and the evaluation benchmark it publishes
to); ``PeopleDecide`` is what every row people review in a task carries. Subclasses keep their own
table, constraint names and other fields.

The project foreign key's reverse name is ``+`` (nothing reads it); ``benchmark`` is set by the
object's first publish (migration curation 0007 filled it in for objects published before).
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.utils import timezone

from annotator.platform.models import NewestFirst, optional_link


class RecipePipeline(NewestFirst):
    project = models.ForeignKey("annotator.Project", on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=200)
    # The evaluation benchmark this pipeline publishes to (set by its first publish).
    benchmark = optional_link("evaluation.Benchmark")

    class Meta(NewestFirst.Meta):
        abstract = True

    def __str__(self) -> str:
        return self.name


class PeopleDecide(models.Model):
    """A row people decide on: its review task, the votes counted so far and when it was decided."""

    task = optional_link("annotator.Task", one_to_one=True)
    votes = models.JSONField(default=dict, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True

    def decide(self, decision, **fields: Any) -> None:
        """Record people's ``decision`` (the queue's outcome): ``fields`` (the row's new state …),
        the votes counted and when, saved."""
        for name, value in fields.items():
            setattr(self, name, value)
        self.votes = dict(decision.counts or {})
        self.decided_at = timezone.now()
        self.save(update_fields=[*fields, "votes", "decided_at"])
