"""The three question-drafting prompts of NaturalBench App. A, their output schemas, the checks a
draft must pass, and the offline drafter's rules for the prompts the gateway lacks.

- yes/no (App. A "Default instruction for GPT-4"): the gateway's built-in ``naturalbench-yes-no``
  holds exactly this text, so it is reused;
- multiple-choice ("Instructions for generating multiple-choice QA pairs");
- yes/no in another language ("Instructions for generating Chinese and Hindi QA pairs").

Every prompt asks for ``{"0": {"Question", "Caption1 Answer", "Caption2 Answer"}, "1": …}``.
Caption 1 is image 0 and caption 2 image 1 (METRICS.md Sec. 1), so a checked draft fits the
published layout by construction: question 0 is answered a0 on image 0, question 1 a1.

``template_ensure`` runs when a stage needs a template (never at import: no database then);
the offline rules register at import (``curation.recipes`` imports this package).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from curation import gateway
from curation.gateway.offline import OfflineRuleError, rule
from evaluation.families.naturalbench import layout as nb

YES_NO_TEMPLATE = "naturalbench-yes-no"
MULTIPLE_CHOICE_TEMPLATE = "naturalbench-multiple-choice"
LANGUAGE_TEMPLATE = "naturalbench-yes-no-language"
SHORTEN_TEMPLATE = "caption-shorten"
MAX_QUESTION = 1000

# Names the multilingual prompt uses ("two questions in Chinese"); other codes go as they are.
LANGUAGE_NAMES = {
    "en": "English",
    "zh": "Chinese",
    "hi": "Hindi",
    "es": "Spanish",
    "fr": "French",
    "de": "German",
    "ja": "Japanese",
    "ko": "Korean",
    "ar": "Arabic",
    "ru": "Russian",
    "pt": "Portuguese",
    "it": "Italian",
}

_JSON_LINE = (
    "Please response in JSON format with question indices as the keys, starting from 0 and "
    'question-answer pairs {{"Question": "...", "Caption1 Answer": "...", '
    '"Caption2 Answer": "..."}} as the values.'
)


def _schema(answer: dict) -> dict:
    item = {
        "type": "object",
        "properties": {
            "Question": {"type": "string", "minLength": 1},
            "Caption1 Answer": answer,
            "Caption2 Answer": answer,
        },
        "required": ["Question", "Caption1 Answer", "Caption2 Answer"],
    }
    return {"type": "object", "properties": {"0": item, "1": item}, "required": ["0", "1"]}


TEMPLATES: dict[str, dict] = {
    MULTIPLE_CHOICE_TEMPLATE: {
        "title": "NaturalBench: two multiple-choice questions from a caption pair",
        "source": "NaturalBench App. A, instructions for generating multiple-choice QA pairs",
        "text": (
            "I will present two captions for two images. Please help me generate two "
            "multiple-choice questions that highlight the differences between the captions. Each "
            "question should have options A and B. For the first question, option A corresponds "
            "to Caption 1 and option B corresponds to Caption 2. For the second question, option "
            "A corresponds to Caption 2 and option B corresponds to Caption 1.\n"
            "Caption 1: {caption_1}\n"
            "Caption 2: {caption_2}\n" + _JSON_LINE
        ),
        "output_schema": _schema({"type": "string", "minLength": 1}),
    },
    LANGUAGE_TEMPLATE: {
        "title": "NaturalBench: two yes/no questions in another language",
        "source": "NaturalBench App. A, instructions for generating Chinese and Hindi QA pairs",
        "text": (
            "I will present two captions for two images. Please help me generate two questions "
            "in {language} that highlight the differences between the captions. The first "
            "question should result in a 'Yes' answer for Caption 1 and a 'No' for Caption 2. "
            "The second question should result in a 'No' answer for Caption 1 and a 'Yes' for "
            "Caption 2.\n"
            "Caption 1: {caption_1}\n"
            "Caption 2: {caption_2}\n" + _JSON_LINE
        ),
        # Answers may come back in the target language (是 / 否, हाँ / नहीं): checked below.
        "output_schema": _schema({"type": "string", "minLength": 1}),
    },
}


def language_name(code: str) -> str:
    base = (code or "").split("-")[0].lower()
    return LANGUAGE_NAMES.get(base, code)


def is_english(code: str) -> bool:
    return (code or "en").split("-")[0].lower() == "en"


def template_name(question_type: str, language: str) -> str:
    """Which App. A prompt drafts questions of this type in this language."""
    if question_type == nb.MULTIPLE_CHOICE:
        if not is_english(language):
            raise ValueError(
                "NaturalBench's multiple-choice prompt is English only (App. A); the "
                "multilingual prompt drafts yes/no questions"
            )
        return MULTIPLE_CHOICE_TEMPLATE
    if question_type == nb.YES_NO:
        return YES_NO_TEMPLATE if is_english(language) else LANGUAGE_TEMPLATE
    raise ValueError(f"unknown question type {question_type!r}")


def template_variables(*, question_type: str, language: str, caption_1: str, caption_2: str):
    variables = {"caption_1": caption_1, "caption_2": caption_2}
    if template_name(question_type, language) == LANGUAGE_TEMPLATE:
        variables["language"] = language_name(language)
    return variables


def templates_ensure(project=None) -> dict[str, Any]:
    """Seed (idempotently) the prompts this recipe uses; returns by name the versions
    ``project`` renders (pinned at its first use; no project: the current ones). An admin's
    edited version stays current (``template_ensure`` keeps it)."""
    used = gateway.templates_ensure(TEMPLATES, project=project)
    # The gateway's built-ins, seeded on use.
    used.update(gateway.templates_for((YES_NO_TEMPLATE, SHORTEN_TEMPLATE), project=project))
    return used


# --------------------------------------------------------------------------------------------
# Checking a draft (pure)
# --------------------------------------------------------------------------------------------
class DraftInvalid(ValueError):
    """The LLM's JSON does not give two usable questions; ``problems`` says why."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("; ".join(problems))


@dataclass
class Draft:
    """Two questions in the published layout: question 0 is a0 on image 0 (caption 1)."""

    question_0: str
    question_1: str
    choices: dict[str, list[str]] = field(default_factory=dict)  # per question: [a0, a1] shown


_YES = {"yes", "y", "true", "是", "是的", "对", "有", "हाँ", "हां", "हा", "जी हाँ"}
_NO = {"no", "n", "false", "否", "不", "不是", "没有", "नहीं", "नही", "जी नहीं"}


def _yes_no(value: Any) -> str | None:
    text = str(value or "").strip().strip(".!。！").strip().casefold()
    if text in _YES:
        return "Yes"
    if text in _NO:
        return "No"
    return None


def _entries(output: Any) -> tuple[dict, dict]:
    if isinstance(output, list) and len(output) == 2:
        first, second = output
    elif isinstance(output, dict):
        first = output.get("0", output.get(0))
        second = output.get("1", output.get(1))
    else:
        raise DraftInvalid(["expected a JSON object with the keys 0 and 1"])
    if not isinstance(first, dict) or not isinstance(second, dict):
        raise DraftInvalid(["expected question 0 and question 1 as JSON objects"])
    return first, second


def _question(entry: dict, k: int, problems: list[str]) -> str:
    text = " ".join(str(entry.get("Question") or "").split())
    if not text:
        problems.append(f"question {k} is empty")
    elif len(text) > MAX_QUESTION:
        problems.append(f"question {k} is longer than {MAX_QUESTION} characters")
    return text


def check_yes_no(output: Any) -> Draft:
    """Two questions whose answers are opposite across the captions; the one answered Yes for
    caption 1 becomes question 0 (the prompt asks for that order; the other order is accepted and
    put right, never anything else)."""
    first, second = _entries(output)
    problems: list[str] = []
    slots: dict[int, str] = {}
    for k, entry in enumerate((first, second)):
        text = _question(entry, k, problems)
        c1, c2 = _yes_no(entry.get("Caption1 Answer")), _yes_no(entry.get("Caption2 Answer"))
        if c1 is None or c2 is None:
            problems.append(f"question {k}: the caption answers must be Yes or No")
            continue
        if c1 == c2:
            problems.append(
                f"question {k} has the same answer ({c1}) for both captions; "
                "its answer must change with the image"
            )
            continue
        slot = 0 if c1 == "Yes" else 1
        if slot in slots:
            problems.append(
                f"both questions are answered {c1} for caption 1; one must be Yes and the other No"
            )
            continue
        slots[slot] = text
    if not problems and slots[0].casefold() == slots[1].casefold():
        problems.append("the two questions are the same")
    if problems:
        raise DraftInvalid(problems)
    return Draft(slots[0], slots[1], {"q0": ["Yes", "No"], "q1": ["Yes", "No"]})


_BARE_LETTER = re.compile(r"^\(?(?:option\s+)?([AB])\)?[.:]?$", re.IGNORECASE)
_PREFIXED = re.compile(r"^\(?([AB])[).:]\s*(\S.*)$")
_INLINE = re.compile(r"\s*\(A\)\s*(?P<a>.+?)\s*\(B\)\s*(?P<b>.+?)\s*$", re.DOTALL)
_LISTED = re.compile(
    r"\s*Options?\s*:\s*A\s*[:.)]\s*(?P<a>.+?)\s*;\s*B\s*[:.)]\s*(?P<b>.+?)\s*;?\s*$",
    re.DOTALL | re.IGNORECASE,
)


def _letter(value: str) -> tuple[str | None, str]:
    """("A", "") for a bare letter, ("A", "three") for "A: three", (None, text) otherwise."""
    bare = _BARE_LETTER.match(value)
    if bare:
        return bare.group(1).upper(), ""
    prefixed = _PREFIXED.match(value)
    if prefixed:
        return prefixed.group(1), prefixed.group(2).strip()
    return None, value


def _split_options(text: str) -> tuple[str, str | None, str | None]:
    """A question that lists its options itself: (question, A, B); else (text, None, None)."""
    for pattern in (_LISTED, _INLINE):
        found = pattern.search(text)
        if found:
            return text[: found.start()].strip(), found["a"].strip(), found["b"].strip()
    return text, None, None


def check_multiple_choice(output: Any) -> Draft:
    """Two A/B questions per the prompt: for question 0, option A is caption 1's answer and B
    caption 2's; for question 1, A is caption 2's and B caption 1's. The answers may be the option
    texts, "A: text", or bare letters when the question lists its options."""
    problems: list[str] = []
    questions: list[str] = []
    choices: dict[str, list[str]] = {}
    for k, entry in enumerate(_entries(output)):
        base, listed_a, listed_b = _split_options(str(entry.get("Question") or ""))
        base = _question({"Question": base}, k, problems)
        raw = [" ".join(str(entry.get(f"Caption{c} Answer") or "").split()) for c in (1, 2)]
        parsed = [_letter(r) for r in raw]
        want = ("A", "B") if k == 0 else ("B", "A")  # letters of caption 1 and caption 2
        letters = [p[0] for p in parsed]
        if any(letters):
            if tuple(letters) != want:
                problems.append(
                    f"question {k}: caption 1 must get option {want[0]} and caption 2 option "
                    f"{want[1]} (got {raw[0]!r} and {raw[1]!r})"
                )
                continue
            by_letter = {letters[0]: parsed[0][1], letters[1]: parsed[1][1]}
            option_a = by_letter["A"] or listed_a
            option_b = by_letter["B"] or listed_b
        else:
            c1, c2 = raw
            option_a, option_b = (c1, c2) if k == 0 else (c2, c1)
        if not option_a or not option_b:
            problems.append(f"question {k} lacks the text of option A or B")
            continue
        if option_a.casefold() == option_b.casefold():
            problems.append(f"question {k} has the same text for options A and B")
            continue
        published = nb.mc_question(base, option_a, option_b)
        if nb.mc_options(published) != (base.strip(), option_a.strip(), option_b.strip()):
            problems.append(f"question {k}: an option's text breaks the 'A:<x>; B:<y>;' layout")
            continue
        questions.append(published)
        choices[f"q{k}"] = [f"A: {option_a.strip()}", f"B: {option_b.strip()}"]
    if not problems and questions[0].casefold() == questions[1].casefold():
        problems.append("the two questions are the same")
    if problems:
        raise DraftInvalid(problems)
    return Draft(questions[0], questions[1], choices)


def check_draft(output: Any, question_type: str) -> Draft:
    if question_type == nb.MULTIPLE_CHOICE:
        return check_multiple_choice(output)
    return check_yes_no(output)


# --------------------------------------------------------------------------------------------
# Offline drafter rules for the prompts the gateway lacks (demo, tests)
# --------------------------------------------------------------------------------------------
def _drafted(first: tuple[str, str, str], second: tuple[str, str, str]) -> dict:
    """Questions 0 and 1 as (question, caption 1's answer, caption 2's) in the prompts' JSON."""
    keys = ("Question", "Caption1 Answer", "Caption2 Answer")
    return {"0": dict(zip(keys, first, strict=True)), "1": dict(zip(keys, second, strict=True))}


def _caption(variables: dict, k: int) -> str:
    text = " ".join(str(variables.get(f"caption_{k}") or "").split()).rstrip(".")
    if not text:
        raise OfflineRuleError(f"caption {k} is empty")
    return text


@rule(MULTIPLE_CHOICE_TEMPLATE)
def draft_multiple_choice(variables: dict, seed: int | None) -> dict:
    """The two captions as the options: "which fits" (A = caption 1) and "which does not fit"
    (A = caption 2), in the prompt's JSON layout. True whenever the captions are."""
    c1, c2 = _caption(variables, 1), _caption(variables, 2)
    if c1.casefold() == c2.casefold():
        raise OfflineRuleError("the two captions are the same")
    return _drafted(
        ("Which description fits the image?", c1, c2),
        ("Which description does not fit the image?", c2, c1),
    )


_MATCH_QUESTION = {
    "Chinese": "这张图片可以用“{caption}”来描述吗？",
    "Hindi": "क्या इस चित्र का वर्णन “{caption}” से किया जा सकता है?",
    "English": "Can this image be described as “{caption}”?",
}


@rule(LANGUAGE_TEMPLATE)
def draft_yes_no_language(variables: dict, seed: int | None) -> dict:
    """ "Can this image be described as “<caption>”?" in the target language, once per caption:
    yes for its own image, no for the other."""
    language = str(variables.get("language") or "")
    pattern = _MATCH_QUESTION.get(language)
    if pattern is None:
        raise OfflineRuleError(
            f"no offline phrasing for {language!r}; known: {', '.join(sorted(_MATCH_QUESTION))}"
        )
    c1, c2 = _caption(variables, 1), _caption(variables, 2)
    return _drafted(
        (pattern.format(caption=c1), "Yes", "No"), (pattern.format(caption=c2), "No", "Yes")
    )
