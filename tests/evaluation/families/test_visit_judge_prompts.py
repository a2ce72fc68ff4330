"""The VisIT-Bench judge prompts, built from one description in four variants (one image or a
sequence, with or without a reference), are word for word what was sent before they were built
that way: ``visit_judge_prompts.json`` holds the system prompts and conversations as the separate
single- and multi-image texts defined them (App. F, Fig. 16-17; the sandbox's multi-image
prompts), taken from the code before the change."""

import json
from pathlib import Path

import pytest

from evaluation.families.visit import prompts
from evaluation.prompts import TEMPLATES, render_turns

GOLDEN = json.loads((Path(__file__).parent / "visit_judge_prompts.json").read_text())


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_each_judge_prompt_is_the_one_sent_before(name):
    assert TEMPLATES[name]["system"] == GOLDEN[name]["system"]
    assert TEMPLATES[name]["text"] == GOLDEN[name]["text"]


def test_a_single_image_instance_gets_the_figure_16_and_17_texts():
    variables = {
        "caption": "A dog on a sofa.",
        "instruction": "What is on the sofa?",
        "reference": "A dog.",
        "response_a": "A dog.",
        "response_b": "A cat.",
    }
    plain = render_turns(TEMPLATES[prompts.JUDGE]["text"], variables)
    backed = render_turns(TEMPLATES[prompts.JUDGE_REFERENCE]["text"], variables)
    assert [t.role for t in plain] == ["user", "assistant", "user"]
    assert plain[2].text.startswith(
        "OK. Here is the image description, the instruction, and the two response options, "
        "Response A and Response B.\nImage context: A dog on a sofa.\n\nInstruction:\n"
        "What is on the sofa?\n\nResponse A: A dog."
    )
    assert "High quality reference: A dog.\n\nResponse A: A dog." in backed[2].text
    assert backed[0].text.startswith(
        "I will describe an image to you, and provide an instruction. Then, I will provide a "
        "reference output"
    )
    assert TEMPLATES[prompts.JUDGE]["system"].startswith("You are ImageTaskEvaluationGPT")
    assert "Multiple images" not in TEMPLATES[prompts.JUDGE_REFERENCE]["system"]
