"""Synthetic files in each paper's published layout, for tests, demos and the CLI.

Seeded, so every call with the same arguments gives the same bytes. Models are simulated by a
per-answer probability of being right (plus a yes-bias where it matters).
"""

from __future__ import annotations

import json

import numpy as np

SKILLS = ("Counting", "Spatial", "Color", "Action", "Attribute", "World Knowledge")
SOURCES = ("DOCCI", "XM3600")
CONCEPTS = ("climate", "diet", "habitat", "landmark")
PERTURBATIONS = ("original", "gaussian_noise", "brightness", "defocus_blur", "jpeg")


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
        s = rng.normal(0.25, 0.05, size=(2, 2)) + np.eye(2) * 0.04
        lines.append(json.dumps({"id": f"p{k}", "scores": np.round(s, 4).tolist()}))
    return "\n".join(lines) + "\n"
