"""Texts of the VisIT-Bench recipe: the reference prompt (Sec. 2.1) as editable templates with their
offline rule, the guidance each task shows (App. C, Figs. 11–15), and the parser of the
instruction-generation form.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from annotator.platform.errors import Invalid
from curation.gateway.offline import OfflineRuleError, rule

REFERENCE_TEMPLATE = "visit-reference"
REFERENCE_MULTI_TEMPLATE = "visit-reference-multi"
REFERENCE_PURPOSE = "visit.reference"

# Sec. 2.1: "Consider an image depicted by: <caption>'. Now, briefly follow this instruction, and
# you can add a short explanation: <instruction>'. Response:" — used for single and multiple
# images "with appropriate modifications for the latter".
TEMPLATES = {
    REFERENCE_TEMPLATE: {
        "title": "VisIT-Bench: reference response from caption + instruction",
        "source": "VisIT-Bench Sec. 2.1 (GPT-4 reference prompt)",
        "text": (
            "Consider an image depicted by: '{caption}'. Now, briefly follow this instruction, "
            "and you can add a short explanation: '{instruction}'. Response:"
        ),
    },
    REFERENCE_MULTI_TEMPLATE: {
        "title": "VisIT-Bench: reference response for several images",
        "source": "VisIT-Bench Sec. 2.1 (GPT-4 reference prompt, multi-image variant)",
        "text": (
            "Consider {count} images, depicted by: '{caption}'. Now, briefly follow this "
            "instruction, and you can add a short explanation: '{instruction}'. Response:"
        ),
    },
}


def _first_sentence(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    match = re.search(r"(?<=[.!?])\s", text)
    first = text[: match.start()] if match else text
    if len(first) > limit:
        first = first[:limit].rsplit(" ", 1)[0] + "…"
    return first


def _offline_reference(variables: dict, seed: int | None) -> str:
    """A rule-based stand-in for the reference LLM (demo and tests without a key): it answers
    from the caption's first sentence, so a reviewer can see what it built on. Generations it
    writes are recorded as the offline drafter's and the pages label them."""
    caption = str(variables.get("caption", "")).strip()
    instruction = " ".join(str(variables.get("instruction", "")).split())
    if not caption or not instruction:
        raise OfflineRuleError("a reference needs both the caption and the instruction")
    first = _first_sentence(caption)
    return (
        f"From the description: {first} Following the instruction “{instruction}” from these "
        "details alone, this is what the image shows that the answer depends on."
    )


rule(REFERENCE_TEMPLATE)(_offline_reference)
rule(REFERENCE_MULTI_TEMPLATE)(_offline_reference)


# --- Guidance shown to people (App. C) ----------------------------------------------------------

INSTRUCTION_GUIDANCE = """\
## Write a new instruction of the same family

You see an **example** of an instruction family: an image, an instruction someone might give a
chatbot about it, and a good response. Write a **new instruction of the same family** about an
image you choose (VisIT-Bench Sec. 2.1, Fig. 11).

1. Find a permissively licensed image, e.g. on [Openverse](https://openverse.org) (Creative
   Commons), and **upload** it.
2. Fill in the three lines of the text box:
   - `Instruction:` your instruction (a request or question that needs the image);
   - `Image source:` the page you took the image from (a URL);
   - `Image licence:` its licence, e.g. `CC BY 2.0` or `public domain`.
3. Multi-image families: upload the first image and list the others as `Other image:` lines
   with their URLs.

The instruction must test the same skill as the example, but must not copy it. Submissions
without a source or licence are refused.
"""

CAPTION_GUIDANCE = """\
## Write an instruction-conditioned caption

Describe the image so that **someone who only reads your text could follow the instruction**
(VisIT-Bench Sec. 2.1, Fig. 12). A text-only model will later draft the reference answer, and a
text-only judge will compare model answers, from your caption alone.

- Describe what the instruction needs in detail: if it asks about colours, name every colour;
  if it asks to count, give the exact count; copy any text the instruction is about.
- Then describe the rest of the scene briefly.
- Describe, do not answer: no opinions, no guesses, and do not solve the instruction.

Example — instruction “Which candy colours are on the spoon?”: not “skittles and a spoon”, but
“A silver spoon holds five skittles: two red, one green, one yellow and one purple …”.
"""

REVIEW_GUIDANCE = """\
## Does the response follow the instruction correctly?

You see the image(s), the instruction, the instruction-conditioned caption and a response a
language model wrote from the caption alone (VisIT-Bench Sec. 2.1, Figs. 13–14).

- **Accept** (`a`) when the response follows the instruction correctly for this image.
- Otherwise **reject** (`r`) and say where the problem lies:
  - `1` **Problem in the caption**: the caption misses or misstates something the instruction
    needs, so the response could not be right. The caption goes back to be rewritten.
  - `2` **Problem in the response**: the caption was enough, the response is wrong anyway
    (wrong reasoning, wrong facts). The instance is discarded.
"""

RATING_GUIDANCE = """\
## Which response follows the instruction better?

You see an instruction about an image, the image's instruction-conditioned caption, and two
responses (VisIT-Bench Sec. 4.2, Fig. 15). Decide which one is better, judging **accuracy,
helpfulness and detail**.

| key | choice |
| --- | --- |
| `a` | the **left** response is better |
| `b` | the **right** response is better |

There is **no tie**: if both are equally good or bad, pick either. Left and right are shuffled
for every person.
"""

REVIEW_QUESTION = "Does the response follow the instruction correctly?"
REVIEW_CRITERIA = [
    "The response does what the instruction asks, all parts of it.",
    "Everything it says about the image agrees with the image and the caption.",
    "The caption holds what the instruction needs (else: problem in the caption).",
]
REASON_CAPTION = "caption"
REASON_RESPONSE = "response"
REVIEW_REASONS = [
    {"code": REASON_CAPTION, "label": "Problem in the caption"},
    {"code": REASON_RESPONSE, "label": "Problem in the response"},
]


# --- The instruction-generation form ------------------------------------------------------------

INSTRUCTION_DRAFT = "Instruction: \nImage source: \nImage licence: \n"
_LABELS = {
    "instruction": "instruction",
    "image source": "source",
    "source": "source",
    "image licence": "licence",
    "image license": "licence",
    "licence": "licence",
    "license": "licence",
    "other image": "other",
    "other images": "other",
}
_LINE = re.compile(r"^\s*([A-Za-z ]{5,14})\s*:\s*(.*)$")
_URL = re.compile(r"^https?://\S+$", re.IGNORECASE)


@dataclass
class InstructionForm:
    instruction: str
    source: str
    licence: str
    other_images: list[str] = field(default_factory=list)


def parse_instruction_form(text: str) -> InstructionForm:
    """The labelled lines of an instruction-generation answer; a line without a label continues
    the previous field (instructions may span lines). A missing required line refuses the
    submission (Invalid says which)."""
    values: dict[str, list[str]] = {"instruction": [], "source": [], "licence": []}
    others: list[str] = []
    current: str | None = None
    for line in (text or "").splitlines():
        match = _LINE.match(line)
        label = _LABELS.get(" ".join(match.group(1).lower().split())) if match else None
        if label is not None:
            value = match.group(2).strip()
            if label == "other":
                if value:
                    others.append(value)
                current = None
            else:
                current = label
                if value:
                    values[label].append(value)
        elif current is not None and line.strip():
            values[current].append(line.strip())
    form = InstructionForm(
        instruction=" ".join(" ".join(values["instruction"]).split()),
        source=" ".join(values["source"]),
        licence=" ".join(values["licence"]),
        other_images=others,
    )
    missing = [
        name
        for name, value in (
            ("Instruction", form.instruction),
            ("Image source", form.source),
            ("Image licence", form.licence),
        )
        if not value
    ]
    if missing:
        raise Invalid(
            f"Fill in the line{'s' if len(missing) > 1 else ''} {', '.join(missing)}: "
            "every new instruction needs its image's source and licence."
        )
    bad = [u for u in others if not _URL.match(u)]
    if bad:
        raise Invalid(f"'Other image' must be an http(s) URL, got {bad[0][:80]!r}.")
    if len(form.source) > 500 or len(form.licence) > 200:
        raise Invalid("The image source (500) or licence (200 characters) is too long.")
    return form
