"""Prompts of the VLind-Bench recipe (vlind-bench.txt App. A) as editable gateway templates, the
offline drafter's rules for them, and the pure checks of what an LLM returns.

- ``vlind-triples``: App. A's "Prompt Template for Instance Triple Generation", its italic parts
  (concept, the prose example and the JSON examples) filled from the concept's 3 examples.
- ``vlind-vp-nouns``: App. A's "Prompt Template for Generating Nouns for VPs" (two key nouns of
  the context, two nouns that are absent).
- ``vlind-image-counterfactual`` / ``vlind-image-factual``: what an image endpoint is sent (Sec. 4:
  the context itself, in one of three styles; the factual image from s_fact).

Importing this module registers the offline rules.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from curation.gateway.offline import OfflineRuleError, rule

from . import concepts as concept_specs

TRIPLES_TEMPLATE = "vlind-triples"
NOUNS_TEMPLATE = "vlind-vp-nouns"
IMAGE_TEMPLATE = "vlind-image-counterfactual"
FACTUAL_IMAGE_TEMPLATE = "vlind-image-factual"

STYLES = ("photorealistic", "illustration", "cartoon")
# data.json image ids: 0–3 photorealistic, 4–7 illustration, 8–11 cartoon (App. C).
STYLE_BASE = {"photorealistic": 0, "illustration": 4, "cartoon": 8}
PER_STYLE = 4
MAX_TEXT = 500


def style_of_slot(slot: int) -> str:
    return STYLES[slot // PER_STYLE]


def slots_of_style(style: str, per_style: int = PER_STYLE) -> list[int]:
    base = STYLE_BASE[style]
    return list(range(base, base + min(per_style, PER_STYLE)))


TRIPLE_ITEM_SCHEMA = {
    "type": "object",
    "required": ["context", "true_statement", "false_statement"],
    "properties": {
        "id": {"type": ["integer", "string"]},
        "context": {"type": "string", "minLength": 1},
        "true_statement": {"type": "string", "minLength": 1},
        "false_statement": {"type": "string", "minLength": 1},
    },
}
TRIPLES_SCHEMA = {"type": "array", "minItems": 1, "items": TRIPLE_ITEM_SCHEMA}
NOUN_LIST_SCHEMA = {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}}
NOUNS_SCHEMA = {
    "type": "object",
    "required": ["nouns", "non-existent_nouns"],
    "properties": {"nouns": NOUN_LIST_SCHEMA, "non-existent_nouns": NOUN_LIST_SCHEMA},
}

# App. A, word for word outside the italic (concept-specific) parts, which are variables here.
TRIPLES_TEXT = (
    "Given a concept, create related counterfactual situation (context) which can be described "
    "with an image. Also generate two statements with different truth values for each "
    "situation. Make only clear statements so that there is no room for vague or different "
    "truth value of the statement depending on the point of view. For example, through the "
    'concept of "{concept}", we can create a counterfactual situation such as '
    '"{example_context}" and describe it with {example_image}. And then we can make two '
    'statements, "{example_true}" and "{example_false}", which is true and false under given '
    "counterfactual situation, respectively. List {count} context and statement pairs for the "
    'concept of "{concept}." Output the results using the following json template.\n\n'
    "{json_examples}"
)
NOUNS_TEXT = (
    "Extract nouns from the following context. If there are more than two nouns, pick the two "
    "most important nouns. Also generate two random nouns that are not included in the "
    "context. Here are some examples.\n\n"
    "Context: Wombats burrow in the frozen tundra, their tunnels creating intricate networks "
    'under the snow. {{"nouns": ["wombat", "tunnel"], "non-existent_nouns": ["zebra", '
    '"closet"]}}\n\n'
    'Context: The jellybean is heavier than the digital piano. {{"nouns": ["jellybean", '
    '"piano"], "non-existent_nouns": ["car", "oven"]}}\n\n'
    "Context: {context}"
)
IMAGE_TEXT = "{context} The image is in a {style} style."
FACTUAL_IMAGE_TEXT = "{statement} The image is in a photorealistic style."

TEMPLATES: dict[str, dict[str, Any]] = {
    TRIPLES_TEMPLATE: {
        "title": "VLind-Bench: instance triples for a concept",
        "source": "VLind-Bench App. A, prompt template for instance triple generation",
        "text": TRIPLES_TEXT,
        "output_schema": TRIPLES_SCHEMA,
    },
    NOUNS_TEMPLATE: {
        "title": "VLind-Bench: nouns for the visual-perception test",
        "source": "VLind-Bench App. A, prompt template for generating nouns for VPs",
        "text": NOUNS_TEXT,
        "output_schema": NOUNS_SCHEMA,
    },
    IMAGE_TEMPLATE: {
        "title": "VLind-Bench: counterfactual image prompt",
        "source": "VLind-Bench Sec. 4 (the context as input, three styles)",
        "text": IMAGE_TEXT,
    },
    FACTUAL_IMAGE_TEMPLATE: {
        "title": "VLind-Bench: factual image prompt",
        "source": "VLind-Bench Sec. 4 (s_fact as input)",
        "text": FACTUAL_IMAGE_TEXT,
    },
}


def triple_variables(*, concept: str, image_hint: str, examples: list[dict], count: int) -> dict:
    """The App. A template's variables: the first example in prose, the other two as JSON."""
    if len(examples) < 3:
        raise ValueError(f"concept {concept!r} needs three examples, has {len(examples)}")
    first = examples[0]
    keys = TRIPLE_ITEM_SCHEMA["required"]  # context, true_statement, false_statement
    shown = [{"id": k, **{key: ex[key] for key in keys}} for k, ex in enumerate(examples[1:3], 1)]
    body = ", ".join(json.dumps(item, ensure_ascii=False) for item in shown)
    return {
        "concept": concept,
        "count": int(count),
        "example_context": first["context"],
        "example_image": image_hint,
        "example_true": first["true_statement"],
        "example_false": first["false_statement"],
        "json_examples": f"[{body}, …]",
    }


# --------------------------------------------------------------------------------------------
# Checking drafted triples (beyond the JSON schema the gateway holds them to)
# --------------------------------------------------------------------------------------------
def clean_text(value: Any) -> str:
    return " ".join(str(value).split()) if isinstance(value, str) else ""


def _key(text: str) -> str:
    return " ".join(text.casefold().split()).rstrip(" .!")


def triples_check(
    items: Any, *, seen_contexts: set[str] | None = None, examples: list[dict] | None = None
) -> tuple[list[dict], list[str]]:
    """(usable triples, problems). Usable: three non-empty texts of at most 500 characters, two
    different statements, a context not seen before (in this concept or the batch) and not one
    of the few-shot examples copied back."""
    seen = {_key(c) for c in (seen_contexts or set())}
    seen |= {_key(ex["context"]) for ex in examples or []}
    kept: list[dict] = []
    problems: list[str] = []
    if not isinstance(items, list):
        return [], ["the output is not a list of triples"]
    for n, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            problems.append(f"item {n} is not an object")
            continue
        texts = {k: clean_text(item.get(k)) for k in TRIPLE_ITEM_SCHEMA["required"]}
        missing = [k for k, v in texts.items() if not v]
        if missing:
            problems.append(f"item {n}: empty {', '.join(missing)}")
            continue
        long = [k for k, v in texts.items() if len(v) > MAX_TEXT]
        if long:
            problems.append(f"item {n}: {', '.join(long)} longer than {MAX_TEXT} characters")
            continue
        if _key(texts["true_statement"]) == _key(texts["false_statement"]):
            problems.append(f"item {n}: the true and false statements are the same")
            continue
        key = _key(texts["context"])
        if key in seen:
            problems.append(f"item {n}: the context repeats an earlier one or an example")
            continue
        seen.add(key)
        kept.append(texts)
    return kept, problems


# --------------------------------------------------------------------------------------------
# Offline drafter rules (demo, tests): labelled offline by the gateway
# --------------------------------------------------------------------------------------------
@rule(TRIPLES_TEMPLATE)
def offline_triples(variables: dict, seed: int | None) -> list[dict]:
    """Hand-written triples of the concept's bank (``concepts.py``), ``count`` of them starting
    at ``seed`` (the number already drafted), cycling; ids as in the App. A JSON template."""
    concept = str(variables.get("concept", ""))
    bank = concept_specs.offline_bank(concept)
    if not bank:
        raise OfflineRuleError(
            f"the offline drafter has no hand-written triples for the concept {concept!r}; "
            "configure an LLM provider to draft triples for it"
        )
    count = max(1, int(variables.get("count") or 1))
    start = int(seed or 0)
    picked = [bank[(start + k) % len(bank)] for k in range(min(count, len(bank)))]
    return [{"id": k, **t} for k, t in enumerate(picked, start=1)]


_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
_DETERMINERS = frozenset(
    "a an the this that these those his her their its my your our every each some any no one "
    "two three four five many several".split()
)
_PREPOSITIONS = frozenset(
    """in on at to for from with without by into onto over under near beside behind above below
    between among across along around through against off up down out of like instead
    inside outside""".split()
)
# Words that end a noun phrase and leave its last word as the head ("The jellybean | is").
_AUX = frozenset(
    """is are was were be been being am has have had do does did can could will would should
    shall may might must""".split()
)
_CONJUNCTIONS = frozenset("and or but while when where who which that as than then so".split())
_OTHER_STOP = frozenset(
    "it he she they we you i him them there here very too also just only not whole such".split()
)
_ADJECTIVES = frozenset(
    """red orange yellow green blue purple pink brown black white gray grey golden silver dark
    light bright big small large little tall short long wide narrow young old new frozen
    tropical giant tiny huge ancient modern medieval fresh ripe heavy famous snowy sandy icy
    busy dense crowded sunny wooden entire single perfectly brand-new shiny full empty
    digital intricate variety next high flat grayer older underwater square solid""".split()
    # Words for a part of something: "the middle of a river" is about the river.
    + "middle side surface bottom top end edge front back part center centre".split()
)
# Frequent present-tense verbs of context sentences: they end the subject's noun phrase.
_VERBS = frozenset(
    """covers cover shows show holds hold stands stand lives live grows grow eats eat chews chew
    grazes graze drinks drink gnaws gnaw stores store nibbles nibble sits sit towers swims swim
    carries carry hops hop walks walk runs run rides ride flies fly sunbathes guards guard
    turns turn comes come hides hide breathes breathe roams roam checks check paints paint
    fights fight builds build crosses cross cooks cook leaps leap burrows burrow hangs hang
    fills fill rises rise blooms bloom flows flow sets set sinks sink floats float drifts
    drift crushes crush lifts lift outweighs outweigh lands land pours pour sails sail wear
    wears fall falls lies lie waddle waddles rests rest dents dent sleeps sleep delivers
    deliver skate skates freezes freeze blows blow parks park""".split()
)
_IRREGULAR = {"leaves": "leaf", "people": "person", "children": "child", "mice": "mouse"}
_ABSENT_POOL = tuple(
    """zebra closet umbrella bicycle guitar teapot ladder violin toaster helmet kite
    typewriter saxophone lantern skateboard pineapple tractor microscope hammock
    trumpet""".split()
)


def _singular(word: str) -> str:
    lower = word.lower()
    if lower in _IRREGULAR:
        return _IRREGULAR[lower]
    if lower.endswith("ies") and len(lower) > 4:
        return lower[:-3] + "y"
    if lower.endswith(("ches", "shes", "sses", "xes")):
        return lower[:-2]
    if lower.endswith("s") and not lower.endswith(("ss", "us", "is")) and len(lower) > 3:
        return lower[:-1]
    return lower


def _is_verbish(word: str) -> bool:
    lower = word.lower()
    return lower in _VERBS or (len(lower) > 4 and lower.endswith(("ing", "ed", "ly")))


def key_nouns(context: str, limit: int = 2) -> list[str]:
    """Heads of the context's noun phrases in order (a small stand-in for App. A's GPT-4 step):
    a phrase opens at the sentence start, a determiner or a preposition and ends at a verb,
    an auxiliary, a conjunction or punctuation; its last non-adjective word is the head. A
    phrase cut by a determiner or preposition after two words or more ends in a verb
    ("the Statue of Liberty holds a …"), which is dropped when it ends in -s."""
    tokens = re.findall(r"[A-Za-z][A-Za-z'’-]*|[^\sA-Za-z]", context)
    heads: list[str] = []
    run: list[str] = []
    opened = True

    def close(cut_by_opener: bool) -> None:
        words = [w for w in run if w.lower() not in _ADJECTIVES]
        if cut_by_opener and len(words) >= 2 and words[-1].lower().endswith("s"):
            words = words[:-1]
        if words:
            head = _singular(re.split(r"['’]", words[-1])[0])
            if len(head) > 2 and head not in heads:
                heads.append(head)

    for token in tokens:
        lower = token.lower()
        if not _WORD.fullmatch(token):
            if run:
                close(False)
            run, opened = [], False
        elif lower in _DETERMINERS or lower in _PREPOSITIONS:
            if run:
                close(True)
            run, opened = [], True
        elif lower in _AUX or lower in _CONJUNCTIONS or lower in _OTHER_STOP:
            if run:
                close(False)
            run, opened = [], lower in _CONJUNCTIONS
        elif _is_verbish(token):
            if run:
                close(False)
            run, opened = [], False
        elif opened:
            run.append(token)
    if run:
        close(False)
    return heads[:limit]


@rule(NOUNS_TEMPLATE)
def offline_nouns(variables: dict, seed: int | None) -> dict:
    """Two key nouns of the context (noun-phrase heads) and two nouns from a fixed pool that the
    context does not mention, chosen by the seed."""
    context = str(variables.get("context", ""))
    nouns = key_nouns(context)
    if not nouns:
        raise OfflineRuleError(f"found no noun in the context {context!r}")
    mentioned = {w.lower() for w in _WORD.findall(context)}
    mentioned |= {_singular(w) for w in mentioned}
    pool = [n for n in _ABSENT_POOL if n not in mentioned]
    rng = random.Random(seed if seed is not None else len(context))
    return {"nouns": nouns, "non-existent_nouns": rng.sample(pool, 2)}
