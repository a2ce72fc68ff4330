"""Built-in prompt templates (data only), each with an offline drafter rule of the same name;
``templates.ensure_default_templates`` seeds them.

Recipes seed their own with ``template_ensure``; these three cover the gateway's examples:
NaturalBench's yes/no question drafting (App. A, "Default instruction for GPT-4"), VHExpansion's
negation prompt (Sec. 3.1, Fig. 3) and NaturalBench's caption shortening for DOCCI (App. A).
"""

from __future__ import annotations

_QA_ITEM = {
    "type": "object",
    "properties": {
        "Question": {"type": "string", "minLength": 1},
        "Caption1 Answer": {"enum": ["Yes", "No"]},
        "Caption2 Answer": {"enum": ["Yes", "No"]},
    },
    "required": ["Question", "Caption1 Answer", "Caption2 Answer"],
}

DEFAULT_TEMPLATES: dict[str, dict] = {
    "naturalbench-yes-no": {
        "title": "NaturalBench: two yes/no questions from a caption pair",
        "source": "NaturalBench App. A, default instruction for GPT-4",
        # Literal braces of the paper's JSON example are doubled for str.format.
        "text": (
            "I will present two captions for two images. Please help me generate two questions "
            "that highlight the differences between the captions. The first question should "
            "result in a 'Yes' answer for Caption 1 and a 'No' for Caption 2. The second "
            "question should result in a 'No' answer for Caption 1 and a 'Yes' for Caption 2.\n"
            "Caption 1: {caption_1}\n"
            "Caption 2: {caption_2}\n"
            "Please response in JSON format with question indices as the keys, starting from 0 "
            'and question-answer pairs {{"Question": "...", "Caption1 Answer": "...", '
            '"Caption2 Answer": "..."}} as the values.'
        ),
        "output_schema": {
            "type": "object",
            "properties": {"0": _QA_ITEM, "1": _QA_ITEM},
            "required": ["0", "1"],
        },
    },
    "vhexpansion-negation": {
        "title": "VHExpansion: negate a yes/no question",
        "source": "VHExpansion Sec. 3.1, Fig. 3 (negation prompt)",
        "text": (
            "Rephrase the following question to be a negated question for the original "
            "question. The rephrase method is to add prefix ‘Is it false’ before the "
            "original question in a declarative sentence or change all occurrences of the "
            "“a/an” to “no” for simple cases. Below are the rules must be "
            "followed when rephrasing the question: DO NOT CHANGE OR ADD ANY INFORMATION to "
            "the sentence, such as the case of any letters except the first letter of the "
            "sentence, tenses, the order of clauses, pronouns, etc.. You should only return the "
            "rephrased question. The question is: {question}."
        ),
        "output_schema": None,
    },
    "caption-shorten": {
        "title": "Shorten a caption",
        "source": "NaturalBench App. A (DOCCI captions shortened below 230 characters)",
        "text": (
            "Shorten the following image caption to at most {max_chars} characters. Keep the "
            "visual details that distinguish this image, drop the rest, and return only the "
            "shortened caption.\nCaption: {caption}"
        ),
        "output_schema": None,
    },
}
