"""VisIT-Bench's prompts: the response prompt (Sec. 2: the instruction as it is, with the image)
and the judge prompts (App. F, Fig. 16-18; the authors' ``prompts.py`` v1 for the wording the
figures elide), written as conversations of user / assistant / user turns
(``evaluation.prompts.conversation``). Offline rules: a blind response and a length judge.
"""

from __future__ import annotations

import re

from curation.gateway.offline import OfflineRuleError, rule
from evaluation.prompts import conversation, define

RESPONSE = "eval-visit-response"
JUDGE = "eval-visit-judge"
JUDGE_REFERENCE = "eval-visit-judge-reference"
JUDGE_EXTRACTION = "eval-visit-judge-extraction"
JUDGE_MULTI = "eval-visit-judge-multi"
JUDGE_MULTI_REFERENCE = "eval-visit-judge-multi-reference"

_EXTRACT_ASK = "\nPlease extract the final answer from the above text."

# --- VisIT-Bench judge (App. F, Fig. 16 reference-free; Fig. 17 reference-backed; the sandbox's
# pairwise_eval.py / prompts.py with multi_image=True for several images) ------------------------
# One conversation (system; user, assistant, user) in four variants: with or without a reference,
# one image ("{caption}") or a sequence ("{captions}", ``multi_image_context``). The wording is
# the authors'; the multi-image variant with a reference keeps the sandbox's header, which does
# not announce the reference.

_JUDGE_FINISH = (
    'Think step-by-step and finish your response with "Overall, Response X is better." where X '
    "is either A or B."
)


def _judge_system(*, multi: bool, reference: bool) -> str:
    of = "a sequence of images" if multi else "an image"
    items = [
        "Image context: This will describe the sequence of images that account for the context. "
        "The description of these images will be of sufficient detail to address the instruction."
        if multi
        else "An image context: This will describe the contents of an image with sufficient "
        "detail to address the instruction.",
        "An instruction: This is a question, an imparative request, or something similar about "
        "the image which requires a response.",
        *(
            ["A reference output: This is a high-quality example output that humans have judged "
             "to be an accurate response for the input instruction."]
            if reference
            else []
        ),
        "Two responses, response A and response B: These two responses attempt to address the "
        "instruction in the context of the image.",
    ]  # fmt: skip
    notes = [
        "Even though you are just a language model, the image description will be sufficiently "
        "detailed so that your judgements can be accurate.",
        *(
            ["Take the high-quality reference into account when making your judgements, but "
             "remember: some instructions are more open-ended than others, so for those cases, a "
             "high quality response can differ from the reference."]
            if reference
            else []
        ),
        "You are capable of judging response quality, accounting for important factors like "
        "correctness, relevance, fluency, specificity, etc.",
        *(
            ['Multiple images in sequence can be referred to either by "Image A/B/C/D..." or '
             '"Image 1/2/3/4...".']
            if multi
            else []
        ),
        'You think step-by-step, but ultimately respond with "Response A" or "Response B"',
    ]  # fmt: skip
    return (
        f"You are {'MultiImage' if multi else 'Image'}TaskEvaluationGPT, an expert language model "
        "at judging whether or not a response adequately addresses an instruction in the context "
        f"of {of}. More specifically, you will be given the following:\n\n"
        + "\n".join(f"{k}. {item}" for k, item in enumerate(items, start=1))
        + "\n\nYour job is to judge whether response A or response B better. A and B are "
        "randomly ordered.\n\nSome things to remember:\n\n"
        + "\n".join(f"- {note}" for note in notes)
    )


def _judge_turns(*, multi: bool, reference: bool) -> tuple[str, str, str]:
    """(user, assistant, user): the request, the model's agreement, the instance."""
    seen = "the sequence of images" if multi else "the image"
    announced = reference and not multi  # the sandbox's multi-image header omits the reference
    ask = (
        f"I will describe {'a sequence of images' if multi else 'an image'} to you, and provide an "
        "instruction. Then, I will "
        + (
            "provide a reference output which is an example of a high quality output for that "
            "instruction in the context of the image. Then, I will "
            if announced
            else ""
        )
        + f"give you two candidate responses that address the instruction in the context of {seen}"
        ': these will be labelled "Response A" and "Response B". Your job is to first reason '
        "step-by-step about which response is best in terms of accuracy, specificity, fluency, "
        "etc. After reasoning step-by-step and comparing the pros/cons of each response, in the "
        'end, respond with "Overall, Response X is better." where X is either A or B.'
    )
    context = "the image context as a sequence of descriptions" if multi else "the image context"
    agree = (
        f"Sure, please provide {context}, the instruction, "
        + ("the reference, " if announced else "")
        + "and the two candidate responses, Response A and Response B. Then, I will think "
        "step-by-step and provide my ultimate judgement as to which response is better."
    )
    instance = (
        "OK. Here is "
        + ("the sequence of image descriptions" if multi else "the image description")
        + ", the instruction, "
        + ("the high-quality reference, " if announced else "")
        + "and the two response options, Response A and Response B.\nImage context:"
        + ("\n {captions}" if multi else " {caption}")
        + "\n\nInstruction:\n{instruction}\n\n"
        + ("High quality reference: {reference}\n\n" if reference else "")
        + "Response A: {response_a}\n\nResponse B: {response_b}\n\n"
        + _JUDGE_FINISH
    )
    return ask, agree, instance


def _judge(name: str, *, title: str, source: str, multi: bool, reference: bool) -> str:
    return define(
        name,
        title=title,
        source=source,
        # the sandbox's multi-image judge gets a reference without announcing it
        system=_judge_system(multi=multi, reference=reference and not multi),
        text=conversation(*_judge_turns(multi=multi, reference=reference)),
    )


def multi_image_context(captions: list[str]) -> str:
    """The image context of a multi-image instance as the sandbox writes it."""
    return "\n".join(f"Image {k}: {caption} " for k, caption in enumerate(captions, start=1))


# --- Answer extraction (App. F, Fig. 18; the in-context examples of the official prompts v1) ----

_EXTRACTION_SYSTEM = """You are FinalAnswerExtractionGPT, an expert language model at extracting \
multiple choice answers from written out from longer explanations. You will be given several \
sentences describing a thought process which should eventually contain a final answer, either A \
or B. Your job is to extract the final answer that the explanation arrives at.

Some things to remember:

- Keep your answers short: only output "Final Answer: X" where X is A or B
- If the explanation doesn't mention a final choice explicitly, you can output "Unknown\""""

_EXTRACTION_EXAMPLES = (
    (
        "Step-by-step reasoning:\n\n"
        "- First, I consider the instruction, which asks if anything else in the image has the "
        "same color as the tiny sphere.\n"
        "- Then, I look at the image context and note that there are several colored shapes in "
        "the image, including the tiny sphere. \n"
        "- From the high quality reference, I see that the large matte grey sphere has the same "
        "color as the tiny sphere.\n"
        "- Looking at Response A, it says that there is a cube that has the same color as the "
        "tiny sphere. But the high quality reference only mentions the large matte grey sphere "
        "having the same color, not the cube. Therefore, Response A is not accurate.\n"
        "- In contrast, Response B says that there is nothing else in the image that has the "
        "same color as the tiny sphere. The high quality reference contradicts this response, "
        "stating that the large matte grey sphere shares the same color with the tiny sphere. \n"
        "- Therefore, Response B is not accurate or correct.\n"
        "- Overall, based on accuracy in addressing the instruction and matching the high "
        "quality reference, Response A is not the best choice and Response B is incorrect. "
        'Therefore, the better response is Response B: "No, there is nothing else in the image '
        'that has the same color as the tiny sphere."',
        "Final Answer: Response B",
    ),
    (
        "Let's compare the two responses step-by-step:\n\n"
        "Response A:\n"
        "- Gives the correct number of trips (4 trips)\n"
        "- Lacks details on how it came up with the answer (no explanation)\n\n"
        "Response B:\n"
        "- Correctly identified the bicycle with the wooden crate\n"
        "- Incorrectly estimated the number of trips (2 trips instead of 4)\n"
        "- Mentions a large cart, which is not in the image context provided\n"
        "- Recognizes the challenge of fitting toddler and all items\n"
        "- Provides more detailed explanation but accuracy is an issue\n\n"
        "Considering accuracy, specificity, fluency, and relevance, let's make a judgement:\n\n"
        "Response B is better in terms of fluency and relevance while Response A is better in "
        "terms of accuracy and specificity. Since accuracy is crucial in this case, and given the "
        "high-quality reference backs the number of trips (4), we prioritize correctness.\n\n"
        "Overall, I choose A.",
        "Final Answer: Response A",
    ),
    (
        "Upon analyzing the image description and the instruction, it is clear that the "
        "instruction is asking for the implied meaning of a comment received by the creator of "
        "the burnt pizza in the image. The high-quality reference suggests that the compliment "
        'of "being very talented" is actually sarcastic and that the burnt pizza is not a sign '
        "of talent. Looking at Response A, it seems like the response is describing the pizza "
        "and the plate without really addressing the implication of the comment. Response B, on "
        "the other hand, does directly address the instruction and implies that the praise is "
        "sincere even though the pizza is burnt. Therefore, overall, Response B is better.",
        "Final Answer: Response B",
    ),
)


def _extraction_text() -> str:
    turns: list[str] = []
    for example, answer in _EXTRACTION_EXAMPLES:
        turns += [example + _EXTRACT_ASK, answer]
    turns.append("{judge_output}" + _EXTRACT_ASK)
    return conversation(*turns)


_JUDGE_SOURCE = "VisIT-Bench App. F, Fig. 16 (official pairwise prompts v1)"

define(
    RESPONSE,
    title="VisIT-Bench: follow the instruction about the image",
    source="VisIT-Bench Sec. 2 (the instruction with the image)",
    text="{instruction}",
)
_judge(
    JUDGE,
    title="VisIT-Bench judge, reference-free (GPT4-no-ref)",
    source=_JUDGE_SOURCE,
    multi=False,
    reference=False,
)
_judge(
    JUDGE_REFERENCE,
    title="VisIT-Bench judge, reference-backed (GPT4-ref)",
    source="VisIT-Bench App. F, Fig. 17 (official pairwise prompts v1)",
    multi=False,
    reference=True,
)
_judge(
    JUDGE_MULTI,
    title="VisIT-Bench judge, multi-image instances (reference-free)",
    source="VisIT-Bench sandbox pairwise_eval.py, multi_image (official multi-image prompts v1)",
    multi=True,
    reference=False,
)
_judge(
    JUDGE_MULTI_REFERENCE,
    title="VisIT-Bench judge, multi-image instances (reference-backed)",
    source="VisIT-Bench sandbox pairwise_eval.py, multi_image with a reference",
    multi=True,
    reference=True,
)
define(
    JUDGE_EXTRACTION,
    title="VisIT-Bench: extract the final answer of an unclear judgment",
    source="VisIT-Bench App. F, Fig. 18 (official extraction prompt v1, 3 examples)",
    system=_EXTRACTION_SYSTEM,
    text=_extraction_text(),
)


@rule(RESPONSE)
def blind_visit(variables: dict, seed: int | None) -> str:
    instruction = " ".join(str(variables["instruction"]).split())
    if not instruction:
        raise OfflineRuleError("the instruction is empty")
    return (
        "I cannot see the image, so I can only answer in general terms. The instruction asks: "
        f"{instruction}"
    )


def _tokens(text: str) -> int:
    return len(str(text).split())


def _length_judge(variables: dict, seed: int | None) -> str:
    """Prefers the longer response (the paper's length baseline, Sec. 4.3) and says so; equal
    lengths give no verdict, which sends the output through the extraction step."""
    a, b = _tokens(variables["response_a"]), _tokens(variables["response_b"])
    lines = [
        "Offline judge: a length heuristic, not a language model.",
        f"Step 1: Response A has {a} words; Response B has {b} words.",
    ]
    if a == b:
        lines.append("Step 2: They are equally long, so this heuristic cannot choose.")
    else:
        lines.append(f"Overall, Response {'A' if a > b else 'B'} is better.")
    return "\n".join(lines)


rule(JUDGE)(_length_judge)
rule(JUDGE_REFERENCE)(_length_judge)
rule(JUDGE_MULTI)(_length_judge)
rule(JUDGE_MULTI_REFERENCE)(_length_judge)

# "Response B is better", "Response A is slightly better", "I choose A", "I prefer Response B".
_CHOICE = re.compile(
    r"Response ([AB]) is (?:\w+ )?better|\b(?:choose|prefer|pick) (?:Response )?([AB])\b"
)


@rule(JUDGE_EXTRACTION)
def extract_offline(variables: dict, seed: int | None) -> str:
    """The last explicit choice in the judgment, else "Unknown" (Fig. 18's two outcomes)."""
    found = [a or b for a, b in _CHOICE.findall(str(variables["judge_output"]))]
    return f"Final Answer: Response {found[-1]}" if found else "Final Answer: Unknown"
