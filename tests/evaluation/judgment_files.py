"""Helpers for the VisIT-Bench judgment tests: the real dataset and model responses (the first
instances) and simulated judgment files in the official layouts (the family's demo)."""

from __future__ import annotations

import csv
import io

from evaluation import services
from evaluation.families.visit import demo as visit_demo
from tests.paths import VISIT_BENCH

COLUMNS = {
    "llava13b_output.csv": ("LLaVA-13B", "llava13b_output"),
    "instruct_blip_13b_out.csv": ("InstructBLIP-13B", "instruct_blip_output"),
    "PandaGPT_13b_out.csv": ("PandaGPT-13B", "panda_gpt_13b_output"),
}
QUALITY = {
    "human_verified_reference": 200.0,
    "llava13b_output": 60.0,
    "instruct_blip_output": 0.0,
    "panda_gpt_13b_output": -150.0,
}
ROUNDS = 40


INSTANCES = 120  # the first real instances: enough battles, a quick import


def read(name: str) -> str:
    return (VISIT_BENCH / name).read_text(encoding="utf-8")


def first_instances(content: str, keys: set | None = None, n: int = INSTANCES) -> str:
    """The CSV limited to the first `n` records (or to the given (image, instruction) keys)."""
    rows = list(csv.reader(io.StringIO(content)))
    header = rows[0]
    image, instruction = header.index("image"), header.index("instruction")
    body = [r for r in rows[1:] if keys is None or (r[image], r[instruction]) in keys]
    out = io.StringIO()
    csv.writer(out).writerows([header] + (body[:n] if keys is None else body))
    return out.getvalue()


def llm_file(files, *, n_instances=40, tie_rate=0.15, seed=3) -> str:
    dataset, models = files
    return visit_demo.visit_llm_judgments(
        dataset, models, quality=QUALITY, n_instances=n_instances, tie_rate=tie_rate, seed=seed
    )


def human_file(files, *, n_pairs=80, seed=4) -> str:
    dataset, models = files
    return visit_demo.visit_human_votes(
        dataset, models, quality=QUALITY, n_pairs=n_pairs, seed=seed
    )


def import_llm(version, content, label="Judge", **extra):
    return services.import_run(
        {
            "target": "judgments",
            "version_id": version.pk,
            "kind": "llm",
            "label": label,
            "content": content,
            "filename": "gpt-4_head2head.json",
            "rounds": ROUNDS,
            "text_metrics": False,
            **extra,
        }
    )
