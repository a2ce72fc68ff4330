"""Every change to evaluation data goes through these functions; each one is atomic.

Imports are all-or-nothing: rows are parsed and validated (with line numbers) before anything is
written, and a published (frozen) version never changes its items.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from annotator.models import Job, Project
from annotator.services import Conflict, Invalid, NotFound, job_enqueue

from . import compute, importers
from .importers import ItemRow, PredictionRow
from .models import (
    Benchmark,
    BenchmarkItem,
    BenchmarkVersion,
    EvaluatedModel,
    Family,
    MetricResult,
    ModelRun,
    Prediction,
)

IMPORT_JOB = "evaluation.import_file"
COMPUTE_JOB = "evaluation.compute_metrics"


def _clean_name(value: str, what: str, max_length: int) -> str:
    value = (value or "").strip()
    if not value:
        raise Invalid(f"Give the {what}.", [{"line": 0, "error": f"{what} is required"}])
    if len(value) > max_length:
        raise Invalid(f"The {what} is longer than {max_length} characters.")
    return value


def benchmark_get_or_create(
    *, family: str, name: str, project: Project | None = None, created_by=None
) -> Benchmark:
    if family not in Family.values:
        raise Invalid(f"Unknown benchmark family {family!r}.")
    name = _clean_name(name, "benchmark name", 200)
    benchmark, _ = Benchmark.objects.get_or_create(
        family=family,
        name=name,
        defaults={"project": project, "created_by": created_by},
    )
    return benchmark


@transaction.atomic
def version_create(
    *,
    benchmark: Benchmark,
    label: str,
    rows: Sequence[ItemRow],
    publish: bool = True,
    source: str = "",
    created_by=None,
) -> BenchmarkVersion:
    """A new version holding `rows`; published (frozen) unless `publish` is False."""
    label = _clean_name(label, "version label", 60)
    if BenchmarkVersion.objects.filter(benchmark=benchmark, label=label).exists():
        raise Conflict(f"{benchmark.name} already has a version {label!r}.")
    if not rows:
        raise Invalid("A version needs at least one item.")
    version = BenchmarkVersion.objects.create(
        benchmark=benchmark, label=label, source=source[:255], created_by=created_by
    )
    _items_add(version, rows)
    if publish:
        version = version_publish(version=version)
    return version


def _items_add(version: BenchmarkVersion, rows: Sequence[ItemRow]) -> None:
    existing = set(version.items.values_list("item_id", flat=True))
    clashes = [
        {"line": r.line, "error": f"item id {r.item_id!r} is already in this version"}
        for r in rows
        if r.item_id in existing
    ]
    if clashes:
        raise Invalid("Some items are already in the version; nothing was added.", clashes)
    start = version.item_count
    BenchmarkItem.objects.bulk_create(
        [
            BenchmarkItem(
                version=version, item_id=r.item_id, position=start + k, kept=r.kept, data=r.data
            )
            for k, r in enumerate(rows)
        ],
        batch_size=1000,
    )
    version.item_count = start + len(rows)
    version.kept_count += sum(1 for r in rows if r.kept)
    version.save(update_fields=["item_count", "kept_count"])


@transaction.atomic
def version_items_add(*, version: BenchmarkVersion, rows: Sequence[ItemRow]) -> BenchmarkVersion:
    """Add items to a draft version; a published version is frozen and refuses (409)."""
    version = BenchmarkVersion.objects.select_for_update().get(pk=version.pk)
    if version.frozen:
        raise Conflict("This version is published: its items can no longer change.")
    _items_add(version, rows)
    return version


@transaction.atomic
def version_publish(*, version: BenchmarkVersion) -> BenchmarkVersion:
    version = BenchmarkVersion.objects.select_for_update().get(pk=version.pk)
    if not version.frozen:
        version.frozen = True
        version.published_at = timezone.now()
        version.save(update_fields=["frozen", "published_at"])
    return version


def item_delete(*, item: BenchmarkItem) -> None:
    """Only a draft version may lose items."""
    if item.version.frozen:
        raise Conflict("This version is published: its items can no longer change.")
    with transaction.atomic():
        item.delete()
        BenchmarkVersion.objects.filter(pk=item.version_id).update(
            item_count=item.version.item_count - 1,
            kept_count=item.version.kept_count - int(item.kept),
        )


def _match_predictions(
    version: BenchmarkVersion, rows: Sequence[PredictionRow]
) -> dict[str, BenchmarkItem]:
    """Map every row to an item of the version; unknown ids and duplicates are line errors."""
    items = {i.item_id: i for i in version.items.only("id", "item_id", "data", "kept")}
    errors = []
    first: dict[str, int] = {}
    for row in rows:
        if row.item_id not in items:
            errors.append({"line": row.line, "error": f"unknown item id {row.item_id!r}"})
        elif row.item_id in first:
            errors.append(
                {
                    "line": row.line,
                    "error": f"duplicate prediction for {row.item_id!r} "
                    f"(first on line {first[row.item_id]})",
                }
            )
        else:
            first[row.item_id] = row.line
    if errors:
        raise Invalid(
            "The predictions do not match the version's items; nothing was imported.", errors[:200]
        )
    return items


def _parsed_answer(family: str, item: BenchmarkItem, row: PredictionRow) -> Any:
    if family == Family.NATURALBENCH:
        return compute.parse_naturalbench(
            compute.ItemData(item.item_id, item.data, item.kept), row.raw_output
        )
    return row.parsed_answer


def predictions_validate(*, version: BenchmarkVersion, rows: Sequence[PredictionRow]) -> None:
    _match_predictions(version, rows)


@transaction.atomic
def run_import(
    *,
    version: BenchmarkVersion,
    model_name: str,
    rows: Sequence[PredictionRow],
    label: str = "",
    provider: str = "",
    prompt_settings: dict | None = None,
    seed: int = 0,
    created_by=None,
    job=None,
) -> ModelRun:
    """A finished, imported run of `model_name` on `version` with one prediction per row."""
    model_name = _clean_name(model_name, "model name", 200)
    items = _match_predictions(version, rows)
    model, _ = EvaluatedModel.objects.get_or_create(
        name=model_name, defaults={"provider": provider}
    )
    if ModelRun.objects.filter(model=model, version=version, label=label).exists():
        raise Conflict(
            f"{model_name} already has a run{f' {label!r}' if label else ''} on this version; "
            "give the new run a label."
        )
    now = timezone.now()
    run = ModelRun.objects.create(
        model=model,
        version=version,
        label=label,
        source=ModelRun.Source.IMPORTED,
        prompt_settings=prompt_settings or {},
        status=ModelRun.Status.SUCCEEDED,
        seed=seed,
        started_at=now,
        finished_at=now,
        created_by=created_by,
        job=job,
        prediction_count=len(rows),
    )
    family = version.benchmark.family
    Prediction.objects.bulk_create(
        [
            Prediction(
                run=run,
                item=items[row.item_id],
                raw_output=row.raw_output,
                parsed_answer=_parsed_answer(family, items[row.item_id], row),
                scores=row.scores,
            )
            for row in rows
        ],
        batch_size=1000,
    )
    return run


# --- Metrics ------------------------------------------------------------------------------------


def _item_data(version: BenchmarkVersion) -> list[compute.ItemData]:
    return [
        compute.ItemData(item_id, data, kept)
        for item_id, data, kept in version.items.order_by("position").values_list(
            "item_id", "data", "kept"
        )
    ]


def _prediction_data(run: ModelRun) -> dict[str, compute.PredictionData]:
    return {
        item_id: compute.PredictionData(raw, parsed, scores)
        for item_id, raw, parsed, scores in run.predictions.values_list(
            "item__item_id", "raw_output", "parsed_answer", "scores"
        )
    }


def _store(run: ModelRun, rows: Sequence[compute.MetricRow]) -> None:
    for row in rows:
        MetricResult.objects.update_or_create(
            run=run,
            metric=row.metric,
            defaults={
                "value": row.value,
                "interval_low": row.low,
                "interval_high": row.high,
                "n": row.n,
                "breakdown": row.breakdown,
                "details": row.details,
                "code_version": compute.CODE_VERSION,
            },
        )


def metrics_compute(
    *, run: ModelRun, rounds: int = 1000, text_metrics: bool = True, progress=None
) -> dict:
    """Compute and store every metric of the run's family (and, for VisIT-Bench, the
    version-level ratings of every run). Returns {metric: value}."""
    if run.status != ModelRun.Status.SUCCEEDED:
        raise Conflict("Metrics need a finished run.")
    version = run.version
    family = version.benchmark.family
    items = _item_data(version)
    predictions = _prediction_data(run)
    if progress:
        progress(1, 3, "Computing metrics")
    if family == Family.VISIT:
        rows = compute.visit_run_rows(
            items, predictions, seed=run.seed, rounds=rounds, text_metrics=text_metrics
        )
    else:
        rows = compute.FAMILY_ROWS[family](items, predictions, seed=run.seed, rounds=rounds)
    version_rows: dict[str, list[compute.MetricRow]] = {}
    others: dict[str, ModelRun] = {}
    if family == Family.VISIT:
        if progress:
            progress(2, 3, "Rating all runs of the version")
        others = {
            str(r.pk): r
            for r in ModelRun.objects.filter(version=version, status=ModelRun.Status.SUCCEEDED)
        }
        version_rows = compute.visit_version_rows(
            items,
            {key: _prediction_data(r) for key, r in others.items()},
            seed=version.pk,
            rounds=rounds,
        )
    with transaction.atomic():
        _store(run, rows)
        for key, extra in version_rows.items():
            _store(others[key], extra)
        ModelRun.objects.filter(pk=run.pk).update(metrics_computed_at=timezone.now())
    if progress:
        progress(3, 3, "Stored")
    return {row.metric: row.value for row in rows}


# --- Jobs ---------------------------------------------------------------------------------------


def import_validate(
    *,
    target: str,
    family: str,
    content: str,
    filename: str = "",
    version: BenchmarkVersion | None = None,
    option: str = "",
) -> int:
    """Synchronous validation at the edge; raises Invalid with line errors. Returns row count."""
    if target == "items":
        return len(importers.parse_items(family, content, filename))
    if version is None:
        raise NotFound("Choose a benchmark version for the predictions.")
    rows = importers.parse_predictions(family, content, filename, option=option)
    predictions_validate(version=version, rows=rows)
    return len(rows)


def import_enqueue(*, params: dict, content: str, created_by=None, project=None):
    """Store the validated upload and start an import job once the transaction commits.

    The file goes to the default storage (not into the Job row) so job pages stay small.
    """
    name = default_storage.save(
        f"evaluation/uploads/{uuid.uuid4().hex}.txt", ContentFile(content.encode("utf-8"))
    )
    return job_enqueue(
        kind=IMPORT_JOB,
        params={**params, "upload": name},
        created_by=created_by,
        project=project,
        total=2,
    )


def version_import_start(
    *,
    family: str,
    benchmark: str,
    label: str,
    publish: bool,
    content: str,
    filename: str,
    created_by=None,
) -> tuple[Job, int]:
    """Validate a dataset file now (line-numbered errors), import it as a version in a job."""
    n = import_validate(target="items", family=family, content=content, filename=filename)
    params = {
        "target": "items",
        "family": family,
        "benchmark": benchmark,
        "label": label,
        "publish": publish,
        "filename": filename,
    }
    return import_enqueue(params=params, content=content, created_by=created_by), n


def run_import_start(
    *,
    version: BenchmarkVersion,
    model: str,
    label: str,
    option: str,
    seed: int | None,
    content: str,
    filename: str,
    created_by=None,
) -> tuple[Job, int]:
    """Validate predictions against a version now, then import and score them in a job."""
    family = version.benchmark.family
    n = import_validate(
        target="predictions",
        family=family,
        content=content,
        filename=filename,
        version=version,
        option=option,
    )
    params = {
        "target": "predictions",
        "family": family,
        "version_id": version.pk,
        "model": model,
        "label": label,
        "option": option,
        "seed": seed or 0,
        "filename": filename,
    }
    job = import_enqueue(
        params=params, content=content, created_by=created_by, project=version.benchmark.project
    )
    return job, n


def _content(params: dict) -> str:
    if "content" in params:
        return params["content"]
    with default_storage.open(params["upload"], "rb") as handle:
        return handle.read().decode("utf-8")


def import_run(params: dict, *, created_by=None, job=None) -> dict:
    """The body of an import job (also used by the CLI): re-validate, then write everything."""
    family = params["family"]
    content = _content(params)
    if params["target"] == "items":
        rows = importers.parse_items(family, content, params.get("filename", ""))
        benchmark = benchmark_get_or_create(
            family=family,
            name=params["benchmark"],
            project=Project.objects.filter(pk=params.get("project_id")).first(),
            created_by=created_by,
        )
        version = version_create(
            benchmark=benchmark,
            label=params["label"],
            rows=rows,
            publish=params.get("publish", True),
            source=params.get("filename", ""),
            created_by=created_by,
        )
        return {"version_id": version.pk, "items": version.item_count, "kept": version.kept_count}
    version = BenchmarkVersion.objects.select_related("benchmark").get(pk=params["version_id"])
    rows = importers.parse_predictions(
        version.benchmark.family,
        content,
        params.get("filename", ""),
        option=params.get("option", ""),
    )
    run = run_import(
        version=version,
        model_name=params["model"],
        rows=rows,
        label=params.get("label", ""),
        provider=params.get("provider", ""),
        seed=int(params.get("seed", 0)),
        prompt_settings={"source_file": params.get("filename", "")},
        created_by=created_by,
        job=job,
    )
    result: dict[str, Any] = {"run_id": run.pk, "predictions": run.prediction_count}
    if params.get("compute", True):
        metrics_compute(run=run, rounds=int(params.get("rounds", 1000)))
        result["metrics"] = True
    return result


def compute_enqueue(*, run: ModelRun, created_by=None):
    job = job_enqueue(
        kind=COMPUTE_JOB,
        params={"run_id": run.pk},
        created_by=created_by,
        project=run.version.benchmark.project,
        total=3,
    )
    ModelRun.objects.filter(pk=run.pk).update(job=job)
    return job
