"""The ``ModelRun`` a runner fills: a new one, or the same model and label again (resume)."""

from __future__ import annotations

from annotator.platform.errors import Conflict
from annotator.platform.models import Job
from curation.models import LLMProvider

from .. import services
from ..models import BenchmarkVersion, EvaluatedModel, ModelRun
from .common import RUN_JOB, job_create


def runner_run(
    *,
    version: BenchmarkVersion,
    model_name: str,
    label: str,
    settings_: dict,
    seed: int,
    created_by,
    provider: LLMProvider | None = None,
) -> ModelRun:
    """The run to fill: a new one, or the same model and label again (resume)."""
    label = (label or "").strip()[:120]
    model_name = services.clean_name(model_name, "model name", 200)
    model, _ = EvaluatedModel.objects.get_or_create(
        name=model_name,
        defaults={
            "provider": (provider.name if provider else settings_.get("scorer", ""))[:100],
            "endpoint": (provider.base_url if provider else "")[:500],
            "parameters": {
                k: settings_[k]
                for k in ("temperature", "max_tokens", "scorer_signature")
                if k in settings_
            },
        },
    )
    run = (
        ModelRun.objects.select_for_update(of=("self",))
        .select_related("job")
        .filter(model=model, version=version, label=label)
        .first()
    )
    if run is None:
        return ModelRun.objects.create(
            model=model,
            version=version,
            label=label,
            source=ModelRun.Source.RUNNER,
            prompt_settings=settings_,
            status=ModelRun.Status.PENDING,
            seed=seed,
            created_by=created_by,
        )
    name = f"{model_name}{f' ({label})' if label else ''}"
    if run.source != ModelRun.Source.RUNNER:
        raise Conflict(f"{name} already has an imported run on this version; give a run label.")
    if run.job is not None and not run.job.is_finished:
        raise Conflict(f"{name} is already running on this version (job {run.job_id}).")
    keys = ("runner", "provider_id", "scorer_id", "options")
    before = {k: (run.prompt_settings or {}).get(k) for k in keys}
    if before != {k: settings_.get(k) for k in keys} or run.seed != seed:
        raise Conflict(
            f"{name} already ran on this version with other settings; give the new run a label "
            "(re-running with the same settings fills only what is missing)."
        )
    return run


def enqueue_run(
    run: ModelRun, *, created_by, params: dict, total: int, enqueue: bool = True
) -> Job:
    job = job_create(
        kind=RUN_JOB,
        params={"run_id": run.pk, **params},
        created_by=created_by,
        project=run.version.benchmark.project,
        total=total,
        enqueue=enqueue,
    )
    ModelRun.objects.filter(pk=run.pk).update(job=job, status=ModelRun.Status.PENDING)
    return job
