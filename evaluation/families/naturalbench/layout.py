"""The NaturalBench sample: 2 images × 2 questions in the published layout, and its check.

METRICS.md Sec. 1; naturalbench.txt Sec. 3 (step 2) and App. A. Flattened order q0_i0, q0_i1,
q1_i0, q1_i1 with ground truth a0, a1, a1, a0: question 0 is answered a0 on image 0 and a1 on
image 1, question 1 the reverse, so every question and every image has one a0 and one a1 and a
"blind" answer scores at chance. a0 = "Yes" / "A", a1 = "No" / "B". This is the layout the
generation prompts produce (App. A): question 0 is "Yes" for caption 1 (image 0) and "No" for
caption 2; for multiple choice, option A of question 0 is caption 1 and option A of question 1 is
caption 2. Multiple-choice questions carry their options as "<question>\\nOption: A:<x>; B:<y>;".
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

YES_NO = "yes_no"
MULTIPLE_CHOICE = "multiple_choice"
QUESTION_TYPES = (YES_NO, MULTIPLE_CHOICE)
ANSWERS = {YES_NO: ("Yes", "No"), MULTIPLE_CHOICE: ("A", "B")}  # (a0, a1)
_KIND = {YES_NO: "yes/no", MULTIPLE_CHOICE: "multiple-choice"}

SAMPLE_KEYS = ("q0_i0", "q0_i1", "q1_i0", "q1_i1")
GROUND_TRUTH = ("a0", "a1", "a1", "a0")  # in SAMPLE_KEYS order
# The published record's answer fields, in SAMPLE_KEYS order.
ANSWER_FIELDS = (
    "Image_0_Question_0",
    "Image_1_Question_0",
    "Image_0_Question_1",
    "Image_1_Question_1",
)
RECORD_FIELDS = (
    "Index",
    "Image_0",
    "Image_1",
    "Question_0",
    "Image_0_Question_0",
    "Image_1_Question_0",
    "Question_1",
    "Image_0_Question_1",
    "Image_1_Question_1",
    "Question_Type",
    "Source",
)
_REQUIRED = ("Image_0", "Image_1", "Question_0", "Question_1", *ANSWER_FIELDS, "Question_Type")

_OPTIONS = re.compile(r"\nOption:\s*A:(?P<a>.*?);\s*B:(?P<b>.*?);\s*\Z", re.DOTALL)


class LayoutError(ValueError):
    """A sample that breaks the NaturalBench layout; ``problems`` lists every reason."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__("not a NaturalBench sample: " + "; ".join(self.problems))


def expected_answers(question_type: str) -> tuple[str, str, str, str]:
    """The four answers in SAMPLE_KEYS order: ("Yes", "No", "No", "Yes") or ("A", "B", "B", "A")."""
    a0, a1 = ANSWERS[question_type]
    return (a0, a1, a1, a0)


def mc_question(question: str, option_a: str, option_b: str) -> str:
    """Multiple-choice text with its options embedded, as published."""
    return f"{question.strip()}\nOption: A:{option_a.strip()}; B:{option_b.strip()};"


def mc_options(text: str) -> tuple[str, str, str] | None:
    """(question, option A, option B) of a multiple-choice text, or None if it has no options."""
    found = _OPTIONS.search(text)
    if found is None:
        return None
    return text[: found.start()].strip(), found["a"].strip(), found["b"].strip()


def _question_type(record: Mapping[str, Any]) -> Any:
    # Older copies of the dataset spell the field with a space (METRICS.md Sec. 1).
    return record.get("Question_Type", record.get("Question Type"))


def _present(value: Any) -> bool:
    return value is not None and not (isinstance(value, str) and not value.strip())


def _canonical(answer: Any, question_type: str) -> str | None:
    """The canonical spelling of an answer of this question type ("yes " → "Yes"), else None."""
    if not isinstance(answer, str):
        return None
    for option in ANSWERS[question_type]:
        if answer.strip().casefold() == option.casefold():
            return option
    return None


def sample_problems(record: Mapping[str, Any]) -> list[str]:
    """Every way ``record`` breaks the layout (empty list: it is a valid sample)."""
    problems = []
    qtype = _question_type(record)
    for field in _REQUIRED:
        value = _question_type(record) if field == "Question_Type" else record.get(field)
        if not _present(value):
            problems.append(f"missing {field}")
    if problems:
        return problems
    if qtype not in QUESTION_TYPES:
        return [f"Question_Type must be one of {', '.join(QUESTION_TYPES)}, got {qtype!r}"]

    if str(record["Image_0"]) == str(record["Image_1"]):
        problems.append("Image_0 and Image_1 are the same image")
    questions = (record["Question_0"], record["Question_1"])
    if not all(isinstance(q, str) for q in questions):
        return [*problems, "Question_0 and Question_1 must be text"]
    if questions[0].strip().casefold() == questions[1].strip().casefold():
        problems.append("Question_0 and Question_1 are the same question")
    for q, text in enumerate(questions):
        options = mc_options(text)
        if qtype == MULTIPLE_CHOICE and options is None:
            problems.append(
                f"Question_{q} is multiple-choice but lists no options "
                "(expected '<question>\\nOption: A:<x>; B:<y>;')"
            )
        elif qtype == MULTIPLE_CHOICE:
            _, a, b = options
            if not a or not b:
                problems.append(f"Question_{q} has an empty option")
            elif a.casefold() == b.casefold():
                problems.append(f"Question_{q} has the same text for options A and B")
        elif options is not None:
            problems.append(f"Question_{q} lists options A/B but Question_Type is yes_no")

    a0, a1 = ANSWERS[qtype]
    answers = {}
    for field in ANSWER_FIELDS:
        answers[field] = _canonical(record[field], qtype)
        if answers[field] is None:
            problems.append(
                f"{field} = {record[field]!r} is not a {_KIND[qtype]} answer ({a0} or {a1})"
            )
    if any(v is None for v in answers.values()):
        return problems

    for q, (want_0, want_1) in enumerate(((a0, a1), (a1, a0))):
        got_0, got_1 = answers[f"Image_0_Question_{q}"], answers[f"Image_1_Question_{q}"]
        if got_0 == got_1:
            problems.append(
                f"Question_{q} has the same answer ({got_0}) on both images; "
                "its answer must change with the image"
            )
        elif (got_0, got_1) != (want_0, want_1):
            problems.append(
                f"Question_{q} must be answered {want_0} on Image_0 and {want_1} on Image_1 "
                f"(got {got_0} and {got_1}): swap the questions or the images"
            )
    return problems


def sample_check(record: Mapping[str, Any]) -> None:
    """Refuse a sample that breaks the layout: LayoutError naming every problem."""
    problems = sample_problems(record)
    if problems:
        raise LayoutError(problems)


def sample_build(
    *,
    image_0: Any,
    image_1: Any,
    question_0: str,
    question_1: str,
    question_type: str,
    answers: Mapping[str, str] | Sequence[str],
    source: str = "",
    index: Any = None,
    language: str | None = None,
) -> dict[str, Any]:
    """A published-layout record from a pair, two questions and their four answers.

    ``answers`` maps SAMPLE_KEYS (q0_i0, q0_i1, q1_i0, q1_i1) to answers, or lists them in that
    order; they are spelled canonically ("yes" → "Yes"). The record is checked: LayoutError if it
    breaks the layout (nothing is reordered to make it fit).
    """
    if isinstance(answers, Mapping):
        missing = [k for k in SAMPLE_KEYS if k not in answers]
        if missing:
            raise LayoutError([f"missing answer {k}" for k in missing])
        flat = [answers[k] for k in SAMPLE_KEYS]
    else:
        flat = list(answers)
        if len(flat) != 4:
            raise LayoutError([f"expected 4 answers (q0_i0, q0_i1, q1_i0, q1_i1), got {len(flat)}"])
    if question_type in QUESTION_TYPES:
        flat = [_canonical(a, question_type) or a for a in flat]
    record: dict[str, Any] = {} if index is None else {"Index": index}
    record.update(
        {
            "Image_0": image_0,
            "Image_1": image_1,
            "Question_0": question_0,
            "Image_0_Question_0": flat[0],
            "Image_1_Question_0": flat[1],
            "Question_1": question_1,
            "Image_0_Question_1": flat[2],
            "Image_1_Question_1": flat[3],
            "Question_Type": question_type,
            "Source": source,
        }
    )
    if language is not None:
        record["Language"] = language
    sample_check(record)
    return record


def sample_items(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The four (image, question, answer) items of a valid sample in SAMPLE_KEYS order."""
    sample_check(record)
    items = []
    for key, field in zip(SAMPLE_KEYS, ANSWER_FIELDS, strict=True):
        q, i = int(key[1]), int(key[4])
        items.append(
            {
                "key": key,
                "image": record[f"Image_{i}"],
                "question": record[f"Question_{q}"],
                "answer": _canonical(record[field], _question_type(record)),
            }
        )
    return items
