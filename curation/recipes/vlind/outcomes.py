"""Outcome handlers of the two review queues (registered by name on the queues)."""

from __future__ import annotations

from annotator.outcomes import outcome_handler

from . import services


@outcome_handler(services.TRIPLE_HANDLER)
def triple_reviewed(task, decision) -> None:
    """App. A: a triple stays when at least two of its three reviewers accept it."""
    services.triple_review_record(task=task, decision=decision)


@outcome_handler(services.IMAGE_HANDLER)
def image_reviewed(task, decision) -> None:
    """App. A: an image is good when at least two of its three reviewers accept it."""
    services.image_review_record(task=task, decision=decision)
