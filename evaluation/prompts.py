"""Evaluation prompts as gateway templates, and the machinery of their offline rules.

Each family declares its own prompts in ``evaluation/families/<key>/prompts.py`` with
``define`` and registers its offline rules there (``curation.gateway.offline.rule``); the
families load in ``EvaluationConfig.ready``. Templates are seeded on first use
(``ensure_templates``), never at import.

Judge prompts are conversations of user / assistant / user turns. The gateway's templates hold
one system prompt and one text, so the turns are written in the text separated by lines holding
only ``<|assistant|>`` or ``<|user|>`` (``conversation``); ``render_turns`` renders each turn on
its own (a response that contains a marker cannot split the conversation).

Offline rules (no API key): every model prompt gets a BLIND BASELINE that answers from the
question text alone (a seeded hash of the text, ``coin``, no image ever), and a judge gets a
heuristic. Both are labelled as such wherever they appear.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from curation.gateway import template_ensure
from curation.gateway.rendering import render, template_fields

ASSISTANT_MARK = "<|assistant|>"
USER_MARK = "<|user|>"
_MARK_LINE = re.compile(r"\n?^(<\|assistant\|>|<\|user\|>)$\n?", re.MULTILINE)

BLIND_BASELINE_LABEL = "Offline blind baseline (question text only, no image)"
OFFLINE_JUDGE_LABEL = "Offline judge (length heuristic, not an LLM)"

# Template name -> its definition (title, source, text, optional system), filled by the families.
TEMPLATES: dict[str, dict] = {}


def define(name: str, **spec: str) -> str:
    """Declare an evaluation template; a name declared twice is a programming error."""
    if name in TEMPLATES:
        raise ValueError(f"Evaluation template {name!r} is already defined.")
    TEMPLATES[name] = spec
    return name


def ensure_templates(names=None):
    """Seed (or move forward) the evaluation templates; a curator's edit stays current."""
    return {
        name: template_ensure(name=name, **TEMPLATES[name])
        for name in (names or TEMPLATES)
        if name in TEMPLATES
    }


# --- Conversation turns --------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    role: str
    text: str


def conversation(*turns: str) -> str:
    """Turns user, assistant, user, … joined with the marker lines ``render_turns`` splits on."""
    out = turns[0]
    for k, turn in enumerate(turns[1:], start=1):
        mark = ASSISTANT_MARK if k % 2 else USER_MARK
        out += f"\n{mark}\n{turn}"
    return out


def split_turns(text: str) -> list[tuple[str, str]]:
    """(role, template text) per turn; the first turn is the user's."""
    parts = _MARK_LINE.split(text)
    turns = [("user", parts[0])]
    for k in range(1, len(parts) - 1, 2):
        role = "assistant" if parts[k] == ASSISTANT_MARK else "user"
        turns.append((role, parts[k + 1]))
    return turns


def has_turns(text: str) -> bool:
    return bool(_MARK_LINE.search(text))


def render_turns(text: str, variables: dict, *, template: str = "") -> list[Turn]:
    """Each turn rendered on its own, so a variable's value never splits the conversation."""
    return [
        Turn(role, render(part, variables, template=template) if template_fields(part) else part)
        for role, part in split_turns(text)
    ]


# --- Offline rules -------------------------------------------------------------------------------


def coin(*parts: object, seed: int | None) -> int:
    """A stable 0/1 from the text (and the seed): the blind baseline's whole 'reasoning'."""
    digest = hashlib.sha256("\x1f".join([str(seed), *map(str, parts)]).encode()).digest()
    return digest[0] & 1
