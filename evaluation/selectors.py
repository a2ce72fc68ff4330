"""Reads for evaluation pages, endpoints and the CLI, scoped to the person's projects.

Every benchmark belongs to a project, and so do its versions, runs, predictions, metrics and
judgment sets. A person reaches them only through the projects they are a member of (admins reach
every project), and only with a role that may do what they ask:

- ``READ``: curators and researchers read benchmarks, leaderboards, runs and judgments;
- ``EVALUATE``: curators and researchers run models and judges, import runs and judgments,
  compute metrics and download leaderboards;
- ``CURATE``: curators alone import benchmarks, add and publish versions.

Anything else answers 404, exactly like a missing object. These functions also shape the queries
so pages stay N+1 free.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from django.db.models import Count, Prefetch, Q, QuerySet
from django.http import Http404

from annotator.platform import roles
from annotator.platform.models import Project
from annotator.platform.scoping import get_or_404, projects_for
from curation.gateway.selectors import provider_choices_for
from curation.models import LLMProvider

from .compute import ItemData, ReferenceRow
from .models import (
    Benchmark,
    BenchmarkItem,
    BenchmarkVersion,
    JudgmentSet,
    MetricResult,
    ModelRun,
)
from .rankings import Ranking
from .registry import Family, family_of

READ = (roles.CURATOR, roles.RESEARCHER)
EVALUATE = (roles.CURATOR, roles.RESEARCHER)
CURATE = (roles.CURATOR,)


def _reach(user, allowed: Iterable[str]) -> QuerySet[Project]:
    """The projects whose evaluation data ``user`` may use with one of the ``allowed`` roles."""
    if not roles.has_role(user, allowed):
        return Project.objects.none()
    return projects_for(user)


def can(user, allowed: Iterable[str]) -> bool:
    """Whether the person's role allows an action (on objects they already reach)."""
    return roles.has_role(user, allowed)


def providers_for(user, project: Project) -> QuerySet[LLMProvider]:
    """LLM providers the person may spend on ``project``'s evaluation: the shared ones and the
    project's own (another project's endpoint and budget stay with that project)."""
    return provider_choices_for(user).filter(Q(project__isnull=True) | Q(project=project))


def curated_projects(user) -> QuerySet[Project]:
    """Projects a benchmark may be imported into by ``user``."""
    return _reach(user, CURATE).order_by("name", "id")


def benchmarks_visible(user) -> QuerySet[Benchmark]:
    return (
        Benchmark.objects.filter(project__in=_reach(user, READ))
        .select_related("project")
        .prefetch_related(
            Prefetch(
                "versions",
                queryset=BenchmarkVersion.objects.annotate(run_count=Count("runs")).order_by(
                    "-created_at", "-id"
                ),
            )
        )
    )


def versions_visible(user, allowed: Iterable[str] = READ) -> QuerySet[BenchmarkVersion]:
    return (
        BenchmarkVersion.objects.filter(benchmark__project__in=_reach(user, allowed))
        .select_related("benchmark__project")
        .annotate(run_count=Count("runs"))
    )


def version_for_user_or_404(
    user, pk: int, *, allowed: Iterable[str] = READ, family: str = ""
) -> BenchmarkVersion:
    """A version in the person's projects that their role lets them use for this action;
    ``family`` narrows to one benchmark family's versions."""
    version = get_or_404(versions_visible(user, allowed), pk=pk)
    if family and version.benchmark.family != family:
        raise Http404
    return version


def runs_visible(user, allowed: Iterable[str] = READ) -> QuerySet[ModelRun]:
    return ModelRun.objects.filter(version__benchmark__project__in=_reach(user, allowed))


def run_for_user_or_404(user, pk: int, *, allowed: Iterable[str] = READ) -> ModelRun:
    return get_or_404(
        runs_visible(user, allowed)
        .select_related("model", "version__benchmark__project", "job")
        .prefetch_related("metric_results"),
        pk=pk,
    )


def version_items(version: BenchmarkVersion) -> QuerySet[BenchmarkItem]:
    return version.items.order_by("position")


def runs_list(version: BenchmarkVersion) -> QuerySet[ModelRun]:
    """The runs of a version the caller has already reached."""
    return (
        ModelRun.objects.filter(version=version)
        .select_related("model", "version__benchmark", "job")
        .prefetch_related("metric_results")
    )


def metric_results(run: ModelRun) -> QuerySet[MetricResult]:
    return MetricResult.objects.select_related("run__model", "run__version").filter(run=run)


def _reference_rows(version: BenchmarkVersion, declared: Family) -> Sequence[ReferenceRow]:
    """The family's reference rows, computed from the version's kept items when they depend
    on them (e.g. chance under the version's label balance)."""
    if declared.reference_rows_of is None:
        return declared.reference_rows
    items = [
        ItemData(item_id, data, kept)
        for item_id, data, kept in version.items.filter(kept=True)
        .order_by("position")
        .values_list("item_id", "data", "kept")
    ]
    return declared.reference_rows_of(items)


def leaderboard(version: BenchmarkVersion, *, sort: str = "", descending: bool = True) -> dict:
    """Rows (one per run with metrics) and columns for a version's leaderboard."""
    family = version.benchmark.family
    declared = family_of(family)
    specs = [s for s in declared.specs if s.headline]
    extra = [s for s in declared.specs if not s.headline]
    keys = {s.key for s in specs}
    if sort not in keys:
        sort = declared.primary
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
        for ref in _reference_rows(version, declared)
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
    specs = family_of(board["family"]).spec_map()
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
) -> list[Ranking]:
    """Every ranking of the version's systems: each leaderboard metric over runs (by model name)
    and, with pairwise judgments, each judgment set's Elo, online Elo, Bradley–Terry and win-rate
    vs the reference over its players (a player matched to a run is named like the run's model)."""
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
            out.append(Ranking(f"metric:{spec.key}", str(spec.label), values, kind=spec.kind))
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
                    Ranking(
                        f"set:{judgment_set.pk}:{field}",
                        f"{judgment_set.label} · {name}",
                        values,
                        kind="share" if field == "win_rate" else "rating",
                    )
                )
    return out
