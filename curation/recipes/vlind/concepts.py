"""The paper's 11 concepts (vlind-bench.txt Sec. 4, Table 1) with hand-written 3-shot examples
for the App. A generation prompt, and a small bank of further triples per concept that the
offline drafter hands out in the demo (labelled offline wherever they appear).

The data is ``concepts.json`` (one object per concept, in the paper's order: name, description,
image_hint — how the first example is depicted, ``examples`` and ``bank`` as triples). A triple
is (context, true statement, false statement): the context is counterfactual and can be drawn;
the true statement is true in that context; the false statement is false in the context but true
by common sense (Sec. 3: s_cf and s_fact). The "location" examples are the ones App. A itself
fills the template with. No Django import.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

DATA = Path(__file__).with_name("concepts.json")


@cache
def _specs() -> dict[str, dict]:
    return {spec["name"]: spec for spec in json.loads(DATA.read_text(encoding="utf-8"))}


def default_concepts() -> list[dict]:
    """The 11 concepts as rows for a new bench (name, description, image hint, examples)."""
    return [
        {
            **{key: spec[key] for key in ("name", "description", "image_hint")},
            "examples": [dict(t) for t in spec["examples"]],
            "position": position,
        }
        for position, spec in enumerate(_specs().values())
    ]


def offline_bank(concept: str) -> list[dict]:
    """Triples the offline drafter may hand out for ``concept`` (its bank); [] if unknown."""
    spec = _specs().get(concept.strip().lower())
    return [dict(t) for t in spec["bank"]] if spec else []
