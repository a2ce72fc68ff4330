"""Stand-in targets: offline rules that play a vision model in the demo and wherever no endpoint
is configured, so a hunt can be tried with no key. They are not models: each answers "Yes" or
"No" (a two-option round: "A" or "B") from a hash of the question and the image's SHA-256 (so the
answer changes with the image, as a vision model's would, and the same question on the same image
always gets the same one), and every page that shows them says so.

A round's target whose provider is the offline kind is asked through ``STANDIN`` or
``STANDIN_TWO_OPTION`` (the NaturalBench prompt's text of the round's question type, Sec. 4, with
the image's hash as a variable the rule reads); a real target gets the family's own template.
"""

from __future__ import annotations

from curation.gateway.offline import rule
from evaluation.prompts import coin

STANDIN = "hunt-standin-yes-no"
STANDIN_TWO_OPTION = "hunt-standin-two-option"
STANDIN_LABEL = "stand-in: an offline rule, not a model"
_DESCRIPTION = "Answered by an offline rule from a hash of the question and {image_sha256}."
STANDIN_SPECS = (
    {
        "name": STANDIN,
        "title": "Hunt: a stand-in target answers a yes/no question about the image",
        "source": "NaturalBench Sec. 4 yes/no prompt (question + suffix, no space); issue 24",
        "text": "{question}{separator}Please answer Yes or No.",
        "description": _DESCRIPTION,
    },
    {
        "name": STANDIN_TWO_OPTION,
        "title": "Hunt: a stand-in target answers a two-option question about the image",
        "source": "NaturalBench Sec. 4 multiple-choice prompt (question + suffix, no space)",
        "text": (
            "{question}{separator}Please output the letter corresponding to the correct option."
        ),
        "description": _DESCRIPTION,
    },
)
# The stand-in's template per question type of a round (HuntRound.QuestionType values).
STANDIN_FOR = {"yes_no": STANDIN, "multiple_choice": STANDIN_TWO_OPTION}


def _coin(variables: dict, seed: int | None) -> int:
    return coin(variables["question"], variables.get("image_sha256", ""), seed=seed)


@rule(STANDIN)
def standin_yes_no(variables: dict, seed: int | None) -> str:
    """The seed tells stand-ins apart (the target's position), so two stand-ins disagree."""
    return ("Yes", "No")[_coin(variables, seed)]


@rule(STANDIN_TWO_OPTION)
def standin_two_option(variables: dict, seed: int | None) -> str:
    return ("A", "B")[_coin(variables, seed)]
