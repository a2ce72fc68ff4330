"""What a parsed benchmark file holds: item, prediction and judgment rows, before the
database. The importers (``evaluation.importers``) and each family's parser make them; the
registry's ``Family`` names them in its callables' types; below both, so neither imports the
other to speak of them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ItemRow:
    item_id: str
    data: dict
    line: int
    kept: bool = True


@dataclass
class PredictionRow:
    item_id: str
    raw_output: Any
    line: int
    parsed_answer: Any = None
    scores: Any = None


@dataclass
class JudgmentRow:
    """One judged pair, before it is matched to an item: the winner of each order for an LLM
    judge (model name or "tie"), the vote counts for crowd judgments."""

    line: int
    image: str
    instruction: str
    model_a: str
    model_b: str
    response_a: str = ""
    response_b: str = ""
    order_winners: list[str] = field(default_factory=list)
    outputs: list[dict] = field(default_factory=list)
    votes_a: int = 0
    votes_b: int = 0
    winner: str = "tie"

    @property
    def pair_key(self) -> str:
        return pair_key(self.model_a, self.model_b)


def pair_key(model_a: str, model_b: str) -> str:
    """The unordered pair as one string (the official de-duplication key, App. E)."""
    return "\x1f".join(sorted((model_a, model_b)))


@dataclass
class JudgmentFile:
    rows: list[JudgmentRow]
    duplicates: int = 0  # repeated (pair, instance): the first is kept, as elo_analysis.py does
    engines: list[str] = field(default_factory=list)
    with_reference: bool | None = None
    votes: int = 0
