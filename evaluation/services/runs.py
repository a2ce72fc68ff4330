"""Model runs: imported predictions matched to a version's items, and their metrics."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from annotator.platform.errors import Conflict, Invalid
from annotator.platform.jobs import job_enqueue
from evaluation import compute
from evaluation.models import (
    BenchmarkItem,
    BenchmarkVersion,
    EvaluatedModel,
    MetricResult,
    ModelRun,
    Prediction,
)
from evaluation.parsed import PredictionRow
from evaluation.registry import Family, family_of

from .benchmarks import clean_name, leaderboard_changed

COMPUTE_JOB = "evaluation.compute_metrics"


@dataclass(frozen=True)
class Matched:
    """Rows matched to a version's items; with tolerant matching, the rows skipped (no item)."""

    items: dict[str, BenchmarkItem]
    rows: list[PredictionRow]
    skipped: list[dict]  # {"line", "item_id"} of each row that matched no item

    def report(self) -> dict:
        """What a run records of the skipped rows: their count and (the first 200) lines."""
        return {
            "skipped_count": len(self.skipped),
            "skipped_lines": [s["line"] for s in self.skipped[:200]],
        }


def _match_predictions(
    version: BenchmarkVersion, rows: Sequence[PredictionRow], *, skip_unmatched: bool = False
) -> Matched:
    """Map every row to an item of the version; unknown ids and duplicates are line errors.
    ``skip_unmatched`` (tolerant matching, an explicit choice): a row that matches no item is
    skipped and reported by line instead, as some papers' own code skips rows that match no
    instance; duplicates stay errors."""
    items = {i.item_id: i for i in version.items.only("id", "item_id", "data", "kept")}
    errors, skipped, kept = [], [], []
    first: dict[str, int] = {}
    for row in rows:
        if row.item_id not in items:
            if skip_unmatched:
                skipped.append({"line": row.line, "item_id": row.item_id})
            else:
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
            kept.append(row)
    if not errors and rows and not kept:
        errors.append({"line": 0, "error": "no row matches an item of this version"})
    if errors:
        hint = (
            ""
            if skip_unmatched or not any(e["error"].startswith("unknown") for e in errors)
            else " To skip rows that match no item, choose tolerant matching."
        )
        raise Invalid(
            "The predictions do not match the version's items; nothing was imported." + hint,
            errors[:200],
        )
    return Matched(items, kept, skipped)


def _parsed_answer(declared: Family, item: BenchmarkItem, row: PredictionRow):
    if declared.parse_answer is None:
        return row.parsed_answer
    return declared.parse_answer(
        compute.ItemData(item.item_id, item.data, item.kept), row.raw_output
    )


def predictions_validate(
    *, version: BenchmarkVersion, rows: Sequence[PredictionRow], skip_unmatched: bool = False
) -> Matched:
    return _match_predictions(version, rows, skip_unmatched=skip_unmatched)


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
    skip_unmatched: bool = False,
    created_by=None,
    job=None,
) -> ModelRun:
    """A finished, imported run of `model_name` on `version` with one prediction per row (all or
    nothing); with ``skip_unmatched``, rows that match no item are skipped and their count and
    lines recorded in the run's ``prompt_settings["unmatched"]``."""
    model_name = clean_name(model_name, "model name", 200)
    matched = _match_predictions(version, rows, skip_unmatched=skip_unmatched)
    items, rows = matched.items, matched.rows
    if skip_unmatched:
        prompt_settings = {**(prompt_settings or {}), "unmatched": matched.report()}
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
    declared = family_of(version.benchmark.family)
    Prediction.objects.bulk_create(
        [
            Prediction(
                run=run,
                item=items[row.item_id],
                raw_output=row.raw_output,
                parsed_answer=_parsed_answer(declared, items[row.item_id], row),
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


def run_inputs(run: ModelRun) -> tuple[list[compute.ItemData], dict[str, compute.PredictionData]]:
    """The version's items and the run's predictions, as metrics and exports read them."""
    return _item_data(run.version), _prediction_data(run)


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


def _players(runs) -> dict[str, ModelRun]:
    """Player name → run: the model's name; a model's later runs get " (2)", " (3)" in the
    order they were made, so names never carry a database id."""
    out: dict[str, ModelRun] = {}
    for run in runs:
        name, k = run.model.name, 1
        while name in out:
            k += 1
            name = f"{run.model.name} ({k})"
        out[name] = run
    return out


def metrics_compute(
    *, run: ModelRun, rounds: int = 1000, text_metrics: bool = True, progress=None
) -> dict:
    """Compute and store every metric of the run's family (and, when the family rates all runs
    of a version together, those version-level ratings of every run). Returns {metric: value}."""
    if run.status != ModelRun.Status.SUCCEEDED:
        raise Conflict("Metrics need a finished run.")
    version = run.version
    declared = family_of(version.benchmark.family)
    items = _item_data(version)
    predictions = _prediction_data(run)
    if progress:
        progress(1, 3, "Computing metrics")
    rows = declared.rows(
        items, predictions, seed=run.seed, rounds=rounds, text_metrics=text_metrics
    )
    version_rows: dict[str, list[compute.MetricRow]] = {}
    others: dict[str, ModelRun] = {}
    if declared.version_rows is not None:
        if progress:
            progress(2, 3, "Rating all runs of the version")
        others = _players(
            ModelRun.objects.filter(version=version, status=ModelRun.Status.SUCCEEDED)
            .select_related("model")
            .order_by("id")
        )
        version_rows = declared.version_rows(
            items, {key: _prediction_data(r) for key, r in others.items()}, rounds=rounds
        )
    with transaction.atomic():
        _store(run, rows)
        for key, extra in version_rows.items():
            _store(others[key], extra)
        ModelRun.objects.filter(pk=run.pk).update(metrics_computed_at=timezone.now())
        leaderboard_changed(version=version, why="metrics", run=run.pk)
    if progress:
        progress(3, 3, "Stored")
    return {row.metric: row.value for row in rows}


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
