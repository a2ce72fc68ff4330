"""Synthetic VHExpansion files in the published layout, for tests, demos and the CLI.

Seeded, so every call with the same arguments gives the same bytes. Models are simulated by a
per-answer probability of being right (plus a yes-bias).
"""

from __future__ import annotations

import json

import numpy as np

from evaluation.registry import DemoSink, FamilyDemo

PERTURBATIONS = ("original", "gaussian_noise", "brightness", "defocus_blur", "jpeg")


def vh_items(n_pairs: int = 30, *, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    lines = []
    for k in range(n_pairs):
        answer = "yes" if rng.random() < 0.5 else "no"
        negated = "no" if answer == "yes" else "yes"
        perturbation = PERTURBATIONS[k % len(PERTURBATIONS)]
        for suffix, question, ans, neg in (
            ("a", f"Is there a cat in image {k}?", answer, False),
            ("b", f"Is there no cat in image {k}?", negated, True),
        ):
            lines.append(
                {
                    "id": f"{k}{suffix}",
                    "pair_id": str(k),
                    "image": f"vh/{k}.jpg",
                    "question": question,
                    "answer": ans,
                    "negated": neg,
                    "perturbation": perturbation,
                    "source": ("MMVP", "POPE", "VHTest")[k % 3],
                }
            )
    return "\n".join(json.dumps(line) for line in lines) + "\n"


def vh_predictions(
    n_pairs: int = 30, *, p_yes: float = 0.6, accuracy: float = 0.7, seed: int = 2
) -> str:
    rng = np.random.default_rng(seed)
    truth_rng = np.random.default_rng(0)
    lines = []
    for k in range(n_pairs):
        answer = "yes" if truth_rng.random() < 0.5 else "no"
        for suffix, gt in (("a", answer), ("b", "no" if answer == "yes" else "yes")):
            if rng.random() < accuracy:
                out = gt
            else:
                out = "yes" if rng.random() < p_yes else "no"
            lines.append({"id": f"{k}{suffix}", "output": f"{out.capitalize()}, I think."})
    return "\n".join(json.dumps(line) for line in lines) + "\n"


def build(sink: DemoSink) -> None:
    version = sink.version("VHExpansion (demo)", vh_items(40), "vh.jsonl")
    for name, acc, seed in (("Model A", 0.8, 1), ("Model B", 0.6, 2), ("Always-yes", 0.0, 3)):
        content = vh_predictions(40, accuracy=acc, p_yes=1.0 if acc == 0 else 0.6, seed=seed)
        sink.run(version, name, content, "p.jsonl")


DEMO = FamilyDemo(build, order=1)
