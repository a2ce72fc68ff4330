"""Synthetic NaturalBench-Retrieval files in the published layout, for tests, demos and the CLI.

Seeded, so every call with the same arguments gives the same bytes. Models are simulated by a
per-answer probability of being right (scores favour the matching caption).
"""

from __future__ import annotations

import json

import numpy as np

from evaluation.registry import DemoSink, FamilyDemo


def retrieval_items(n: int = 20) -> str:
    return (
        "\n".join(
            json.dumps(
                {
                    "id": f"p{k}",
                    "image_0": f"r/{k}a.jpg",
                    "image_1": f"r/{k}b.jpg",
                    "caption_0": f"a dog on a sofa {k}",
                    "caption_1": f"a sofa on a dog {k}",
                }
            )
            for k in range(n)
        )
        + "\n"
    )


def retrieval_predictions(n: int = 20, *, seed: int = 3) -> str:
    rng = np.random.default_rng(seed)
    lines = []
    for k in range(n):
        # scores[image][caption], the official orientation (matching pairs on the diagonal)
        s = rng.normal(0.25, 0.05, size=(2, 2)) + np.eye(2) * 0.04
        lines.append(json.dumps({"id": f"p{k}", "scores": np.round(s, 4).tolist()}))
    return "\n".join(lines) + "\n"


# --- VisIT-Bench judgments in the official layouts ------------------------------------------------
# Votes are simulated (a latent quality per player, Bradley–Terry style); the instances and the


def build(sink: DemoSink) -> None:
    version = sink.version("NaturalBench-Retrieval (demo)", retrieval_items(), "r.jsonl")
    for name, seed in (("CLIP-like A", 3), ("CLIP-like B", 4)):
        sink.run(version, name, retrieval_predictions(seed=seed), "p.jsonl")


DEMO = FamilyDemo(build, order=3)
