"""Synthetic NaturalBench files in the published layout, for tests, demos and the CLI.

Seeded, so every call with the same arguments gives the same bytes. Models are simulated by a
per-answer probability of being right (plus a yes-bias where it matters).
"""

from __future__ import annotations

import json

import numpy as np

from evaluation.registry import DemoSink, FamilyDemo

SKILLS = ("Counting", "Spatial", "Color", "Action", "Attribute", "World Knowledge")
SOURCES = ("DOCCI", "XM3600")


def naturalbench_items(n: int = 40, *, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    lines = []
    for k in range(n):
        mc = k % 4 == 3
        yes, no = ("A", "B") if mc else ("Yes", "No")
        suffix = "\nOption: A:red; B:blue;" if mc else ""
        lines.append(
            {
                "Index": k,
                "Image_0": f"nb/{k}_0.jpg",
                "Image_1": f"nb/{k}_1.jpg",
                "Question_0": f"Is the object in picture {k} red?{suffix}",
                "Image_0_Question_0": yes,
                "Image_1_Question_0": no,
                "Question_1": f"Is the object in picture {k} blue?{suffix}",
                "Image_0_Question_1": no,
                "Image_1_Question_1": yes,
                "Question_Type": "multiple_choice" if mc else "yes_no",
                "Source": SOURCES[k % 2],
                "Skills": [
                    sorted({SKILLS[k % len(SKILLS)], SKILLS[int(rng.integers(len(SKILLS)))]}),
                    [SKILLS[(k + 1) % len(SKILLS)]],
                ],
            }
        )
    return "\n".join(json.dumps(line) for line in lines) + "\n"


def naturalbench_predictions(
    n: int = 40, *, accuracy: float = 0.7, seed: int = 1, scores: bool = True
) -> str:
    """Outputs right with probability `accuracy`; likelihoods favour the right answer."""
    rng = np.random.default_rng(seed)
    truth = ("a0", "a1", "a1", "a0")
    lines = []
    for k in range(n):
        mc = k % 4 == 3
        words = {"a0": "A" if mc else "Yes", "a1": "B" if mc else "No"}
        outputs, p_a0 = [], []
        for gt in truth:
            right = rng.random() < accuracy
            answer = gt if right else ("a1" if gt == "a0" else "a0")
            outputs.append(f"{words[answer]}." if rng.random() > 0.05 else "I cannot tell.")
            p = float(np.clip(rng.normal(0.75 if answer == "a0" else 0.25, 0.15), 0.01, 0.99))
            p_a0.append(round(p, 4))
        line: dict = {"Index": k, "outputs": outputs}
        if scores:
            line["scores"] = {
                "p_a0": p_a0,
                "p_a1": [round(1 - p, 4) for p in p_a0],
                "p_a0_blind": [0.6, 0.6],
                "p_a1_blind": [0.4, 0.4],
            }
        lines.append(line)
    return "\n".join(json.dumps(line) for line in lines) + "\n"


def build(sink: DemoSink) -> None:
    version = sink.version("NaturalBench (demo)", naturalbench_items(60), "nb.jsonl")
    for name, acc, seed in (("Model A", 0.85, 1), ("Model B", 0.7, 2), ("Model C", 0.55, 3)):
        sink.run(version, name, naturalbench_predictions(60, accuracy=acc, seed=seed), "p.jsonl")


DEMO = FamilyDemo(build, order=0)
