"""VLind-Bench's prompts (Sec. 3, official ``gpt4o_eval.py``): CK "commonsense_TF", VP
"simple_TF", CB the "detailed_TF" context prompt, LP "detailed_TF"; blind-baseline rules."""

from __future__ import annotations

from curation.gateway.offline import rule
from evaluation.prompts import coin, define

CK = "eval-vlind-ck"
VP = "eval-vlind-vp"
CB = "eval-vlind-cb"
LP = "eval-vlind-lp"
BY_TEST = {"ck": CK, "vp": VP, "cb": CB, "lp": LP}

_SOURCE = "VLind-Bench Sec. 3 (official gpt4o_eval.py prompts, GPT-4o setting)"

define(
    CK,
    title="VLind-Bench CK: statement by common sense (factual image)",
    source=_SOURCE,
    text=(
        "Statement: {statement}\nBased on the common sense, is the given statement true or "
        "false? Only respond in True or False."
    ),
)
define(
    VP,
    title="VLind-Bench VP: is the object in the image",
    source=_SOURCE,
    text=(
        "Statement: {statement}\nBased on the image, is the given statement true or false? "
        "Only respond in True or False."
    ),
)
define(
    CB,
    title="VLind-Bench CB: statement by the counterfactual context",
    source=_SOURCE,
    text=(
        "Context: {context}\nStatement: {statement}\nBased on the context, is the given "
        "statement true or false? Forget real-world common sense and just follow the "
        "information provided in the context. Only respond in True or False."
    ),
)
define(
    LP,
    title="VLind-Bench LP: statement by the counterfactual image",
    source=_SOURCE,
    text=(
        "Statement: {statement}\nBased on the image, is the given statement true or false? "
        "Forget real-world common sense and just follow the information provided in the "
        "image. Only respond in True or False."
    ),
)


def _blind_true_false(variables: dict, seed: int | None) -> str:
    return ("True", "False")[coin(variables.get("context", ""), variables["statement"], seed=seed)]


for _name in BY_TEST.values():
    rule(_name)(_blind_true_false)
