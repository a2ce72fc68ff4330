"""The negation review queue's outcome handler (registered by name on the queue)."""

from __future__ import annotations

from annotator.outcomes import outcome_handler

from . import services


@outcome_handler(services.OUTCOME_HANDLER)
def negation_reviewed(task, decision) -> None:
    """Accept the negation, or reject it and draft the case again (or drop it)."""
    services.negation_review_record(task=task, decision=decision)
