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

# --- VisIT-Bench judge (App. F, Fig. 16 reference-free; Fig. 17 reference-backed) ---------------

_JUDGE_SYSTEM = """You are ImageTaskEvaluationGPT, an expert language model at judging whether or \
not a response adequately addresses an instruction in the context of an image. More specifically, \
you will be given the following:

1. An image context: This will describe the contents of an image with sufficient detail to \
address the instruction.
2. An instruction: This is a question, an imparative request, or something similar about the \
image which requires a response.
3. Two responses, response A and response B: These two responses attempt to address the \
instruction in the context of the image.

Your job is to judge whether response A or response B better. A and B are randomly ordered.

Some things to remember:

- Even though you are just a language model, the image description will be sufficiently detailed \
so that your judgements can be accurate.
- You are capable of judging response quality, accounting for important factors like \
correctness, relevance, fluency, specificity, etc.
- You think step-by-step, but ultimately respond with "Response A" or "Response B\""""

_JUDGE_USER = """I will describe an image to you, and provide an instruction. Then, I will give \
you two candidate responses that address the instruction in the context of the image: these will \
be labelled "Response A" and "Response B". Your job is to first reason step-by-step about which \
response is best in terms of accuracy, specificity, fluency, etc. After reasoning step-by-step and \
comparing the pros/cons of each response, in the end, respond with "Overall, Response X is \
better." where X is either A or B."""

_JUDGE_ASSISTANT = """Sure, please provide the image context, the instruction, and the two \
candidate responses, Response A and Response B. Then, I will think step-by-step and provide my \
ultimate judgement as to which response is better."""

_JUDGE_FINISH = (
    'Think step-by-step and finish your response with "Overall, Response X is better." where X '
    "is either A or B."
)

_JUDGE_INSTANCE = (
    "OK. Here is the image description, the instruction, and the two response options, "
    "Response A and Response B.\nImage context: {caption}\n\nInstruction:\n{instruction}\n\n"
    "Response A: {response_a}\n\nResponse B: {response_b}\n\n" + _JUDGE_FINISH
)

_JUDGE_REFERENCE_SYSTEM = """You are ImageTaskEvaluationGPT, an expert language model at judging \
whether or not a response adequately addresses an instruction in the context of an image. More \
specifically, you will be given the following:

1. An image context: This will describe the contents of an image with sufficient detail to \
address the instruction.
2. An instruction: This is a question, an imparative request, or something similar about the \
image which requires a response.
3. A reference output: This is a high-quality example output that humans have judged to be an \
accurate response for the input instruction.
4. Two responses, response A and response B: These two responses attempt to address the \
instruction in the context of the image.

Your job is to judge whether response A or response B better. A and B are randomly ordered.

Some things to remember:

- Even though you are just a language model, the image description will be sufficiently detailed \
so that your judgements can be accurate.
- Take the high-quality reference into account when making your judgements, but remember: some \
instructions are more open-ended than others, so for those cases, a high quality response can \
differ from the reference.
- You are capable of judging response quality, accounting for important factors like \
correctness, relevance, fluency, specificity, etc.
- You think step-by-step, but ultimately respond with "Response A" or "Response B\""""

_JUDGE_REFERENCE_USER = """I will describe an image to you, and provide an instruction. Then, I \
will provide a reference output which is an example of a high quality output for that instruction \
in the context of the image. Then, I will give you two candidate responses that address the \
instruction in the context of the image: these will be labelled "Response A" and "Response B". \
Your job is to first reason step-by-step about which response is best in terms of accuracy, \
specificity, fluency, etc. After reasoning step-by-step and comparing the pros/cons of each \
response, in the end, respond with "Overall, Response X is better." where X is either A or B."""

_JUDGE_REFERENCE_ASSISTANT = """Sure, please provide the image context, the instruction, the \
reference, and the two candidate responses, Response A and Response B. Then, I will think \
step-by-step and provide my ultimate judgement as to which response is better."""

_JUDGE_REFERENCE_INSTANCE = (
    "OK. Here is the image description, the instruction, the high-quality reference, and the two "
    "response options, Response A and Response B.\nImage context: {caption}\n\nInstruction:\n"
    "{instruction}\n\nHigh quality reference: {reference}\n\nResponse A: {response_a}\n\n"
    "Response B: {response_b}\n\n" + _JUDGE_FINISH
)

# --- Multi-image judge (the sandbox's pairwise_eval.py / prompts.py, multi_image=True) ----------
# The images are described one per line, "Image k: <caption> " (the sandbox's own spelling, with
# its trailing space), in the variable ``captions`` (``multi_image_context``).

_JUDGE_MULTI_SYSTEM = """You are MultiImageTaskEvaluationGPT, an expert language model at judging \
whether or not a response adequately addresses an instruction in the context of a sequence of \
images. More specifically, you will be given the following:

1. Image context: This will describe the sequence of images that account for the context. The \
description of these images will be of sufficient detail to address the instruction.
2. An instruction: This is a question, an imparative request, or something similar about the \
image which requires a response.
3. Two responses, response A and response B: These two responses attempt to address the \
instruction in the context of the image.

Your job is to judge whether response A or response B better. A and B are randomly ordered.

Some things to remember:

- Even though you are just a language model, the image description will be sufficiently detailed \
so that your judgements can be accurate.
- You are capable of judging response quality, accounting for important factors like \
correctness, relevance, fluency, specificity, etc.
- Multiple images in sequence can be referred to either by "Image A/B/C/D..." or "Image \
1/2/3/4...".
- You think step-by-step, but ultimately respond with "Response A" or "Response B\""""

_JUDGE_MULTI_USER = """I will describe a sequence of images to you, and provide an instruction. \
Then, I will give you two candidate responses that address the instruction in the context of the \
sequence of images: these will be labelled "Response A" and "Response B". Your job is to first \
reason step-by-step about which response is best in terms of accuracy, specificity, fluency, etc. \
After reasoning step-by-step and comparing the pros/cons of each response, in the end, respond \
with "Overall, Response X is better." where X is either A or B."""

_JUDGE_MULTI_ASSISTANT = """Sure, please provide the image context as a sequence of \
descriptions, the instruction, and the two candidate responses, Response A and Response B. Then, \
I will think step-by-step and provide my ultimate judgement as to which response is better."""

_JUDGE_MULTI_INSTANCE = (
    "OK. Here is the sequence of image descriptions, the instruction, and the two response "
    "options, Response A and Response B.\nImage context:\n {captions}\n\nInstruction:\n"
    "{instruction}\n\nResponse A: {response_a}\n\nResponse B: {response_b}\n\n" + _JUDGE_FINISH
)

# The sandbox's multi-image branch with a reference (pairwise_eval.generate_request): the same
# conversation, the reference before the responses.
_JUDGE_MULTI_REFERENCE_INSTANCE = (
    "OK. Here is the sequence of image descriptions, the instruction, and the two response "
    "options, Response A and Response B.\nImage context:\n {captions}\n\nInstruction:\n"
    "{instruction}\n\nHigh quality reference: {reference}\n\nResponse A: {response_a}\n\n"
    "Response B: {response_b}\n\n" + _JUDGE_FINISH
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
define(
    JUDGE,
    title="VisIT-Bench judge, reference-free (GPT4-no-ref)",
    source=_JUDGE_SOURCE,
    system=_JUDGE_SYSTEM,
    text=conversation(_JUDGE_USER, _JUDGE_ASSISTANT, _JUDGE_INSTANCE),
)
define(
    JUDGE_REFERENCE,
    title="VisIT-Bench judge, reference-backed (GPT4-ref)",
    source="VisIT-Bench App. F, Fig. 17 (official pairwise prompts v1)",
    system=_JUDGE_REFERENCE_SYSTEM,
    text=conversation(_JUDGE_REFERENCE_USER, _JUDGE_REFERENCE_ASSISTANT, _JUDGE_REFERENCE_INSTANCE),
)
define(
    JUDGE_MULTI,
    title="VisIT-Bench judge, multi-image instances (reference-free)",
    source="VisIT-Bench sandbox pairwise_eval.py, multi_image (official multi-image prompts v1)",
    system=_JUDGE_MULTI_SYSTEM,
    text=conversation(_JUDGE_MULTI_USER, _JUDGE_MULTI_ASSISTANT, _JUDGE_MULTI_INSTANCE),
)
define(
    JUDGE_MULTI_REFERENCE,
    title="VisIT-Bench judge, multi-image instances (reference-backed)",
    source="VisIT-Bench sandbox pairwise_eval.py, multi_image with a reference",
    system=_JUDGE_MULTI_SYSTEM,
    text=conversation(_JUDGE_MULTI_USER, _JUDGE_MULTI_ASSISTANT, _JUDGE_MULTI_REFERENCE_INSTANCE),
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
