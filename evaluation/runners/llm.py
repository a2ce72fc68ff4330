"""Model runs: a VLM answers every kept item of a version with its family's official prompt.

Every call is a gateway ``Generation``; each item's outputs become one ``Prediction`` (raw
outputs, parsed answers, and under ``scores["provenance"]`` the Generation id of every output and
the error of every failed call). Failed or malformed calls are recorded as failed outputs (parsed
as unparseable, so they count as wrong, METRICS.md), never as a crash. A re-run of the same run
fills only what is missing or failed and reuses every OK generation of earlier attempts. Metrics
are then computed with ``services.metrics_compute``. What a family asks and how its answers are
read is its ``LLMRunner`` (``evaluation.registry``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotator.platform.errors import Invalid
from annotator.platform.models import Job
from curation.gateway.pins import template_record
from curation.models import Generation, LLMProvider

from .. import prompts, services
from ..models import BenchmarkItem, BenchmarkVersion, ModelRun, Prediction
from ..registry import Family, LLMRunner, ScorerRunner, families, family_of
from .common import (
    RUN_PURPOSE,
    Progress,
    check_limit,
    failed_keys,
    kept_items,
    marks_failed,
    progress,
    provider_is_blind,
    templates_pinned,
)
from .pool import Call, Outcome, Pool, outcome_of
from .runs import enqueue_run, runner_run
from .scorer import score_model


def _default_model_name(provider: LLMProvider) -> str:
    if provider_is_blind(provider):
        return prompts.BLIND_BASELINE_LABEL
    return (provider.model or provider.name)[:200]


def option_owners() -> list[Family]:
    """The families whose model runs take yes/no options (form, API and CLI fields)."""
    return [f for f in families() if isinstance(f.runner, LLMRunner) and f.runner.options.fields]


def run_options(family: Family, options: dict | None) -> dict:
    """The run options stored on the run: the family's own, each a yes/no; options of another
    family, or unknown ones, are refused."""
    options = dict(options or {})
    owners = option_owners()
    known = {o.name for f in owners for o in f.runner.options.fields}
    unknown = set(options) - known
    if unknown:
        raise Invalid(f"Unknown run options: {', '.join(sorted(unknown))}.")
    declared = family.runner.options
    names = [o.name for o in declared.fields]
    if any(v for k, v in options.items() if k not in names):
        what = " / ".join(f"{f.runner.options.summary}" for f in owners)
        whose = " / ".join(f.label for f in owners)
        raise Invalid(f"These options ({what}) belong to {whose}.")
    if not names:
        return {}
    clean = {k: bool(options.get(k, False)) for k in names}
    return declared.clean(clean) if declared.clean else clean


def run_model_start(
    *,
    version: BenchmarkVersion,
    provider: LLMProvider,
    created_by,
    limit: int | None = None,
    label: str = "",
    model_name: str = "",
    seed: int = 0,
    options: dict | None = None,
    rounds: int = 1000,
    text_metrics: bool = True,
    enqueue: bool = True,
) -> Job:
    """Check the request now (clear errors, nothing written), then answer the version's kept
    items with ``provider`` in a job; the same model and label again resumes the run."""
    family = family_of(version.benchmark.family)
    if isinstance(family.runner, ScorerRunner):
        raise Invalid(f"{family.label} is scored by a CLIP-style scorer: choose a scorer.")
    if family.runner is None:
        raise Invalid(f"No runner for the {family.key!r} family.")
    limit = check_limit(limit)
    clean = run_options(family, options)
    if not kept_items(version, None).exists():
        raise Invalid("This version has no items that count; there is nothing to answer.")
    blind = provider_is_blind(provider)
    if not blind and not provider.supports_vision:
        raise Invalid(
            f"Provider {provider.name!r} is not marked as accepting images; a model run sends "
            "each item's images. Tick 'supports vision' on its page or choose another provider."
        )
    settings_ = {
        "runner": "vlm",
        "provider_id": provider.pk,
        "provider": provider.name,
        "provider_kind": provider.kind,
        "endpoint_model": provider.model,
        "base_url": provider.base_url,
        "temperature": provider.temperature,
        "max_tokens": provider.max_tokens,
        "blind_baseline": blind,
        "images": "not sent: offline blind baseline" if blind else "data URLs",
        "options": clean,
    }
    total = kept_items(version, limit).count() + 1
    params = {"limit": limit, "rounds": int(rounds), "text_metrics": bool(text_metrics)}
    with transaction.atomic():
        run = runner_run(
            version=version,
            model_name=model_name or _default_model_name(provider),
            label=label,
            settings_=settings_,
            seed=int(seed or 0),
            created_by=created_by,
            provider=provider,
        )
        return enqueue_run(run, created_by=created_by, params=params, total=total, enqueue=enqueue)


def _reusable(run: ModelRun) -> dict[tuple[int, str], Generation]:
    """OK generations of earlier attempts of this run, by (item pk, call key)."""
    prefix = f"evalrun{run.pk}|"
    found: dict[tuple[int, str], Generation] = {}
    for generation in Generation.objects.filter(
        purpose=RUN_PURPOSE, item_key__startswith=prefix, status=Generation.Status.OK
    ).order_by("id"):
        _, item_pk, key = generation.item_key.split("|", 2)
        found[(int(item_pk), key)] = generation
    return found


def item_prediction(
    runner: LLMRunner, item: BenchmarkItem, outcomes: dict[str, Outcome]
) -> tuple[Any, Any, dict]:
    """(raw_output, parsed_answer, scores) of one item from its calls' outcomes: the family
    reads the answers, the provenance of every call comes first in ``scores``."""
    provenance = {
        "generations": {k: o.generation_id for k, o in sorted(outcomes.items())},
        "failed": {k: o.error for k, o in sorted(outcomes.items()) if o.text is None},
    }
    raw, parsed, extra = runner.prediction(item, outcomes)
    return raw, parsed, {"provenance": provenance, **extra}


def run_model(
    *,
    run_id: int,
    job_id: int | None = None,
    limit: int | None = None,
    rounds: int = 1000,
    text_metrics: bool = True,
    compute_metrics: bool = True,
) -> dict:
    """The body of a run job (also the CLI's): answer what is missing, then compute metrics."""
    with marks_failed(ModelRun, run_id, ModelRun.Status.RUNNING, ModelRun.Status.FAILED):
        run = ModelRun.objects.select_related("version__benchmark", "model").get(pk=run_id)
        if (run.prompt_settings or {}).get("runner") == "scorer":
            return score_model(run, job_id=job_id, limit=limit, rounds=rounds)
        counts, total = _answer(run, job_id=job_id, limit=limit)
        return _finish_run(
            run,
            counts,
            job_id=job_id,
            total=total,
            rounds=rounds,
            text_metrics=text_metrics,
            compute_metrics=compute_metrics,
        )


@dataclass
class _Answers:
    """Outcomes gathered per item; an item's prediction is stored when its last call returns."""

    run: ModelRun
    runner: LLMRunner
    progress: Progress
    existing: dict[int, int]
    by_pk: dict[int, BenchmarkItem] = field(default_factory=dict)
    outcomes: dict[int, dict[str, Outcome]] = field(default_factory=dict)
    waiting: dict[int, int] = field(default_factory=dict)
    counts: dict = field(
        default_factory=lambda: {"items": 0, "calls": 0, "failed_calls": 0, "reused": 0}
    )

    def plan(self, pending: list[BenchmarkItem], options: dict) -> list[Call]:
        """The calls still to make; an OK generation of an earlier attempt is reused."""
        reuse = _reusable(self.run)
        calls: list[Call] = []
        for item in pending:
            self.by_pk[item.pk] = item
            self.outcomes[item.pk] = {}
            specs = self.runner.calls(item, options)
            for spec in specs:
                previous = reuse.get((item.pk, spec.key))
                if previous is not None:
                    self.outcomes[item.pk][spec.key] = outcome_of(previous)
                    self.counts["reused"] += 1
                else:
                    key = f"evalrun{self.run.pk}|{item.pk}|{spec.key}"
                    calls.append(Call(item.pk, spec, key, RUN_PURPOSE))
            self.waiting[item.pk] = len(specs) - len(self.outcomes[item.pk])
        for item_pk, left in list(self.waiting.items()):
            if left == 0:
                self.store(item_pk)
        return calls

    def store(self, item_pk: int) -> None:
        item = self.by_pk[item_pk]
        raw, parsed, scores = item_prediction(self.runner, item, self.outcomes.pop(item_pk))
        fields = {"raw_output": raw, "parsed_answer": parsed, "scores": scores}
        if item_pk in self.existing:
            Prediction.objects.filter(pk=self.existing[item_pk]).update(**fields)
        else:
            Prediction.objects.create(run=self.run, item=item, **fields)
        self.counts["items"] += 1
        self.progress(self.counts["items"])

    def on_result(self, call: Call, generation: Generation) -> list:
        outcome = outcome_of(generation)
        self.outcomes[call.tag][call.spec.key] = outcome
        self.counts["calls"] += 1
        self.counts["failed_calls"] += outcome.text is None
        self.waiting[call.tag] -= 1
        if self.waiting[call.tag] == 0:
            self.store(call.tag)
        return []


def _answer(run: ModelRun, *, job_id: int | None, limit: int | None) -> tuple[dict, int]:
    """Ask every call still missing for the run's items; (counts, progress total)."""
    settings_ = run.prompt_settings or {}
    runner = family_of(run.version.benchmark.family).runner
    provider = LLMProvider.objects.filter(pk=settings_.get("provider_id")).first()
    if provider is None:
        raise Invalid("The provider of this run was deleted; start a new run with another one.")
    templates = templates_pinned(
        runner.templates,
        project=run.version.benchmark.project,
        recorded=settings_.get("templates"),
    )
    ModelRun.objects.filter(pk=run.pk).update(
        status=ModelRun.Status.RUNNING,
        started_at=run.started_at or timezone.now(),
        finished_at=None,
        prompt_settings={**settings_, "templates": template_record(templates)},
    )
    items = list(kept_items(run.version, limit))
    complete = {
        item_pk
        for item_pk, scores in run.predictions.values_list("item_id", "scores")
        if not failed_keys(scores)
    }
    pending = [item for item in items if item.pk not in complete]
    total = len(pending) + 1
    progress(job_id, 0, total, f"{len(pending)} of {len(items)} items to answer")
    answers = _Answers(
        run, runner, Progress(job_id), dict(run.predictions.values_list("item_id", "pk"))
    )
    calls = answers.plan(pending, settings_.get("options") or {})
    pool = Pool(
        provider=provider,
        templates=templates,
        job_id=job_id,
        project=run.version.benchmark.project,
        created_by=run.created_by,
        seed=run.seed,
        blind=provider_is_blind(provider),
    )
    if not pool.blind:
        pool.resolver.prefetch(ref for call in calls for ref in call.spec.images)
    pool.run(calls, answers.on_result)
    return answers.counts, total


def _finish_run(
    run: ModelRun,
    counts: dict,
    *,
    job_id: int | None,
    total: int,
    rounds: int,
    text_metrics: bool,
    compute_metrics: bool,
) -> dict:
    predictions = list(run.predictions.values_list("scores", flat=True))
    failures = [failed_keys(s) for s in predictions]
    failed_items = sum(1 for f in failures if f)
    # A run fails only when no call anywhere got an answer (no key, endpoint down, no images).
    ok_anywhere = any(
        len(((s or {}).get("provenance") or {}).get("generations") or {}) > len(f)
        for s, f in zip(predictions, failures, strict=True)
    )
    settings_ = ModelRun.objects.get(pk=run.pk).prompt_settings or {}
    settings_.update(failed_items=failed_items, last_attempt=counts)
    status = ModelRun.Status.SUCCEEDED if ok_anywhere else ModelRun.Status.FAILED
    ModelRun.objects.filter(pk=run.pk).update(
        status=status,
        finished_at=timezone.now(),
        prediction_count=len(predictions),
        prompt_settings=settings_,
    )
    result = {"run_id": run.pk, **counts, "failed_items": failed_items}
    if status == ModelRun.Status.FAILED:
        first = next((e for f in failures for e in f.values()), "")
        raise Invalid(f"Every call failed; nothing was answered. First error: {first}")
    message = f"{counts['items']} items answered ({counts['failed_calls']} failed calls)"
    if compute_metrics:
        progress(job_id, total - 1, message=message + "; computing metrics")
        run.refresh_from_db()
        result["metrics"] = services.metrics_compute(
            run=run, rounds=rounds, text_metrics=text_metrics
        )
    retry = (
        f"; {failed_items} items with failures — run again to retry them" if failed_items else ""
    )
    progress(job_id, total, message=message + retry)
    return result
