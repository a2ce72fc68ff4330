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


# --- VisIT-Bench judgments in the official layouts ------------------------------------------------
# Votes are simulated (a latent quality per player, Bradley–Terry style); the instances and the
# responses come from whatever dataset and model CSVs are passed in (the real ones in tests).

REFERENCE = "human_verified_reference"


def _visit_responses(
    dataset_csv: str, model_csvs: dict[str, str]
) -> list[tuple[dict, dict[str, str]]]:
    """(dataset row, {player: response}) for every kept instance, in dataset order."""
    import csv
    import io

    def rows(content: str) -> list[dict]:
        return list(csv.DictReader(io.StringIO(content.lstrip("\ufeff"))))

    answers: dict[str, dict[tuple[str, str], str]] = {}
    for player, content in model_csvs.items():
        table = rows(content)
        columns = [c for c in (table[0] if table else {}) if c not in _DATASET_COLUMNS]
        answers[player] = {(r["image"], r["instruction"]): r[columns[0]] for r in table}
    out = []
    seen = set()
    for row in rows(dataset_csv):
        key = (row["image"], row["instruction"])
        kept = str(row.get("human_ratings_gpt4_correct")).lower() == "true" and str(
            row.get("human_ratings_problem_in_caption")
        ).lower() in ("false", "")
        if not kept or key in seen:
            continue
        seen.add(key)
        responses = {REFERENCE: row["gpt4_prediction"]}
        responses.update({p: a[key] for p, a in answers.items() if key in a})
        out.append((row, responses))
    return out


_DATASET_COLUMNS = {
    "instruction_category",
    "image",
    "visual",
    "instruction",
    "gpt4_prediction",
    "image_dense_captions",
    "instruction_conditioned_caption",
    "reference_output",
    "human_ratings_gpt4_correct",
    "human_ratings_problem_in_caption",
    "human_ratings_problem_in_gpt4",
    "public_images_metadata",
}


def _p_first_wins(quality: dict[str, float], a: str, b: str) -> float:
    return 1.0 / (1.0 + 10 ** ((quality.get(b, 0.0) - quality.get(a, 0.0)) / 400))


def visit_llm_judgments(
    dataset_csv: str,
    model_csvs: dict[str, str],
    *,
    quality: dict[str, float],
    n_instances: int | None = None,
    tie_rate: float = 0.1,
    seed: int = 0,
) -> str:
    """A head-to-head JSON array in the sandbox's layout (evaluate_all_queries.py): every pair of
    players on the first `n_instances` kept instances, each judged in both orders."""
    rng = np.random.default_rng(seed)
    results = []
    for row, responses in _visit_responses(dataset_csv, model_csvs)[:n_instances]:
        players = sorted(responses)
        for i, first in enumerate(players):
            for second in players[i + 1 :]:
                a, b = (first, second) if rng.random() < 0.5 else (second, first)
                winners = []
                for shown_a, shown_b in ((a, b), (b, a)):
                    if rng.random() < tie_rate:
                        winners.append("tie")
                    else:
                        p = _p_first_wins(quality, shown_a, shown_b)
                        winners.append(shown_a if rng.random() < p else shown_b)
                results.append(
                    {
                        "A_model": a,
                        "B_model": b,
                        "A": responses[a],
                        "B": responses[b],
                        "auto_evaluation_result": winners,
                        "auto_evaluation_cot": [
                            {
                                "A_model_in_cot": x,
                                "B_model_in_cot": y,
                                "cot": "Simulated judgment. Overall, Response "
                                f"{'A' if w == x else 'B'} is better."
                                if w != "tie"
                                else "Both responses have problems.",
                            }
                            for (x, y), w in zip(((a, b), (b, a)), winners, strict=True)
                        ],
                        "image_url": row["image"],
                        "instruction": row["instruction"],
                        "instruction_category": row["instruction_category"],
                        "engine": "simulated-judge",
                        "reference": row["gpt4_prediction"],
                        "evaluated_with_reference": False,
                    }
                )
    return json.dumps(results)


def visit_human_votes(
    dataset_csv: str,
    model_csvs: dict[str, str],
    *,
    quality: dict[str, float],
    n_pairs: int = 60,
    votes: int = 5,
    seed: int = 0,
) -> str:
    """A crowd-preferences CSV in the published layout (one row per forced-choice vote):
    `n_pairs` random (instance, pair) tuples with `votes` votes each."""
    import csv
    import io

    rng = np.random.default_rng(seed)
    candidates = []
    for row, responses in _visit_responses(dataset_csv, model_csvs):
        players = sorted(responses)
        for i, first in enumerate(players):
            for second in players[i + 1 :]:
                candidates.append((row, responses, first, second))
    picks = rng.choice(len(candidates), size=min(n_pairs, len(candidates)), replace=False)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(
        [
            "image_url",
            "instruction",
            "A",
            "B",
            "A_model",
            "B_model",
            "model_selection.A",
            "model_selection.B",
        ]
    )
    for k in picks:
        row, responses, a, b = candidates[int(k)]
        p = _p_first_wins(quality, a, b)
        for _ in range(votes):
            picked_a = rng.random() < p
            writer.writerow(
                [row["image"], row["instruction"], responses[a], responses[b], a, b]
                + (["True", "False"] if picked_a else ["False", "True"])
            )
    return buffer.getvalue()
