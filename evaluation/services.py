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

from annotator.platform.errors import Conflict, Invalid, NotFound
from annotator.platform.jobs import job_enqueue
from annotator.platform.models import Job, Project

from . import compute, importers, pairwise
from .importers import ItemRow, JudgmentFile, PredictionRow
from .metrics import visit
from .models import (
    Benchmark,
    BenchmarkItem,
    BenchmarkVersion,
    EvaluatedModel,
    Family,
    JudgmentSet,
    MetricResult,
    ModelRun,
    PairJudgment,
    Prediction,
)

IMPORT_JOB = "evaluation.import_file"
COMPUTE_JOB = "evaluation.compute_metrics"
JUDGMENTS_JOB = "evaluation.compute_judgments"


def _clean_name(value: str, what: str, max_length: int) -> str:
    value = (value or "").strip()
    if not value:
        raise Invalid(f"Give the {what}.", [{"line": 0, "error": f"{what} is required"}])
    if len(value) > max_length:
        raise Invalid(f"The {what} is longer than {max_length} characters.")
    return value


def benchmark_get_or_create(
    *, family: str, name: str, project: Project, created_by=None
) -> Benchmark:
    """The project's benchmark ``family`` / ``name``, made when missing. Names are looked up in
    that project only: another project's benchmark of the same name is neither found nor
    revealed."""
    if family not in Family.values:
        raise Invalid(f"Unknown benchmark family {family!r}.")
    if project is None:
        raise Invalid("Choose the project of the benchmark.")
    name = _clean_name(name, "benchmark name", 200)
    benchmark, _ = Benchmark.objects.get_or_create(
        project=project,
        family=family,
        name=name,
        defaults={"created_by": created_by},
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


def benchmark_version_create(
    *,
    family: str,
    name: str,
    label: str,
    rows: Sequence[ItemRow],
    project: Project,
    publish: bool = True,
    source: str = "",
    created_by=None,
) -> BenchmarkVersion:
    """A new version of the project's benchmark ``family`` / ``name`` (created when missing),
    in one transaction: a refused version leaves no empty benchmark behind."""
    with transaction.atomic():
        benchmark = benchmark_get_or_create(
            family=family, name=name, project=project, created_by=created_by
        )
        return version_create(
            benchmark=benchmark,
            label=label,
            rows=rows,
            publish=publish,
            source=source,
            created_by=created_by,
        )


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
    project: Project,
    family: str,
    benchmark: str,
    label: str,
    publish: bool,
    content: str,
    filename: str,
    created_by=None,
) -> tuple[Job, int]:
    """Validate a dataset file now (line-numbered errors), import it as a version of the
    project's benchmark ``benchmark`` in a job. The caller has checked that the person curates
    ``project``."""
    n = import_validate(target="items", family=family, content=content, filename=filename)
    params = {
        "target": "items",
        "project_id": project.pk,
        "family": family,
        "benchmark": benchmark,
        "label": label,
        "publish": publish,
        "filename": filename,
    }
    job = import_enqueue(params=params, content=content, created_by=created_by, project=project)
    return job, n


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
    if params["target"] == "judgments":
        return _judgments_import_run(params, created_by=created_by, job=job)
    family = params["family"]
    content = _content(params)
    if params["target"] == "items":
        rows = importers.parse_items(family, content, params.get("filename", ""))
        version = benchmark_version_create(
            family=family,
            name=params["benchmark"],
            project=Project.objects.filter(pk=params.get("project_id")).first(),
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
    prompt_settings = {"source_file": params.get("filename", "")}
    if version.benchmark.family == Family.VISIT:
        # The official judgment files name a model by its output column (make_pairs.py).
        prompt_settings["output_column"] = importers.visit_prediction_column(
            content, params.get("option", "")
        )
    run = run_import(
        version=version,
        model_name=params["model"],
        rows=rows,
        label=params.get("label", ""),
        provider=params.get("provider", ""),
        seed=int(params.get("seed", 0)),
        prompt_settings=prompt_settings,
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


# --- VisIT-Bench pairwise judgments (Sec. 4.2-4.3) ------------------------------------------------


def _require_visit(version: BenchmarkVersion) -> None:
    if version.benchmark.family != Family.VISIT:
        raise Invalid("Pairwise judgments belong to VisIT-Bench versions.")


def _visit_items(version: BenchmarkVersion) -> dict[str, BenchmarkItem]:
    """Items by (image, instruction) key; a repeated instance is matched to its first copy."""
    items: dict[str, BenchmarkItem] = {}
    for item in version.items.only("id", "item_id", "data", "kept").order_by("position"):
        key = importers.visit_key(item.data.get("image", ""), item.data.get("instruction", ""))
        items.setdefault(key, item)
    return items


def _match_judgments(
    version: BenchmarkVersion, parsed: JudgmentFile
) -> list[tuple[importers.JudgmentRow, BenchmarkItem]]:
    items = _visit_items(version)
    matched, errors = [], []
    for row in parsed.rows:
        item = items.get(importers.visit_key(row.image, row.instruction))
        if item is None:
            errors.append(
                {
                    "line": row.line,
                    "error": "unknown instance (image_url and instruction match "
                    "no item of this version)",
                }
            )
        else:
            matched.append((row, item))
    if errors:
        raise Invalid(
            "Some judgments are about instances that are not in this version; nothing was "
            "imported.",
            errors[:200],
        )
    return matched


def _check_set_label(version: BenchmarkVersion, label: str) -> str:
    label = _clean_name(label, "label of the judgment set", 120)
    if JudgmentSet.objects.filter(version=version, label=label).exists():
        raise Conflict(f"This version already has judgments labelled {label!r}.")
    return label


@transaction.atomic
def judgment_set_import(
    *,
    version: BenchmarkVersion,
    kind: str,
    label: str,
    parsed: JudgmentFile,
    judge: str = "",
    with_reference: bool = False,
    reference_player: str = importers.OFFICIAL_REFERENCE_PLAYER,
    seed: int = 1,
    bootstrap_seed: int = 0,
    provenance: dict | None = None,
    created_by=None,
    job=None,
) -> JudgmentSet:
    """A finished, imported set of judged pairs, matched to the version's instances (all or
    nothing). Repeated (pair, instance) judgments were already dropped, first kept (App. E)."""
    _require_visit(version)
    if kind not in JudgmentSet.Kind.values:
        raise Invalid(f"Unknown judgment kind {kind!r}: use 'llm' or 'human'.")
    label = _check_set_label(version, label)
    matched = _match_judgments(version, parsed)
    judgment_set = JudgmentSet.objects.create(
        version=version,
        kind=kind,
        label=label,
        judge=judge[:200],
        with_reference=with_reference,
        reference_player=(reference_player or importers.OFFICIAL_REFERENCE_PLAYER)[:200],
        source=JudgmentSet.Source.IMPORTED,
        status=JudgmentSet.Status.SUCCEEDED,
        seed=seed,
        bootstrap_seed=bootstrap_seed,
        provenance={
            **(provenance or {}),
            "duplicates_dropped": parsed.duplicates,
            **({"votes": parsed.votes} if kind == JudgmentSet.Kind.HUMAN else {}),
        },
        pair_count=len(matched),
        created_by=created_by,
        job=job,
    )
    PairJudgment.objects.bulk_create(
        [
            PairJudgment(
                judgment_set=judgment_set,
                item=item,
                position=k,
                model_a=row.model_a,
                model_b=row.model_b,
                pair_key=row.pair_key,
                response_a=row.response_a,
                response_b=row.response_b,
                order_winners=row.order_winners,
                outputs=row.outputs,
                votes_a=row.votes_a,
                votes_b=row.votes_b,
                winner=row.winner,
            )
            for k, (row, item) in enumerate(matched)
        ],
        batch_size=1000,
    )
    return judgment_set


def judgment_set_create(
    *,
    version: BenchmarkVersion,
    label: str,
    judge: str,
    with_reference: bool = False,
    reference_player: str = importers.OFFICIAL_REFERENCE_PLAYER,
    provenance: dict | None = None,
    created_by=None,
    job=None,
) -> JudgmentSet:
    """An empty LLM-judge set that a judge runner fills pair by pair with `judgment_record`
    (prompt templates, provider and seed go into `provenance`)."""
    _require_visit(version)
    label = _check_set_label(version, label)
    return JudgmentSet.objects.create(
        version=version,
        kind=JudgmentSet.Kind.LLM,
        label=label,
        judge=judge[:200],
        with_reference=with_reference,
        reference_player=reference_player,
        source=JudgmentSet.Source.RUNNER,
        status=JudgmentSet.Status.PENDING,
        provenance=provenance or {},
        created_by=created_by,
        job=job,
    )


@transaction.atomic
def judgment_record(
    *,
    judgment_set: JudgmentSet,
    item: BenchmarkItem,
    model_a: str,
    model_b: str,
    response_a: str,
    response_b: str,
    outputs: Sequence[dict],
) -> PairJudgment:
    """Store one pair judged in both orders from the judge's own outputs (App. F).

    `outputs` holds one dict per order: shown_a and shown_b (the models presented as Response A
    and B), judge_output, extraction_output (the reply of the extraction call, None when the
    judge output already named a winner) and optionally generation_id. The winner of each order
    is parsed here, so runners and imports agree. Idempotent per (set, instance, unordered pair):
    a re-run leaves judged pairs as they are and fills the missing ones.
    """
    if item.version_id != judgment_set.version_id:
        raise Invalid("The instance belongs to another version.")
    if model_a == model_b:
        raise Invalid(f"A model cannot be judged against itself ({model_a!r}).")
    if len(outputs) != 2:
        raise Invalid("A pair is judged in both orders: give two outputs.")
    for output in outputs:
        if {output.get("shown_a"), output.get("shown_b")} != {model_a, model_b}:
            raise Invalid("Each order must show the two models of the pair.")
    locked = JudgmentSet.objects.select_for_update().get(pk=judgment_set.pk)
    key = importers.pair_key(model_a, model_b)
    existing = PairJudgment.objects.filter(judgment_set=locked, item=item, pair_key=key).first()
    if existing is not None:
        return existing
    winners = [
        visit.order_winner(
            o.get("judge_output") or "",
            o["shown_a"],
            o["shown_b"],
            extraction_output=o.get("extraction_output"),
        )
        for o in outputs
    ]
    judgment = PairJudgment.objects.create(
        judgment_set=locked,
        item=item,
        position=locked.pair_count,
        model_a=model_a,
        model_b=model_b,
        pair_key=key,
        response_a=response_a,
        response_b=response_b,
        order_winners=winners,
        outputs=[dict(o) for o in outputs],
        winner=visit.aggregate_two_orders(winners[0], winners[1]),
    )
    JudgmentSet.objects.filter(pk=locked.pk).update(pair_count=locked.pair_count + 1)
    return judgment


def judgment_set_finish(
    *, judgment_set: JudgmentSet, failed: bool = False, error: str = ""
) -> JudgmentSet:
    """Mark a runner's set finished (it then counts in `judgments_compute`) or failed."""
    status = JudgmentSet.Status.FAILED if failed else JudgmentSet.Status.SUCCEEDED
    provenance = {**(judgment_set.provenance or {}), **({"error": error} if error else {})}
    JudgmentSet.objects.filter(pk=judgment_set.pk).update(status=status, provenance=provenance)
    judgment_set.refresh_from_db()
    return judgment_set


def _pairs_of(judgment_set: JudgmentSet, items: dict[int, BenchmarkItem]) -> list:
    pairs = []
    for row in judgment_set.judgments.order_by("position").values_list(
        "item_id",
        "model_a",
        "model_b",
        "winner",
        "response_a",
        "response_b",
        "votes_a",
        "votes_b",
    ):
        item = items[row[0]]
        pairs.append(
            pairwise.PairData(
                item_id=item.item_id,
                image=item.data.get("image", ""),
                instruction=item.data.get("instruction", ""),
                model_a=row[1],
                model_b=row[2],
                winner=row[3],
                response_a=row[4],
                response_b=row[5],
                votes_a=row[6],
                votes_b=row[7],
                reference=item.data.get("reference", ""),
            )
        )
    return pairs


def _player_runs(version: BenchmarkVersion) -> dict[str, ModelRun]:
    """Players named like a run's model or its output column (the official files' names)."""
    by_name: dict[str, ModelRun] = {}
    for run in version.runs.select_related("model").order_by("id"):
        for name in (run.model.name, (run.prompt_settings or {}).get("output_column")):
            if name:
                by_name.setdefault(name, run)
    return by_name


def judgments_compute(
    *, version: BenchmarkVersion, rounds: int = 1000, text_metrics: bool = True, progress=None
) -> dict:
    """Ratings of every finished judgment set of the version and, for crowd sets, the agreement
    of every judge set and text metric with the crowd majority. Returns {set id: results}."""
    _require_visit(version)
    sets = list(version.judgment_sets.filter(status=JudgmentSet.Status.SUCCEEDED))
    items = {i.pk: i for i in version.items.only("id", "item_id", "data")}
    runs = _player_runs(version)
    pairs = {s.pk: _pairs_of(s, items) for s in sets}
    judges = {s.label: pairs[s.pk] for s in sets if s.kind == JudgmentSet.Kind.LLM}
    out = {}
    for k, judgment_set in enumerate(sets, start=1):
        if progress:
            progress(k - 1, len(sets), f"Rating {judgment_set.label}")
        results = pairwise.set_results(
            pairs[judgment_set.pk],
            kind=judgment_set.kind,
            reference_player=judgment_set.reference_player,
            seed=judgment_set.seed,
            bootstrap_seed=judgment_set.bootstrap_seed,
            rounds=rounds,
        )
        for player in results["players"]:
            run = runs.get(player["player"])
            player["run_id"] = run.pk if run else None
            player["model"] = run.model.name if run else player["player"]
        if judgment_set.kind == JudgmentSet.Kind.HUMAN:
            results["agreement"] = pairwise.agreement_results(
                pairs[judgment_set.pk],
                reference_player=judgment_set.reference_player,
                judges=judges,
                text_metrics=text_metrics,
                seed=judgment_set.bootstrap_seed,
                rounds=rounds,
            )
        out[judgment_set.pk] = results
    with transaction.atomic():
        now = timezone.now()
        for judgment_set in sets:
            JudgmentSet.objects.filter(pk=judgment_set.pk).update(
                results=out[judgment_set.pk],
                results_computed_at=now,
                code_version=pairwise.CODE_VERSION,
            )
    if progress:
        progress(len(sets), len(sets), "Stored")
    return out


def judgments_import_start(
    *,
    version: BenchmarkVersion,
    kind: str,
    label: str,
    judge: str,
    with_reference: bool,
    reference_player: str,
    aliases: str,
    content: str,
    filename: str,
    created_by=None,
) -> tuple[Job, int]:
    """Validate a judgment file against the version now (line-numbered errors), then import it
    and compute the ratings in a job."""
    _require_visit(version)
    _check_set_label(version, label)
    renames = importers.parse_aliases(aliases)
    parsed = importers.parse_judgments(kind, content, filename, aliases=renames)
    _match_judgments(version, parsed)
    params = {
        "target": "judgments",
        "version_id": version.pk,
        "kind": kind,
        "label": label.strip(),
        "judge": judge,
        "with_reference": with_reference,
        "reference_player": reference_player,
        "aliases": renames,
        "filename": filename,
    }
    job = import_enqueue(
        params=params, content=content, created_by=created_by, project=version.benchmark.project
    )
    return job, len(parsed.rows)


def _judgments_import_run(params: dict, *, created_by=None, job=None) -> dict:
    version = BenchmarkVersion.objects.select_related("benchmark").get(pk=params["version_id"])
    kind = params["kind"]
    parsed = importers.parse_judgments(
        kind, _content(params), params.get("filename", ""), aliases=params.get("aliases") or {}
    )
    with_reference = parsed.with_reference
    if with_reference is None:
        with_reference = bool(params.get("with_reference", False))
    judgment_set = judgment_set_import(
        version=version,
        kind=kind,
        label=params["label"],
        parsed=parsed,
        judge=params.get("judge")
        or (parsed.engines[0] if parsed.engines else "")
        or ("crowd" if kind == JudgmentSet.Kind.HUMAN else ""),
        with_reference=with_reference,
        reference_player=params.get("reference_player") or importers.OFFICIAL_REFERENCE_PLAYER,
        provenance={
            "source_file": params.get("filename", ""),
            "aliases": params.get("aliases") or {},
            "engines": parsed.engines,
        },
        created_by=created_by,
        job=job,
    )
    result: dict[str, Any] = {"judgment_set_id": judgment_set.pk, "pairs": judgment_set.pair_count}
    if params.get("compute", True):
        judgments_compute(
            version=version,
            rounds=int(params.get("rounds", 1000)),
            text_metrics=bool(params.get("text_metrics", True)),
        )
        result["computed"] = True
    return result


def judgments_compute_enqueue(*, version: BenchmarkVersion, created_by=None):
    _require_visit(version)
    if not version.judgment_sets.exists():
        raise Conflict("Import judgments first: there is nothing to rate.")
    return job_enqueue(
        kind=JUDGMENTS_JOB,
        params={"version_id": version.pk},
        created_by=created_by,
        project=version.benchmark.project,
        total=1,
    )
