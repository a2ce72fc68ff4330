"""Offline stand-ins: runs that need no model, for the demo (no weights can be downloaded and no
key is configured there), so a leaderboard shows what it is for.

A stand-in answers every call its family's runner asks for an item (``LLMRunner.calls``) with
the family's own offline rule (the blind baseline's rule, ``evaluation.prompts``) seeded by the
call's images and the stand-in's seed: its answers change with the image, as a vision model's
would, yet it looks at nothing in the image. Its outputs are read by the family exactly as a
model's (``LLMRunner.prediction`` and the importer's answer parsing), so its metrics are real
metrics of these outputs. It is not a model, and its name, its run's settings and every page
that shows it say so.
"""

from __future__ import annotations

import hashlib
import json

from annotator.platform.errors import Invalid
from annotator.platform.jobs import job_task
from curation.gateway.offline import rule_for
from curation.gateway.providers import provider_offline

from .. import services
from ..models import BenchmarkVersion, ModelRun
from ..parsed import PredictionRow
from ..registry import LLMRunner, family_of
from .common import kept_items
from .llm import run_model_start
from .pool import Outcome

STANDIN_NOTE = (
    "Offline stand-in, not a model: each answer is the family's offline rule seeded by a hash "
    "of the item's images, so it changes with the image without looking at it."
)


def standin_seed(images: tuple[str, ...], seed: int) -> int:
    """A stable seed from the call's image references and the stand-in's own seed."""
    digest = hashlib.sha256("\x1f".join([str(seed), *images]).encode()).digest()
    return int.from_bytes(digest[:4], "big")


def _answer(template: str, variables: dict, seed: int) -> str:
    rule = rule_for(template)
    if rule is None:
        raise Invalid(f"No offline rule answers template {template!r}; no stand-in can run.")
    output = rule(dict(variables), seed)
    return output if isinstance(output, str) else json.dumps(output)


def standin_rows(version: BenchmarkVersion, *, seed: int) -> list[PredictionRow]:
    """One prediction per kept item of ``version``, as the family's runner reads its calls."""
    runner = family_of(version.benchmark.family).runner
    if not isinstance(runner, LLMRunner):
        raise Invalid("Stand-ins answer through a family's LLM runner; this family has none.")
    rows = []
    for line, item in enumerate(kept_items(version, None), start=1):
        outcomes = {
            spec.key: Outcome(
                _answer(spec.template, spec.variables, standin_seed(spec.images, seed)), 0
            )
            for spec in runner.calls(item, {})
        }
        raw, parsed, scores = runner.prediction(item, outcomes)
        rows.append(
            PredictionRow(item.item_id, raw, line=line, parsed_answer=parsed, scores=scores)
        )
    return rows


def standin_run(
    *, version: BenchmarkVersion, name: str, seed: int, created_by=None, rounds: int = 1000
) -> ModelRun:
    """A finished stand-in run named ``name`` on ``version``, its metrics computed."""
    run = services.run_import(
        version=version,
        model_name=name,
        rows=standin_rows(version, seed=seed),
        provider="offline stand-in",
        prompt_settings={"runner": "standin", "standin": True, "seed": seed, "note": STANDIN_NOTE},
        seed=seed,
        created_by=created_by,
    )
    services.metrics_compute(run=run, rounds=rounds)
    return run


# The demo's runs on a published version: (name, seed) of each stand-in.
DEMO_STANDINS = (
    ("Stand-in A (offline rule, not a model)", 1),
    ("Stand-in B (offline rule, not a model)", 2),
)


def demo_runs_add(
    *, version: BenchmarkVersion, created_by=None, baselines: bool = True
) -> list[ModelRun]:
    """The demo's model runs on ``version`` so that its leaderboard has rows and plots: with
    ``baselines``, the offline blind baseline through the family's real runner (question text
    only, no image: the offline provider) and the two stand-ins above; then the metrics of every
    finished run of the version still without them (runs a recipe's demo imported). Runs in
    this process; a family without an LLM runner only gets the metrics. Runs already there are
    left alone, so a second call adds nothing."""
    family = family_of(version.benchmark.family)
    made = []
    if baselines and isinstance(family.runner, LLMRunner):
        if not version.runs.filter(prompt_settings__blind_baseline=True).exists():
            job = run_model_start(
                version=version, provider=provider_offline(), created_by=created_by, enqueue=False
            )
            job_task(job.kind).apply(args=[job.pk])
            made.append(ModelRun.objects.get(job=job))
        for name, seed in DEMO_STANDINS:
            if not version.runs.filter(model__name=name).exists():
                run = standin_run(version=version, name=name, seed=seed, created_by=created_by)
                made.append(run)
    waiting = version.runs.filter(status=ModelRun.Status.SUCCEEDED, metrics_computed_at=None)
    for run in waiting.order_by("id"):
        services.metrics_compute(run=run)
    return made
