"""The offline drafter: rule-based stand-ins for an LLM, one rule per template name.

For the demo and for flow tests, where no endpoint is reachable. A rule gets the same variables
the template would be rendered with and the call's seed, and returns the value an LLM should
have produced (a dict for JSON templates, a string for text ones); the gateway holds it to the
template's schema like any model output. Everything it writes is labelled "offline drafter".

Recipes add their own rules::

    from curation.gateway.offline import rule

    @rule("vlind-counterfactual")
    def draft(variables: dict, seed: int | None) -> dict: ...

No Django import.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from .call_types import CallRequest, CallResult
from .parsing import OutputInvalid, validate_output

Rule = Callable[[dict, "int | None"], "dict | str"]

_RULES: dict[str, Rule] = {}


class OfflineRuleError(ValueError):
    """The rule cannot draft anything for these variables (recorded as a failed generation)."""


def rule(template_name: str) -> Callable[[Rule], Rule]:
    """Register ``fn(variables, seed) -> dict | str`` as the drafter for ``template_name``."""

    def register(fn: Rule) -> Rule:
        _RULES[template_name] = fn
        return fn

    return register


def rule_for(template_name: str) -> Rule | None:
    return _RULES.get(template_name)


def rule_names() -> list[str]:
    return sorted(_RULES)


def run_offline(request: CallRequest) -> CallResult:
    """Execute a CallRequest against the registered rule (one attempt: rules are deterministic)."""
    name = request.template_name
    fn = _RULES.get(name)
    t0 = time.monotonic()
    model = f"offline-drafter/{name}"
    if fn is None:
        error = (
            f"The offline drafter has no rule for template {name!r}. Choose an LLM provider, or "
            f"register one with @curation.gateway.offline.rule({name!r})."
        )
        entry = {"attempt": 1, "outcome": "no_rule", "error": error, "latency_ms": 0}
        return CallResult(ok=False, model=model, attempts=1, attempt_log=[entry], error=error)
    try:
        output = fn(dict(request.variables), request.seed)
    except Exception as exc:  # noqa: BLE001 - a rule's failure is recorded like a model's
        reason = str(exc) if isinstance(exc, OfflineRuleError) else f"{type(exc).__name__}: {exc}"
        error = f"Offline rule {name!r} could not draft: {reason}"
        ms = int((time.monotonic() - t0) * 1000)
        entry = {"attempt": 1, "outcome": "rule_error", "error": error, "latency_ms": ms}
        return CallResult(
            ok=False, model=model, attempts=1, attempt_log=[entry], error=error, latency_ms=ms
        )
    raw = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    ms = int((time.monotonic() - t0) * 1000)
    entry: dict[str, Any] = {"attempt": 1, "outcome": "ok", "latency_ms": ms}
    result = partial(
        CallResult, model=model, raw_text=raw, attempts=1, attempt_log=[entry], latency_ms=ms
    )
    try:
        validate_output(output, request.output_schema)
    except OutputInvalid as exc:
        entry.update(outcome="schema", error=str(exc))
        return result(ok=False, error=f"Offline rule {name!r} broke the template's schema: {exc}")
    return result(ok=True, output=output)


# ---------------------------------------------------------------------------------------------
# Built-in rules
# ---------------------------------------------------------------------------------------------
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
_STOPWORDS = frozenset(
    """a an the and or but of in on at to for from with without by into onto over under near
    next beside behind above below between among across along around through against off up
    down out is are was were be been being am has have had do does did this that these those
    it its his her their our your my he she they we you i him them there here while who whom
    which what where when how as than then so very too also some any each every both all one
    two three four five six seven eight nine ten another other others several many few more
    most much no not only same such own just while during before after again further once
    image picture photo photograph view shot scene""".split()
)
# Words that describe rather than name: a question "Is there a red in the image?" reads badly.
_DESCRIPTIVE = frozenset(
    """red orange yellow green blue purple pink brown black white gray grey golden silver
    dark light bright colorful colourful big small large little tall short long wide narrow
    young old new happy sad smiling empty full open closed wooden metal plastic round square
    front back left right top bottom middle center centre side outside inside nearby""".split()
)
_IRREGULAR_PLURALS = frozenset("people men women children teeth feet mice geese".split())


def _content_words(caption: str) -> list[str]:
    words = []
    for raw in _WORD.findall(caption):
        w = raw.lower().strip("'-")
        if len(w) < 3 or w in _STOPWORDS or w in _DESCRIPTIVE:
            continue
        if len(w) > 4 and w.endswith(("ing", "ly", "ed")):
            continue
        if w not in words:
            words.append(w)
    return words


def _is_plural(word: str) -> bool:
    if word in _IRREGULAR_PLURALS:
        return True
    return word.endswith("s") and not word.endswith(("ss", "us", "is"))


def _existence_question(word: str) -> str:
    if _is_plural(word):
        return f"Are there {word} in the image?"
    article = "an" if word[0] in "aeiou" else "a"
    return f"Is there {article} {word} in the image?"


def _pick(words: list[str], seed: int | None) -> str:
    return words[0] if seed is None else random.Random(seed).choice(words)


@rule("naturalbench-yes-no")
def naturalbench_yes_no(variables: dict, seed: int | None) -> dict:
    """Two existence questions with opposite answers for the two captions (NaturalBench Sec. 3,
    App. A output format): a content word of caption 1 missing from caption 2, and the reverse.
    """
    first = _content_words(str(variables["caption_1"]))
    second = _content_words(str(variables["caption_2"]))
    only_first = [w for w in first if w not in second]
    only_second = [w for w in second if w not in first]
    if not only_first or not only_second:
        raise OfflineRuleError(
            "each caption needs a content word the other lacks; these captions share them all"
        )
    return {
        "0": {
            "Question": _existence_question(_pick(only_first, seed)),
            "Caption1 Answer": "Yes",
            "Caption2 Answer": "No",
        },
        "1": {
            "Question": _existence_question(_pick(only_second, seed)),
            "Caption1 Answer": "No",
            "Caption2 Answer": "Yes",
        },
    }


_BE = frozenset("is are was were am".split())
_MODAL = frozenset("can could will would should shall may might must has have had".split())
_DO = frozenset("do does did".split())
_PRONOUNS = frozenset("it he she they we you i there".split())
_DEMONSTRATIVES = frozenset("this that these those".split())
_DETERMINERS = frozenset("the a an his her their its my your our some any".split())
# Words that start the predicate after a noun-phrase subject ("the cup | on the table").
_PREDICATE_OPENERS = (
    frozenset(
        """in on at under over near next beside behind above below with without to from by into
        onto through against between among across along around inside outside not
        visible present shown seen there more less fewer bigger smaller larger taller shorter
        the a an""".split()
    )
    # Descriptive words that are not also common nouns ("the traffic light", "the left side").
    | (
        _DESCRIPTIVE
        - frozenset("light front back left right top bottom middle center centre side".split())
    )
)
_PARTICIPLES = frozenset(
    """taken seen shown made broken written held worn built done drawn given hidden known left
    lit put set shut spread stuck torn thrown cut hung laid""".split()
)
# Bare verbs that follow the subject in do / modal questions ("Does the man | hold the cup?").
_BARE_VERBS = frozenset(
    """have hold wear show contain look appear seem see carry ride sit stand lie play eat drink
    read use face point touch cover need fit match belong exist swim fly run walk go come make
    take give get keep hang lean rest smile laugh cry sleep open close move jump climb throw
    catch kick hit push pull cross cut cook write draw paint drive park block fill reach
    reflect shine grow float sink fall lead follow wait watch hug kiss""".split()
)


def _subject_length(words: list[str], aux: str) -> int:
    """How many words after the auxiliary form the subject (at least one, never all)."""
    first = words[0].lower()
    nxt = words[1].lower() if len(words) > 1 else ""
    is_det = first in _DETERMINERS or (first in _DEMONSTRATIVES and nxt not in _PREDICATE_OPENERS)
    if not is_det:
        return 1
    n = 2  # a determiner and the head word
    if aux in _BE:
        while n < len(words) - 1:
            w = words[n].lower()
            if (
                w in _PREDICATE_OPENERS
                or w in _PARTICIPLES
                or (len(w) > 4 and w.endswith(("ing", "ed")))
            ):
                break
            n += 1
    else:
        verb = next((i for i in range(2, len(words)) if words[i].lower() in _BARE_VERBS), None)
        if verb is not None:
            n = verb
    return min(n, len(words) - 1)


@rule("vhexpansion-negation")
def vhexpansion_negation(variables: dict, seed: int | None) -> str:
    """Negate a yes/no question by the two rules of VHExpansion's prompt (Sec. 3.1, Fig. 3):
    a single "a"/"an" becomes "no" (the simple case); otherwise "Is it false that" + the
    question as a declarative sentence, changing nothing but word order and the first letter.
    """
    question = " ".join(str(variables["question"]).split()).rstrip(" ?.")
    words = question.split(" ")
    if len(words) < 2:
        raise OfflineRuleError(f"{variables['question']!r} is not a yes/no question")
    aux = words[0].lower()
    if aux not in _BE | _MODAL | _DO:
        raise OfflineRuleError(
            f"{variables['question']!r} does not start with an auxiliary verb (is, are, does, "
            "can, …), so it is not a yes/no question this rule can negate"
        )
    articles = [i for i, w in enumerate(words) if w in ("a", "an")]
    if len(articles) == 1:
        words[articles[0]] = "no"
        return " ".join(words) + "?"
    rest = words[1:]
    if len(rest) < 2:
        return f"Is it false that {rest[0]} {aux}?"
    n = _subject_length(rest, aux)
    subject, predicate = rest[:n], rest[n:]
    # Emphatic "do" keeps tense and verb form: "Does the man hold…" → "the man does hold…".
    return f"Is it false that {' '.join(subject)} {aux} {' '.join(predicate)}?"


@rule("caption-shorten")
def caption_shorten(variables: dict, seed: int | None) -> str:
    """Shorten a caption to at most ``max_chars`` characters (NaturalBench App. A shortens DOCCI
    captions below 230 characters): whole sentences while they fit, else cut at a word boundary.
    """
    caption = " ".join(str(variables["caption"]).split())
    limit = int(variables.get("max_chars", 230))
    if limit < 1:
        raise OfflineRuleError("max_chars must be at least 1")
    if len(caption) <= limit:
        return caption
    kept = ""
    for sentence in re.split(r"(?<=[.!?])\s+", caption):
        candidate = f"{kept} {sentence}".strip()
        if len(candidate) > limit:
            break
        kept = candidate
    if kept:
        return kept
    # Room for the closing full stop; cut at the last space that leaves it.
    budget = limit - 1
    space = caption.rfind(" ", 0, budget + 1)
    cut = caption[:space] if space > 0 else caption[:budget]
    words = cut.rstrip(" ,;:-").split(" ")
    # "rides a." reads as a mistake: drop dangling articles, prepositions and conjunctions.
    while len(words) > 1 and words[-1].lower().strip(",;:-") in _STOPWORDS:
        words.pop()
    return " ".join(words).rstrip(" ,;:-") + "."
