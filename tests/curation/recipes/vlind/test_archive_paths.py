"""The archive's image folders are where the official gpt4o_eval.py looks for them:
``{image_dir}/{concept}/{context_id}_{context}/{id}.jpg`` with the context as written in
data.json, a "/" in it included; and where Blindspot's own runner looks (the family's layout)."""

import pytest

from curation.recipes.vlind.archive import counterfactual_dir, factual_dir
from evaluation.families.vlind.runner import image_paths


def row(context: str, factual: str = "The sky is blue.") -> dict:
    return {"concept": "speed", "context_id": 3, "context": context, "factual_context": factual}


@pytest.mark.parametrize(
    "context",
    ["Snails crawl at 90 km/h.", "In this world, cats and/or dogs fly.", "Plain text."],
)
def test_folders_are_the_paths_the_official_code_joins(context):
    data = row(context, factual="Snails crawl at 0.05 km/h.")
    official_cf = f"counterfactual/{data['concept']}/{data['context_id']}_{data['context']}"
    official_f = f"factual/{data['concept']}/{data['context_id']}_{data['factual_context']}"
    assert counterfactual_dir(data) == official_cf
    assert factual_dir(data) == official_f
    factual, best, _good = image_paths({**data, "best_img_id": "0", "good_images": ["0"]})
    assert best == f"{official_cf}/0.jpg" and factual == f"{official_f}/0.jpg"


@pytest.mark.parametrize("context", ["Up/../../etc", "a//b", "x/./y", "ends with/"])
def test_a_context_that_would_leave_its_folder_keeps_one_level(context):
    folder = counterfactual_dir(row(context))
    assert folder.count("/") == 2
    assert folder.startswith("counterfactual/speed/3_")
