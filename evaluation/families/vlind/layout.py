"""VLind-Bench's published test layout: the prompt of each test (CK, VP, CB, LP) and the VP
statement, as the official ``gpt4o_eval.py`` builds them (vlind-bench.txt Sec. 3). Pure: the
family's runner and the VLind-Bench recipe's export both read it.
"""

from __future__ import annotations

_CK_PROMPT = (
    "Statement: {s}\nBased on the common sense, is the given statement true or false? "
    "Only respond in True or False."
)
_VP_PROMPT = (
    "Statement: {s}\nBased on the image, is the given statement true or false? "
    "Only respond in True or False."
)
_CB_PROMPT = (
    "Context: {context}\nStatement: {s}\nBased on the context, is the given statement true or "
    "false? Forget real-world common sense and just follow the information provided in the "
    "context. Only respond in True or False."
)
_LP_PROMPT = (
    "Statement: {s}\nBased on the image, is the given statement true or false? Forget real-world "
    "common sense and just follow the information provided in the image. Only respond in True or "
    "False."
)


def ck_prompt(statement: str) -> str:
    """Commonsense-knowledge prompt, official GPT-4o setting (vlind-bench.txt Sec. 3)."""
    return _CK_PROMPT.format(s=statement)


def vp_prompt(statement: str) -> str:
    """Visual-perception prompt (vlind-bench.txt Sec. 3)."""
    return _VP_PROMPT.format(s=statement)


def cb_prompt(context: str, statement: str) -> str:
    """Commonsense-bias prompt with the counterfactual context text (vlind-bench.txt Sec. 3)."""
    return _CB_PROMPT.format(context=context, s=statement)


def lp_prompt(statement: str) -> str:
    """Language-prior prompt (vlind-bench.txt Sec. 3)."""
    return _LP_PROMPT.format(s=statement)


def vp_statement(noun: str) -> str:
    """VP statement about an (existent or non-existent) noun (vlind-bench.txt Sec. 3)."""
    return f"There is {noun} in the given image."
