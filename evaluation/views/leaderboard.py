"""A version's leaderboard (page, CSV, JSON) with the family's plots, and the comparison of two
rankings of its systems (Spearman's ρ)."""

from __future__ import annotations

import csv
import io

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.translation import gettext as _

from annotator.platform import roles

from .. import compute, plots, selectors
from ..models import BenchmarkVersion
from ..rankings import correlate
from ..registry import family_of
from ..runners import STANDIN_NOTE
from .common import EVALUATE, READ, abilities


@roles.roles_required(*READ)
def leaderboard(request: HttpRequest, version_id: int) -> HttpResponse:
    fmt = request.GET.get("format")
    download = fmt in ("csv", "json")
    version = selectors.version_for_user_or_404(
        request.user, version_id, allowed=EVALUATE if download else READ
    )
    board = selectors.leaderboard(
        version, sort=request.GET.get("sort", ""), descending=request.GET.get("dir") != "asc"
    )
    if fmt == "csv":
        return leaderboard_csv(version, board)
    if fmt == "json":
        return JsonResponse(leaderboard_json(version, board), json_dumps_params={"indent": 2})
    family = family_of(version.benchmark.family)
    return render(
        request,
        "evaluation/leaderboard.html",
        {
            "heading": _("Leaderboard"),
            "version": version,
            "board": board,
            "plots": family.plots(board) if family.plots else [],
            "tables": selectors.breakdowns(board),
            "family": family,
            "pairwise": family.pairwise is not None,
            "judgment_count": version.judgment_sets.count() if family.pairwise else 0,
            "standin_note": STANDIN_NOTE if _has_standins(board) else "",
            **abilities(request),
        },
    )


def _has_standins(board: dict) -> bool:
    return any((row["run"].prompt_settings or {}).get("standin") for row in board["rows"])


def leaderboard_json(version: BenchmarkVersion, board: dict) -> dict:
    return {
        "benchmark": version.benchmark.name,
        "family": version.benchmark.family,
        "version": version.label,
        "version_id": version.pk,
        "items": version.item_count,
        "kept": version.kept_count,
        "code_version": compute.CODE_VERSION,
        "reference_rows": [
            {
                "label": ref["label"],
                "note": ref["note"],
                "metrics": {spec.key: cell["value"] for spec, cell in ref["cells"] if cell},
            }
            for ref in board["references"]
        ],
        "rows": [
            {
                "rank": row["rank"],
                "run_id": row["run"].pk,
                "model": row["run"].model.name,
                "label": row["run"].label,
                "metrics": {
                    name: {
                        "value": m.value,
                        "low": m.interval_low,
                        "high": m.interval_high,
                        "n": m.n,
                        "details": m.details,
                    }
                    for name, m in sorted(row["results"].items())
                },
            }
            for row in board["rows"]
        ],
    }


def leaderboard_csv(version: BenchmarkVersion, board: dict) -> HttpResponse:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    columns = board["columns"] + board["extra_columns"]
    header = ["rank", "model", "run_label"]
    for spec in columns:
        header += [spec.key, f"{spec.key}_low", f"{spec.key}_high", f"{spec.key}_n"]
    writer.writerow(header)
    for row in board["rows"]:
        line = [row["rank"] or "", row["run"].model.name, row["run"].label]
        for spec in columns:
            m = row["results"].get(spec.key)
            line += [
                "" if not m or m.value is None else m.value,
                "" if not m or m.interval_low is None else m.interval_low,
                "" if not m or m.interval_high is None else m.interval_high,
                m.n if m else "",
            ]
        writer.writerow(line)
    response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    name = f"{version.benchmark.name}-{version.label}-leaderboard.csv".replace(" ", "_")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def _default_pair(options: list) -> tuple[str, str]:
    """The paper's system-level check when there is one: crowd Elo vs an LLM judge's Elo."""
    elo = [r.key for r in options if r.key.startswith("set:") and r.key.endswith(":elo")]
    if len(elo) >= 2:
        return elo[0], elo[1]
    keys = [r.key for r in options]
    return (keys[0], keys[1]) if len(keys) >= 2 else ("", "")


@roles.roles_required(*READ)
def rankings(request: HttpRequest, version_id: int) -> HttpResponse:
    """Spearman ρ between two rankings of the version's systems (how a judge is checked)."""
    version = selectors.version_for_user_or_404(request.user, version_id)
    family = family_of(version.benchmark.family)
    pairwise = family.pairwise is not None
    sets = list(selectors.judgment_sets(version)) if pairwise else []
    options = selectors.rankings(version, sets=sets)
    by_key = {r.key: r for r in options}
    default_a, default_b = _default_pair(options)
    key_a = request.GET.get("a") or default_a
    key_b = request.GET.get("b") or default_b
    unknown = [k for k in (key_a, key_b) if k and k not in by_key]
    result = None
    if key_a in by_key and key_b in by_key:
        result = correlate(by_key[key_a], by_key[key_b])
    if request.GET.get("format") == "json":
        if result is None:
            return JsonResponse(
                {"detail": "Choose two rankings.", "rankings": [r.key for r in options]},
                status=400,
            )
        return JsonResponse({"a": key_a, "b": key_b, **result}, json_dumps_params={"indent": 2})
    context = {
        "heading": _("Compare rankings"),
        "version": version,
        "family": family,
        "pairwise": pairwise,
        "options": options,
        "key_a": key_a,
        "key_b": key_b,
        "result": result,
        "unknown": unknown,
        "plot": _rank_plot(result) if result and result["rows"] else "",
    }
    template = "evaluation/_rank_result.html" if request.htmx else "evaluation/rankings.html"
    return render(request, template, context, status=400 if unknown else 200)


def _rank_plot(result: dict) -> str:
    return plots.rank_chart(
        [(row["system"], row["rank_a"], row["rank_b"]) for row in result["rows"]],
        title=_("Rank under each ranking (1 = best)"),
        x_label=result["a"],
        y_label=result["b"],
    )
