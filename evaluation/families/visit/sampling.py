"""Seeded sampling of the (instance, model A, model B) tuples people rate (visit-bench.txt
Sec. 4.2). No database access: inputs are plain mappings, outputs plain tuples, so a seed reproduces
a sample exactly whatever the database order. (The LLM judge's pairs for a new model come from
``players.judge_pairs_sample``.)

``responses`` maps an instance id to {player: response text}; the verified reference is a player
like any model (``REFERENCE``), so it takes part in the Elo setup (Sec. 4.3).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from evaluation.parsed import pair_key

from .judgments import OFFICIAL_REFERENCE_PLAYER

# The reference's player name in the published judgment files.
REFERENCE = OFFICIAL_REFERENCE_PLAYER


@dataclass(frozen=True)
class Tuple:
    """One (instance, model A, model B) to judge."""

    instance_id: str
    model_a: str
    model_b: str

    def as_dict(self) -> dict:
        return {"instance_id": self.instance_id, "a_model": self.model_a, "b_model": self.model_b}


def rating_tuples(
    responses: Mapping[str, Mapping[str, str]],
    *,
    n: int,
    seed: int,
    exclude: Iterable[tuple[str, str]] = (),
) -> list[Tuple]:
    """``n`` uniformly random (instance, unordered pair of players) tuples among those not in
    ``exclude`` ((instance id, pair_key) already sampled), sides drawn at random (Sec. 4.2:
    "1K uniformly randomly sampled tuples of (query, model A, model B)"). Fewer when fewer
    exist."""
    if n < 0:
        raise ValueError("n must not be negative")
    seen = set(exclude)
    candidates = []
    for instance_id in sorted(responses):
        players = sorted(p for p, text in responses[instance_id].items() if text is not None)
        for i, a in enumerate(players):
            for b in players[i + 1 :]:
                if (instance_id, pair_key(a, b)) not in seen:
                    candidates.append((instance_id, a, b))
    rng = random.Random(seed)
    picked = rng.sample(candidates, min(n, len(candidates)))
    out = []
    for instance_id, a, b in picked:
        if rng.random() < 0.5:
            a, b = b, a
        out.append(Tuple(instance_id, a, b))
    return out
