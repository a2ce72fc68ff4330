"""What model runs, scorer runs and judges share: job kinds, pinned templates, progress, the
items that count, and how a crash leaves its row."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from typing import Any

from annotator.platform.errors import Invalid
from annotator.platform.jobs import job_enqueue, job_progress
from annotator.platform.models import Job
from curation.gateway.pins import template_for
from curation.models import LLMProvider, PromptTemplate

from .. import prompts
from ..models import BenchmarkVersion

RUN_JOB = "evaluation.run_model"
JUDGE_JOB = "evaluation.judge"
RUN_PURPOSE = "evaluation.run"
JUDGE_PURPOSE = "evaluation.judge"
EXTRACTION_PURPOSE = "evaluation.judge_extraction"


def provider_is_blind(provider: LLMProvider) -> bool:
    return provider.kind == LLMProvider.Kind.OFFLINE


def provider_label(provider: LLMProvider, *, judge: bool = False) -> str:
    """How pages name a provider in a "run a model" (or "run the judge") choice."""
    if provider_is_blind(provider):
        return prompts.OFFLINE_JUDGE_LABEL if judge else prompts.BLIND_BASELINE_LABEL
    vision = "" if judge else (" · vision" if provider.supports_vision else " · text only")
    return f"{provider.name} · {provider.model or 'default model'}{vision}"


def templates_pinned(
    names: Sequence[str], *, project, recorded: dict | None = None
) -> dict[str, PromptTemplate]:
    """The version of each template the job renders from start to end (seeded if new): the one
    a resumed run ``recorded`` when it started (``template_record``), else the one ``project``
    is pinned to, so a new version never changes a run half-way."""
    prompts.ensure_templates(names)
    recorded = recorded or {}
    kept = {
        t.name: t
        for name in names
        if isinstance(recorded.get(name), dict)
        for t in PromptTemplate.objects.filter(name=name, version=recorded[name].get("version"))
    }
    return {name: kept.get(name) or template_for(name, project=project) for name in names}


def progress(job_id: int | None, done: int, total: int | None = None, message: str = ""):
    if job_id:
        job_progress(job_id=job_id, done=done, total=total, message=message)


class Progress:
    """Per-item progress, written at most every ``every`` seconds (one UPDATE each)."""

    def __init__(self, job_id: int | None, every: float = 0.5) -> None:
        self.job_id, self.every, self.last = job_id, every, 0.0

    def __call__(self, done: int) -> None:
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last = now
            progress(self.job_id, done)


@contextlib.contextmanager
def marks_failed(model, pk: int, running: str, failed: str):
    """A crash (template error, lost scorer, database) leaves the row failed, not running."""
    try:
        yield
    except Exception:
        model.objects.filter(pk=pk, status=running).update(status=failed)
        raise


def job_create(*, kind: str, params: dict, created_by, project, total: int, enqueue: bool) -> Job:
    """A Job row sent to Celery after commit, or (``enqueue=False``, the CLI) left for the
    caller to run in-process with the task's ``apply``."""
    if enqueue:
        return job_enqueue(
            kind=kind, params=params, created_by=created_by, project=project, total=total
        )
    return Job.objects.create(
        kind=kind, params=params, created_by=created_by, project=project, total=total
    )


def kept_items(version: BenchmarkVersion, limit: int | None):
    items = version.items.filter(kept=True).order_by("position")
    return items[:limit] if limit else items


def check_limit(limit: int | None) -> int | None:
    if limit in (None, ""):
        return None
    try:
        limit = int(limit)
    except (TypeError, ValueError) as exc:
        raise Invalid("The item limit must be a whole number.") from exc
    if limit < 1:
        raise Invalid("The item limit must be at least 1 (leave it empty for every item).")
    return limit


def failed_keys(scores: Any) -> dict:
    """The calls of a prediction that failed (a runner's provenance), by call key."""
    provenance = scores.get("provenance") if isinstance(scores, dict) else None
    return (provenance or {}).get("failed") or {}
