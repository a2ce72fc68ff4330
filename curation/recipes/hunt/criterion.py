"""When a hunted pair is a *blindspot*, and how a worker's pair becomes a NaturalBench sample.

Pure: no Django. Answers are the NaturalBench family's parsed labels (``a0`` = "Yes", ``a1`` =
"No", None = unparseable, which counts as wrong as in the official scoring, METRICS.md Sec. 1).

The hunt (issue 24): a worker writes question q on image A with its answer, then picks a partner
image B on which the answer flips, and a second question q' whose answer on A is the opposite of
q's. NaturalBench Sec. 3: a single (image, question) item is often answerable blind; pairing it
with a confounding image where the answer flips makes it vision-centric. Laid out as the
published 2 × 2 sample (``SLOTS`` order q0_i0, q0_i1, q1_i0, q1_i1; ground truth a0, a1, a1, a0),
image 0 is the image on which q is answered "Yes".

A candidate is a blindspot when, across the pair, at least one target answers a slot wrong and
the blind model (question text only) is no better than chance on the pair's slots (binary
answers: chance is half of them). A text-only model that answers a question the same way on
both images is exactly at chance on a balanced pair (Sec. 3, Fig. 5); the check catches a blind
model that samples its answers, and what the worker sees first — whether the blind model already
answers the single item — says how much a single-image hunt would have kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

A0, A1 = "a0", "a1"
SLOTS = ("q0_i0", "q0_i1", "q1_i0", "q1_i1")
GROUND_TRUTH = dict(zip(SLOTS, (A0, A1, A1, A0), strict=True))
PAIR_SLOTS = ("q0_i0", "q0_i1")  # the pair with the first question only


def first_image_slot(first_answer: str) -> str:
    """The slot of (q, image A): q0_i0 when the worker's answer on A is "Yes" (a0), else q0_i1
    (A is image 1, the partner image 0)."""
    if first_answer not in (A0, A1):
        raise ValueError(f"an answer is {A0!r} or {A1!r}, not {first_answer!r}")
    return "q0_i0" if first_answer == A0 else "q0_i1"


def image_order(first_answer: str) -> tuple[str, str]:
    """("first", "partner") in image 0, image 1 order for the worker's answer on the first."""
    return ("first", "partner") if first_answer == A0 else ("partner", "first")


def slot_of(question: int, image: str, first_answer: str) -> str:
    """The slot of question 0 or 1 on the "first" or "partner" image."""
    order = image_order(first_answer)
    return f"q{question}_i{order.index(image)}"


def pair_slots(*, second_question: bool) -> tuple[str, ...]:
    return SLOTS if second_question else PAIR_SLOTS


def correct(answer: str | None, slot: str) -> bool:
    return answer is not None and answer == GROUND_TRUTH[slot]


@dataclass(frozen=True)
class Verdict:
    """What the answers say about a candidate: which targets it fooled and on how many slots,
    how the blind model did against chance, and whether it is a blindspot."""

    slots: tuple[str, ...]
    fooled: dict[str, int] = field(default_factory=dict)  # target -> wrong slots (0: not fooled)
    missing: tuple[str, ...] = ()  # (who, slot) answers not in yet, as "who:slot"
    blind_correct: int = 0
    blind_chance: float = 0.0

    @property
    def complete(self) -> bool:
        return not self.missing

    @property
    def targets_fooled(self) -> list[str]:
        return [name for name, wrong in self.fooled.items() if wrong]

    @property
    def blind_solvable(self) -> bool:
        """The blind model beats chance on these slots: the item needs no image."""
        return self.blind_correct > self.blind_chance

    @property
    def is_blindspot(self) -> bool:
        return self.complete and bool(self.targets_fooled) and not self.blind_solvable


def verdict(
    *,
    slots: tuple[str, ...],
    targets: Mapping[str, Mapping[str, str | None]],
    blind: Mapping[str, str | None],
) -> Verdict:
    """The verdict over ``slots`` from each target's parsed answers by slot and the blind
    model's. A slot some model has not answered yet is listed in ``missing`` (a failed call is
    an answer: None, wrong)."""
    for slot in slots:
        if slot not in GROUND_TRUTH:
            raise ValueError(f"unknown slot {slot!r}; slots are {', '.join(SLOTS)}")
    missing = [
        f"{name}:{s}" for name, answers in targets.items() for s in slots if s not in answers
    ]
    missing += [f"blind:{s}" for s in slots if s not in blind]
    fooled = {
        name: sum(1 for s in slots if s in answers and not correct(answers[s], s))
        for name, answers in targets.items()
    }
    blind_correct = sum(1 for s in slots if s in blind and correct(blind[s], s))
    return Verdict(
        slots=tuple(slots),
        fooled=fooled,
        missing=tuple(missing),
        blind_correct=blind_correct,
        blind_chance=len(slots) / 2,  # two answers per question: chance is one in two
    )
