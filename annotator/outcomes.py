"""Outcome handlers: an explicit registry the recipes plug into (no Django signals).

A queue names its handler in ``TaskQueue.outcome_handler``. When a task reaches a final state
(decided, or undecided after the last escalation) the engine calls the handler inside the same
transaction, so the next stage's work appears atomically with the decision.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .aggregation import Decision
    from .models import Task

OutcomeHandler = Callable[["Task", "Decision"], None]
HANDLERS: dict[str, OutcomeHandler] = {}


def outcome_handler(name: str) -> Callable[[OutcomeHandler], OutcomeHandler]:
    def register(fn: OutcomeHandler) -> OutcomeHandler:
        if name in HANDLERS and HANDLERS[name] is not fn:
            raise ValueError(f"outcome handler {name!r} registered twice")
        HANDLERS[name] = fn
        return fn

    return register


def handler_choices() -> list[tuple[str, str]]:
    return [("", "None (keep the outcome only)"), *((n, n) for n in sorted(HANDLERS))]


def run_outcome_handler(task: Task, decision: Decision) -> None:
    name = task.queue.outcome_handler
    if not name:
        return
    try:
        handler = HANDLERS[name]
    except KeyError:
        raise LookupError(f"queue {task.queue_id} names unknown outcome handler {name!r}") from None
    handler(task, decision)
