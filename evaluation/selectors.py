"""Reads for evaluation pages and endpoints. Benchmarks are readable by curators, researchers and
admins (the views check roles); these functions shape the queries so pages stay N+1 free."""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Count, Prefetch, QuerySet
from django.shortcuts import get_object_or_404

from . import compute, pairwise
from .models import (
    Benchmark,
    BenchmarkItem,
    BenchmarkVersion,
    JudgmentSet,
    MetricResult,
    ModelRun,
)


def benchmarks_list() -> QuerySet[Benchmark]:
    return Benchmark.objects.select_related("project").prefetch_related(
        Prefetch(
            "versions",
            queryset=BenchmarkVersion.objects.annotate(run_count=Count("runs")).order_by(
                "-created_at", "-id"
            ),
        )
    )


def benchmark_get(pk: int) -> Benchmark:
    return get_object_or_404(benchmarks_list(), pk=pk)


def versions_list() -> QuerySet[BenchmarkVersion]:
    return BenchmarkVersion.objects.select_related("benchmark").annotate(run_count=Count("runs"))


def version_get(pk: int) -> BenchmarkVersion:
    return get_object_or_404(versions_list(), pk=pk)


def version_items(version: BenchmarkVersion) -> QuerySet[BenchmarkItem]:
    return version.items.order_by("position")


def runs_list(version: BenchmarkVersion | None = None) -> QuerySet[ModelRun]:
    runs = ModelRun.objects.select_related("model", "version__benchmark", "job")
    if version is not None:
        runs = runs.filter(version=version)
    return runs.prefetch_related("metric_results")


def run_get(pk: int) -> ModelRun:
    return get_object_or_404(runs_list(), pk=pk)


def metric_results(run: ModelRun | None = None) -> QuerySet[MetricResult]:
    results = MetricResult.objects.select_related("run__model", "run__version")
    return results.filter(run=run) if run is not None else results


def leaderboard(version: BenchmarkVersion, *, sort: str = "", descending: bool = True) -> dict:
    """Rows (one per run with metrics) and columns for a version's leaderboard."""
    family = version.benchmark.family
    specs = [s for s in compute.SPECS.get(family, []) if s.headline]
    extra = [s for s in compute.SPECS.get(family, []) if not s.headline]
    keys = {s.key for s in specs}
    if sort not in keys:
        sort = compute.PRIMARY.get(family, "")
        descending = True
    rows = []
    for run in runs_list(version).order_by("id"):
        results = {m.metric: m for m in run.metric_results.all()}
        rows.append({"run": run, "results": results, "computed": bool(results)})
    with_value = [
        r for r in rows if r["results"].get(sort) and r["results"][sort].value is not None
    ]
    without = [r for r in rows if r not in with_value]
    with_value.sort(key=lambda r: r["results"][sort].value, reverse=descending)
    ordered = with_value + without
    for rank, row in enumerate(ordered, start=1):
        row["rank"] = rank if row in with_value else None
        row["cells"] = [(s, row["results"].get(s.key)) for s in specs]
    used_extra = [s for s in extra if any(r["results"].get(s.key) for r in ordered)]
    for row in ordered:
        row["extra_cells"] = [(s, row["results"].get(s.key)) for s in used_extra]
    references = [
        {
            "label": ref.label,
            "note": ref.note,
            "cells": [
                (s, {"value": ref.values[s.key]} if s.key in ref.values else None) for s in specs
            ],
        }
        for ref in compute.REFERENCE_ROWS.get(family, [])
    ]
    return {
        "family": family,
        "columns": specs,
        "extra_columns": used_extra,
        "rows": ordered,
        "references": references,
        "sort": sort,
        "descending": descending,
    }


def breakdowns(board: dict) -> list[dict]:
    """Tables per (metric, dimension): rows = runs, columns = groups (skill, concept …)."""
    tables: dict[tuple[str, str], dict] = {}
    specs = compute.spec_map(board["family"])
    for row in board["rows"]:
        for metric, result in row["results"].items():
            for dimension, groups in (result.breakdown or {}).items():
                key = (metric, dimension)
                table = tables.setdefault(
                    key,
                    {
                        "metric": metric,
                        "spec": specs.get(metric),
                        "dimension": dimension,
                        "groups": [],
                        "rows": [],
                    },
                )
                for group in groups:
                    if group not in table["groups"]:
                        table["groups"].append(group)
                table["rows"].append({"run": row["run"], "cells": groups})
    out = []
    for table in tables.values():
        table["groups"].sort()
        table["by_group"] = [
            (g, [row["cells"].get(g) for row in table["rows"]]) for g in table["groups"]
        ]
        out.append(table)
    order = defaultdict(lambda: 99, {s.key: k for k, s in enumerate(specs.values())})
    out.sort(key=lambda t: (order[t["metric"]], t["dimension"]))
    return out


def judgment_sets(version: BenchmarkVersion) -> QuerySet[JudgmentSet]:
    return version.judgment_sets.select_related("job").order_by("kind", "id")


def _system(run: ModelRun) -> str:
    return run.model.name + (f" ({run.label})" if run.label else "")


def rankings(
    version: BenchmarkVersion, board: dict | None = None, sets: list[JudgmentSet] | None = None
) -> list[pairwise.Ranking]:
    """Every ranking of the version's systems: each leaderboard metric over runs (by model name)
    and, on VisIT-Bench, each judgment set's Elo, online Elo, Bradley–Terry and win-rate vs the
    reference over its players (a player matched to a run is named like the run's model)."""
    board = board if board is not None else leaderboard(version)
    specs = board["columns"] + board["extra_columns"]
    out = []
    for spec in specs:
        values = {
            _system(row["run"]): row["results"][spec.key].value
            for row in board["rows"]
            if row["results"].get(spec.key) and row["results"][spec.key].value is not None
        }
        if values:
            out.append(
                pairwise.Ranking(f"metric:{spec.key}", str(spec.label), values, kind=spec.kind)
            )
    sets = sets if sets is not None else list(judgment_sets(version))
    for judgment_set in sets:
        players = (judgment_set.results or {}).get("players") or []
        for field, name in (
            ("elo", "Elo"),
            ("online", "online Elo"),
            ("bt", "Bradley–Terry"),
            ("win_rate", "win-rate vs reference"),
        ):
            values = {}
            for p in players:
                value = p.get(field)
                if field == "win_rate":
                    value = (value or {}).get("value")
                if value is not None:
                    values[p.get("model") or p["player"]] = float(value)
            if values:
                out.append(
                    pairwise.Ranking(
                        f"set:{judgment_set.pk}:{field}",
                        f"{judgment_set.label} · {name}",
                        values,
                        kind="share" if field == "win_rate" else "rating",
                    )
                )
    return out
