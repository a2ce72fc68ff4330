"""Duplicate and near-duplicate hunt questions (issue 24: flagged, so one trick is not counted
twice). Pure: no Django.

A question is reduced to its ``normal_form`` (case folded, accents and punctuation dropped,
spaces collapsed): two questions with the same normal form are duplicates. Near-duplicates have
normal forms whose ``difflib`` ratio is at least ``NEAR``: the ratio follows the order of the
text, so a typo or a plural does not hide a copy ("mug" / "mugs": 0.98) while swapping the
objects of a relation makes another question ("Is the mug left of the laptop?" / "Is the laptop
left of the mug?": 0.69).

A round's every earlier question of a length that can come near is compared, so each is first
bounded in C (``rapidfuzz``'s Indel ratio, 2·LCS / both lengths: difflib's matching blocks form
a common subsequence, so its ratio never exceeds that bound) and difflib runs only on the few
that pass. Pure Python alone took 42 ms for a round of 1,750 alike questions, on every submit,
holding the hunt worker's GIL.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from difflib import SequenceMatcher

from rapidfuzz.distance import Indel

NEAR = 0.9  # ratio at or above which a question is a near-duplicate
BOUND_SLACK = 1e-9  # the bound is a float too: a ratio of exactly NEAR is never cut
_NOT_WORD = re.compile(r"[^\w\s]+")
_SPACES = re.compile(r"\s+")


def normal_form(question: str) -> str:
    """Lower case, no accents, no punctuation, single spaces."""
    text = unicodedata.normalize("NFKD", question)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).casefold()
    return _SPACES.sub(" ", _NOT_WORD.sub(" ", text)).strip()


@dataclass(frozen=True)
class Match:
    key: object  # the caller's id of the earlier question
    score: float

    @property
    def duplicate(self) -> bool:
        return self.score >= 1.0


def lengths_within(length: int, *, near: float = NEAR) -> tuple[int, int]:
    """The lengths (fewest, most characters) an earlier normal form can have and still reach
    a ratio of ``near`` with one of ``length`` characters: the ratio is at most
    2·min / (sum of both lengths) (``real_quick_ratio``), so only these need comparing (a
    character to spare on each side; ``closest`` checks the bound itself)."""
    fewest = math.floor(length * near / (2 - near)) - 1
    most = math.ceil(length * (2 - near) / near) + 1
    return max(0, fewest), most


def closest(question: str, earlier: Iterable[tuple[object, str]], *, near: float = NEAR):
    """The earlier question (``(key, normal form)`` pairs) most like ``question``, with a ratio
    at or above ``near`` (ties: the first given; a duplicate ends the search), or None."""
    mine = normal_form(question)
    matcher = SequenceMatcher(autojunk=False)
    matcher.set_seq2(mine)
    best: Match | None = None
    bound = near - BOUND_SLACK
    for key, text in earlier:
        if text == mine:
            return Match(key, 1.0)
        # The upper bound first, in C: most earlier questions are nothing like this one.
        if Indel.normalized_similarity(mine, text, score_cutoff=bound) < bound:
            continue
        matcher.set_seq1(text)
        score = matcher.ratio()
        if score >= near and (best is None or score > best.score):
            best = Match(key, round(score, 4))
    return best
