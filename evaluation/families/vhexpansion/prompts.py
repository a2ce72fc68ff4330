"""VHExpansion's answer prompt: the paper gives none, so the test-case question gets
NaturalBench's yes/no suffix (answers are parsed the same way). Editable like every template."""

from __future__ import annotations

from curation.gateway.offline import rule
from evaluation.prompts import coin, define

ANSWER = "eval-vhexpansion-answer"

define(
    ANSWER,
    title="VHExpansion: answer a test case's yes/no question",
    source="VHExpansion Sec. 3 gives no answer prompt; NaturalBench's yes/no suffix",
    text="{question} Please answer Yes or No.",
)


@rule(ANSWER)
def blind_vh(variables: dict, seed: int | None) -> str:
    return ("Yes", "No")[coin(variables["question"], seed=seed)]
