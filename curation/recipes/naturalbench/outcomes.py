"""Outcome handlers of the three NaturalBench queues (registered by name on each queue)."""

from __future__ import annotations

from annotator.outcomes import outcome_handler

from . import services


@outcome_handler(services.PAIR_HANDLER)
def pair_verified(task, decision) -> None:
    """Keep the pair, or discard it when one caption describes both images (Sec. 3)."""
    services.pair_review_record(task=task, decision=decision)


@outcome_handler(services.ANSWER_HANDLER)
def answered(task, decision) -> None:
    """Pass or fail one (image, question); a failure drafts the pair's questions again."""
    services.answer_record(task=task, decision=decision)


@outcome_handler(services.TAG_HANDLER)
def tagged(task, decision) -> None:
    """Keep the skill tags a majority chose for one question (App. C)."""
    services.skill_tags_record(task=task, decision=decision)
