"""Read endpoints: benchmarks, versions, runs, metrics, judgment sets and rankings."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.generics import GenericAPIView
from rest_framework.response import Response

from annotator.platform.roles import RolePermission

from .. import selectors
from ..rankings import correlate
from .serializers import (
    ERRORS,
    READ,
    EvalBenchmarkOut,
    EvalJudgmentSetOut,
    EvalMetricOut,
    EvalRunOut,
    EvalVersionOut,
    RankCorrelationOut,
    RankingOut,
)


def _read_api(name: str, serializer, found, *, many: bool = False) -> type[GenericAPIView]:
    """A GET endpoint of the READ roles: ``found(user, **the URL's ids)`` shown by
    ``serializer`` (``many`` for a list)."""

    @extend_schema(responses={200: serializer(many=many), **ERRORS})
    def get(self, request, **ids):
        return Response(serializer(found(request.user, **ids), many=many).data)

    attrs = {
        "__module__": __name__,
        "roles": READ,
        "permission_classes": [RolePermission],
        "serializer_class": serializer,
        "get": get,
    }
    return type(name, (GenericAPIView,), attrs)


def _version(user, version_id: int):
    return selectors.version_for_user_or_404(user, version_id)


def _run(user, run_id: int):
    return selectors.run_for_user_or_404(user, run_id)


BenchmarkListApi = _read_api(
    "BenchmarkListApi", EvalBenchmarkOut, selectors.benchmarks_visible, many=True
)
VersionDetailApi = _read_api("VersionDetailApi", EvalVersionOut, _version)
VersionRunsApi = _read_api(
    "VersionRunsApi",
    EvalRunOut,
    lambda user, version_id: selectors.runs_list(_version(user, version_id)).order_by("id"),
    many=True,
)
RunDetailApi = _read_api("RunDetailApi", EvalRunOut, _run)
RunMetricsApi = _read_api(
    "RunMetricsApi",
    EvalMetricOut,
    lambda user, run_id: selectors.metric_results(_run(user, run_id)),
    many=True,
)
JudgmentSetsApi = _read_api(
    "JudgmentSetsApi",
    EvalJudgmentSetOut,
    lambda user, version_id: selectors.judgment_sets(_version(user, version_id)),
    many=True,
)


class RankingsApi(GenericAPIView):
    """The rankings of a version's systems, and Spearman ρ between two of them (?a=…&b=…)."""

    roles = READ
    permission_classes = [RolePermission]
    serializer_class = RankCorrelationOut

    @extend_schema(
        parameters=[
            OpenApiParameter("a", str, description="key of ranking A (omit both to list keys)"),
            OpenApiParameter("b", str, description="key of ranking B"),
        ],
        responses={200: RankCorrelationOut, **ERRORS},
    )
    def get(self, request, version_id: int):
        version = _version(request.user, version_id)
        options = {r.key: r for r in selectors.rankings(version)}
        key_a, key_b = request.query_params.get("a"), request.query_params.get("b")
        if not key_a and not key_b:
            return Response(
                RankingOut(
                    [
                        {"key": r.key, "label": r.label, "systems": len(r.values)}
                        for r in options.values()
                    ],
                    many=True,
                ).data
            )
        unknown = [k for k in (key_a, key_b) if k not in options]
        if unknown:
            raise serializers.ValidationError(
                {"detail": f"unknown ranking: {', '.join(map(str, unknown))}"}
            )
        result = correlate(options[key_a], options[key_b])
        return Response(RankCorrelationOut(result).data)
