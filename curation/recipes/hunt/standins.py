"""Stand-in targets: offline rules that play a vision model in the demo and wherever no endpoint
is configured, so a hunt can be tried with no key. They are not models: each answers "Yes" or
"No" from a hash of the question and the image's SHA-256 (so the answer changes with the image,
as a vision model's would, and the same question on the same image always gets the same one),
and every page that shows them says so.

A round's target whose provider is the offline kind is asked through ``STANDIN`` (the
NaturalBench yes/no prompt's text, Sec. 4, with the image's hash as a variable the rule reads);
a real target gets the family's own template.
"""

from __future__ import annotations

from curation.gateway.offline import rule
from evaluation.prompts import coin

STANDIN = "hunt-standin-yes-no"
STANDIN_LABEL = "stand-in (offline rule, not a model)"
STANDIN_SPEC = {
    "name": STANDIN,
    "title": "Hunt: a stand-in target answers a yes/no question about the image",
    "source": "NaturalBench Sec. 4 yes/no prompt (question + suffix, no space); issue 24",
    "text": "{question}{separator}Please answer Yes or No.",
    "description": "Answered by an offline rule from a hash of the question and {image_sha256}.",
}


@rule(STANDIN)
def standin_yes_no(variables: dict, seed: int | None) -> str:
    """The seed tells stand-ins apart (the target's position), so two stand-ins disagree."""
    return ("Yes", "No")[coin(variables["question"], variables.get("image_sha256", ""), seed=seed)]
