"""Synthetic VLind-Bench files in the published layout, for tests, demos and the CLI.

Seeded, so every call with the same arguments gives the same bytes. Models are simulated by a
per-answer probability of being right.
"""

from __future__ import annotations

import json

import numpy as np

from evaluation.registry import DemoSink, FamilyDemo

CONCEPTS = ("climate", "diet", "habitat", "landmark")


def vlind_data(n: int = 24, *, models: dict[str, float] | None = None, seed: int = 0) -> str:
    """A data.json list; `models` maps a model identifier to its chance of a right answer."""
    rng = np.random.default_rng(seed)
    models = models if models is not None else {"demo": 0.8}
    data = []
    for k in range(n):
        votes = {str(i): int(rng.integers(0, 4)) for i in range(12)}
        if k % 7 == 6:
            votes = {str(i): 0 for i in range(12)}  # no good image: left out
        instance = {
            "concept": CONCEPTS[k % len(CONCEPTS)],
            "context_id": k,
            "context": f"In this world, the sky in place {k} is green.",
            "factual_context": f"The sky in place {k} is blue.",
            "true_statement": f"The sky in place {k} is green.",
            "false_statement": f"The sky in place {k} is blue.",
            "existent_noun": "a tree",
            "non-existent_noun": "a giraffe",
            "best_img_id": "0",
            "aggregated_human_label_good_images": votes,
        }
        good = [i for i, v in votes.items() if v >= 2]
        for mid, accuracy in models.items():
            if not good:
                continue

            def answer(truth: bool, acc: float = accuracy) -> dict:
                value = truth if rng.random() < acc else not truth
                text = "True" if value else "False"
                return {"response": f"{text}.", "answer": text}

            instance[f"{mid}_pred_a1_image"] = answer(True)
            instance[f"{mid}_pred_a2_image"] = answer(False)
            instance[f"{mid}_pred_b1"] = answer(True)
            instance[f"{mid}_pred_b2"] = answer(False)
            instance[f"{mid}_pred_c1_image"] = answer(True)
            instance[f"{mid}_pred_c2_image"] = answer(False)
            instance[f"{mid}_pred_d1"] = {i: answer(True, accuracy - 0.2) for i in good}
            instance[f"{mid}_pred_d2"] = {i: answer(False, accuracy - 0.2) for i in good}
        data.append(instance)
    return json.dumps(data, indent=1)


def build(sink: DemoSink) -> None:
    data = vlind_data(28, models={"model_a": 0.9, "model_b": 0.7, "model_c": 0.55})
    version = sink.version("VLind-Bench (demo)", data, "data.json")
    for mid in ("model_a", "model_b", "model_c"):
        sink.run(version, mid, data, "data.json", option=mid)


DEMO = FamilyDemo(build, order=2)
