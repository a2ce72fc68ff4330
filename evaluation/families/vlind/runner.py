"""What a model run asks of a VLind-Bench instance (Sec. 3): the official tests a (CK, factual
image), b (VP), c (CB, best counterfactual image) and d (LP, every good image)."""

from __future__ import annotations

from typing import Any

from evaluation.metrics import vlind
from evaluation.models import BenchmarkItem
from evaluation.registry import LLMRunner
from evaluation.runners import CallSpec, Outcome, outcome_text

from . import layout
from .prompts import BY_TEST


def image_paths(data: dict) -> tuple[str, str, dict[str, str]]:
    """(factual image, best counterfactual image, good image id → path) in the official layout
    ``{counterfactual|factual}/{concept}/{context_id}_{context}/{id}.jpg`` (gpt4o_eval.py)."""
    concept, context_id = data.get("concept", ""), data.get("context_id", "")
    counterfactual = f"counterfactual/{concept}/{context_id}_{data.get('context', '')}"
    factual = f"factual/{concept}/{context_id}_{data.get('factual_context', '')}/0.jpg"
    good = {g: f"{counterfactual}/{g}.jpg" for g in data.get("good_images", [])}
    return factual, f"{counterfactual}/{data.get('best_img_id', '')}.jpg", good


def calls(item: BenchmarkItem, options: dict) -> list[CallSpec]:
    """The first statement of each test should be True (Sec. 3)."""
    data = item.data
    factual, best, good = image_paths(data)
    true_s, false_s = data["true_statement"], data["false_statement"]
    ck, vp, cb, lp = (BY_TEST[k] for k in ("ck", "vp", "cb", "lp"))
    specs = [
        CallSpec("a1_image", ck, {"statement": false_s}, (factual,)),
        CallSpec("a2_image", ck, {"statement": true_s}, (factual,)),
        CallSpec("b1", vp, {"statement": layout.vp_statement(data["existent_noun"])}, (best,)),
        CallSpec("b2", vp, {"statement": layout.vp_statement(data["non-existent_noun"])}, (best,)),
        CallSpec("c1_image", cb, {"context": data["context"], "statement": true_s}, (best,)),
        CallSpec("c2_image", cb, {"context": data["context"], "statement": false_s}, (best,)),
    ]
    for image_id, path in good.items():
        specs.append(CallSpec(f"d1:{image_id}", lp, {"statement": true_s}, (path,)))
        specs.append(CallSpec(f"d2:{image_id}", lp, {"statement": false_s}, (path,)))
    return specs


def prediction(item: BenchmarkItem, outcomes: dict[str, Outcome]) -> tuple[Any, Any, dict]:
    """Outputs and True/False answers by test; the LP tests by good image id."""
    raw_map: dict[str, Any] = {"d1": {}, "d2": {}}
    parsed_map: dict[str, Any] = {"d1": {}, "d2": {}}
    for key, outcome in outcomes.items():
        text = outcome_text(outcome)
        answer = vlind.parse_true_false(text)
        if ":" in key:
            group, image_id = key.split(":", 1)
            raw_map[group][image_id], parsed_map[group][image_id] = text, answer
        else:
            raw_map[key], parsed_map[key] = text, answer
    return raw_map, parsed_map, {}


RUNNER = LLMRunner(templates=tuple(BY_TEST.values()), calls=calls, prediction=prediction)
