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


class BenchmarkListApi(GenericAPIView):
    roles = READ
    permission_classes = [RolePermission]
    serializer_class = EvalBenchmarkOut

    @extend_schema(responses={200: EvalBenchmarkOut(many=True), **ERRORS})
    def get(self, request):
        return Response(
            EvalBenchmarkOut(selectors.benchmarks_visible(request.user), many=True).data
        )


class VersionDetailApi(GenericAPIView):
    roles = READ
    permission_classes = [RolePermission]
    serializer_class = EvalVersionOut

    @extend_schema(responses={200: EvalVersionOut, **ERRORS})
    def get(self, request, version_id: int):
        return Response(
            EvalVersionOut(selectors.version_for_user_or_404(request.user, version_id)).data
        )


class VersionRunsApi(GenericAPIView):
    roles = READ
    permission_classes = [RolePermission]
    serializer_class = EvalRunOut

    @extend_schema(responses={200: EvalRunOut(many=True), **ERRORS})
    def get(self, request, version_id: int):
        version = selectors.version_for_user_or_404(request.user, version_id)
        return Response(EvalRunOut(selectors.runs_list(version).order_by("id"), many=True).data)


class RunDetailApi(GenericAPIView):
    roles = READ
    permission_classes = [RolePermission]
    serializer_class = EvalRunOut

    @extend_schema(responses={200: EvalRunOut, **ERRORS})
    def get(self, request, run_id: int):
        return Response(EvalRunOut(selectors.run_for_user_or_404(request.user, run_id)).data)


class RunMetricsApi(GenericAPIView):
    roles = READ
    permission_classes = [RolePermission]
    serializer_class = EvalMetricOut

    @extend_schema(responses={200: EvalMetricOut(many=True), **ERRORS})
    def get(self, request, run_id: int):
        run = selectors.run_for_user_or_404(request.user, run_id)
        return Response(EvalMetricOut(selectors.metric_results(run), many=True).data)


class JudgmentSetsApi(GenericAPIView):
    roles = READ
    permission_classes = [RolePermission]
    serializer_class = EvalJudgmentSetOut

    @extend_schema(responses={200: EvalJudgmentSetOut(many=True), **ERRORS})
    def get(self, request, version_id: int):
        version = selectors.version_for_user_or_404(request.user, version_id)
        return Response(EvalJudgmentSetOut(selectors.judgment_sets(version), many=True).data)


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
        version = selectors.version_for_user_or_404(request.user, version_id)
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
