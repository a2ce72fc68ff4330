"""Outcome handlers of the VisIT-Bench queues (registered by name on each queue)."""

from __future__ import annotations

from annotator.outcomes import outcome_handler

from . import services


@outcome_handler(services.INSTRUCTION_HANDLER)
def instruction_written(task, decision) -> None:
    """A new instruction with its image (licence and source required) → an instance to caption."""
    services.instruction_record(task=task, decision=decision)


@outcome_handler(services.CAPTION_HANDLER)
def caption_written(task, decision) -> None:
    """A caption → once every image has one, the instance waits for its reference draft."""
    services.caption_record(task=task, decision=decision)


@outcome_handler(services.REVIEW_HANDLER)
def reference_reviewed(task, decision) -> None:
    """Correct → verified; caption problem → caption again; response problem → discarded."""
    services.reference_review_record(task=task, decision=decision)


@outcome_handler(services.RATING_HANDLER)
def pair_rated(task, decision) -> None:
    """Votes of a rated tuple → the crowd-vote judgment set of the evaluation app."""
    services.pair_rating_record(task=task, decision=decision)
