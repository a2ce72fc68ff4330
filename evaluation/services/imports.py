"""Imports of benchmark files, predictions and judgments: validated synchronously at the edge
(line-numbered errors, nothing written), then written all-or-nothing in a job."""

from __future__ import annotations

import uuid
from typing import Any

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from annotator.platform.errors import NotFound
from annotator.platform.jobs import job_enqueue
from annotator.platform.models import Job, Project
from evaluation import importers
from evaluation.models import BenchmarkVersion, JudgmentSet
from evaluation.registry import family_of

from .benchmarks import benchmark_version_create
from .judgments import (
    check_set_label,
    judgment_set_import,
    judgments_compute,
    match_judgments,
    require_pairwise,
)
from .runs import metrics_compute, predictions_validate, run_import

IMPORT_JOB = "evaluation.import_file"


def import_validate(
    *,
    target: str,
    family: str,
    content: str,
    filename: str = "",
    version: BenchmarkVersion | None = None,
    option: str = "",
    skip_unmatched: bool = False,
) -> int:
    """Synchronous validation at the edge; raises Invalid with line errors. Returns the number
    of rows that will be imported (with ``skip_unmatched``, those that match an item)."""
    if target == "items":
        return len(importers.parse_items(family, content, filename))
    if version is None:
        raise NotFound("Choose a benchmark version for the predictions.")
    rows = importers.parse_predictions(family, content, filename, option=option)
    return len(predictions_validate(version=version, rows=rows, skip_unmatched=skip_unmatched).rows)


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
    skip_unmatched: bool = False,
    created_by=None,
) -> tuple[Job, int]:
    """Validate predictions against a version now, then import and score them in a job.
    ``skip_unmatched``: tolerant matching (rows that match no item skipped, counted)."""
    family = version.benchmark.family
    n = import_validate(
        target="predictions",
        family=family,
        content=content,
        filename=filename,
        version=version,
        option=option,
        skip_unmatched=skip_unmatched,
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
        "skip_unmatched": bool(skip_unmatched),
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
    option = family_of(version.benchmark.family).prediction_option
    if option is not None and option.setting:
        given = params.get("option", "")
        prompt_settings[option.setting] = given or (option.detect(content) if option.detect else "")
    run = run_import(
        version=version,
        model_name=params["model"],
        rows=rows,
        label=params.get("label", ""),
        provider=params.get("provider", ""),
        seed=int(params.get("seed", 0)),
        skip_unmatched=bool(params.get("skip_unmatched", False)),
        prompt_settings=prompt_settings,
        created_by=created_by,
        job=job,
    )
    result: dict[str, Any] = {"run_id": run.pk, "predictions": run.prediction_count}
    if params.get("skip_unmatched"):
        result.update(run.prompt_settings["unmatched"])
    if params.get("compute", True):
        metrics_compute(run=run, rounds=int(params.get("rounds", 1000)))
        result["metrics"] = True
    return result


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
    require_pairwise(version)
    check_set_label(version, label)
    renames = importers.parse_aliases(aliases)
    parsed = importers.parse_judgments(
        version.benchmark.family, kind, content, filename, aliases=renames
    )
    match_judgments(version, parsed)
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
        version.benchmark.family,
        kind,
        _content(params),
        params.get("filename", ""),
        aliases=params.get("aliases") or {},
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
        reference_player=params.get("reference_player") or "",
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
