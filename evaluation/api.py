"""JSON API of the evaluation app, mounted at /api/eval/. Everything is reached through the
caller's projects (``evaluation.selectors``): curators and researchers read and evaluate (run,
judge, import runs and judgments, compute); curators alone import benchmark versions. One view
per operation; refusals answer like missing objects (404)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.generics import GenericAPIView
from rest_framework.response import Response

from annotator.platform.api import ErrorOut
from annotator.platform.edge import FormParser, JSONParser, MultiPartParser
from annotator.platform.errors import Invalid, NotFound
from annotator.platform.roles import RolePermission
from curation.gateway.providers import provider_for
from curation.models import Scorer

from . import pairwise, runners, selectors, services
from .models import Benchmark, BenchmarkVersion, Family, JudgmentSet, MetricResult, ModelRun

READ, EVALUATE, CURATE = selectors.READ, selectors.EVALUATE, selectors.CURATE
ERRORS = {
    400: OpenApiResponse(ErrorOut, description="Invalid input (line-numbered errors)"),
    401: OpenApiResponse(ErrorOut, description="Not signed in"),
    404: OpenApiResponse(ErrorOut, description="Missing or outside your reach"),
}


class EvalVersionOut(serializers.ModelSerializer):
    benchmark = serializers.CharField(source="benchmark.name")
    family = serializers.CharField(source="benchmark.family")

    class Meta:
        model = BenchmarkVersion
        fields = [
            "id",
            "benchmark",
            "family",
            "label",
            "frozen",
            "published_at",
            "item_count",
            "kept_count",
            "created_at",
        ]


class EvalBenchmarkOut(serializers.ModelSerializer):
    versions = EvalVersionOut(many=True, read_only=True)

    class Meta:
        model = Benchmark
        fields = ["id", "family", "name", "description", "project", "versions"]


class EvalMetricOut(serializers.ModelSerializer):
    class Meta:
        model = MetricResult
        fields = [
            "metric",
            "value",
            "interval_low",
            "interval_high",
            "n",
            "breakdown",
            "details",
            "code_version",
            "computed_at",
        ]


class EvalRunOut(serializers.ModelSerializer):
    model = serializers.CharField(source="model.name")
    status = serializers.CharField(read_only=True, help_text="pending, running, succeeded, failed")
    source = serializers.CharField(read_only=True, help_text="imported or runner")
    metrics = EvalMetricOut(source="metric_results", many=True, read_only=True)

    class Meta:
        model = ModelRun
        fields = [
            "id",
            "model",
            "version",
            "label",
            "source",
            "status",
            "seed",
            "prompt_settings",
            "started_at",
            "finished_at",
            "cost",
            "prediction_count",
            "metrics_computed_at",
            "metrics",
        ]


class VersionImportIn(serializers.Serializer):
    project = serializers.IntegerField(
        help_text="id of a project you curate; the benchmark is found or made in it"
    )
    family = serializers.ChoiceField(choices=Family.choices)
    benchmark = serializers.CharField(
        max_length=200,
        help_text="an existing benchmark of this family in the project gets a new version",
    )
    label = serializers.CharField(max_length=60)
    publish = serializers.BooleanField(default=True)
    content = serializers.CharField(required=False, trim_whitespace=False)
    file = serializers.FileField(required=False)

    def validate_project(self, value: int):
        """A project the caller curates; any other id reads like a missing one."""
        project = selectors.curated_projects(self.context["request"].user).filter(pk=value).first()
        if project is None:
            raise serializers.ValidationError("no such project among the projects you curate")
        return project


class RunImportIn(serializers.Serializer):
    model = serializers.CharField(max_length=200)
    label = serializers.CharField(max_length=120, required=False, default="", allow_blank=True)
    option = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
    seed = serializers.IntegerField(required=False, default=0)
    content = serializers.CharField(required=False, trim_whitespace=False)
    file = serializers.FileField(required=False)


class EvalJudgmentSetOut(serializers.ModelSerializer):
    kind = serializers.CharField(read_only=True, help_text="llm or human")
    results = serializers.JSONField(
        read_only=True,
        help_text="players (Elo median, interval, online Elo, Bradley–Terry, matches, win-rate "
        "vs reference), counts and seeds; for crowd sets also agreement per metric and stratum",
    )

    class Meta:
        model = JudgmentSet
        fields = [
            "id",
            "version",
            "kind",
            "label",
            "judge",
            "with_reference",
            "reference_player",
            "source",
            "status",
            "seed",
            "bootstrap_seed",
            "pair_count",
            "provenance",
            "results",
            "results_computed_at",
            "code_version",
            "created_at",
        ]


class JudgmentImportIn(serializers.Serializer):
    kind = serializers.ChoiceField(choices=JudgmentSet.Kind.choices)
    label = serializers.CharField(max_length=120)
    judge = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
    with_reference = serializers.BooleanField(default=False)
    reference_player = serializers.CharField(
        max_length=200, required=False, default="human_verified_reference"
    )
    aliases = serializers.CharField(
        required=False,
        default="",
        allow_blank=True,
        help_text="one rename per line: name in the file = name to show",
    )
    content = serializers.CharField(required=False, trim_whitespace=False)
    file = serializers.FileField(required=False)


class RankingOut(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()
    systems = serializers.IntegerField()


class RankCorrelationOut(serializers.Serializer):
    a = serializers.CharField()
    b = serializers.CharField()
    n = serializers.IntegerField()
    rho = serializers.FloatField(allow_null=True)
    p_value = serializers.FloatField(allow_null=True)
    reason = serializers.CharField()
    rows = serializers.ListField(child=serializers.DictField())


class EvalJobOut(serializers.Serializer):
    job_id = serializers.IntegerField()
    rows = serializers.IntegerField()


def _content(data: dict) -> tuple[str, str]:
    upload = data.get("file")
    if upload is not None:
        try:
            return upload.read().decode("utf-8-sig"), upload.name
        except UnicodeDecodeError as exc:
            raise serializers.ValidationError({"file": "not UTF-8 text"}) from exc
    if not data.get("content"):
        raise serializers.ValidationError({"content": "give the file content or upload a file"})
    return data["content"], ""


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


class VersionImportApi(GenericAPIView):
    """Validate a dataset file synchronously, then import it as a new version in a job."""

    roles = CURATE
    permission_classes = [RolePermission]
    serializer_class = VersionImportIn
    parser_classes = [JSONParser, MultiPartParser, FormParser]
    # The serializer's fields, less the content, are the arguments of this service.
    start = staticmethod(services.version_import_start)

    @extend_schema(request=VersionImportIn, responses={202: EvalJobOut, **ERRORS})
    def post(self, request):
        return self._accepted(request)

    def _accepted(self, request, **target) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        content, filename = _content(data)
        args = {k: v for k, v in data.items() if k not in ("content", "file")}
        job, rows = self.start(
            **target, **args, content=content, filename=filename, created_by=request.user
        )
        return Response({"job_id": job.pk, "rows": rows}, status=status.HTTP_202_ACCEPTED)


class RunImportApi(VersionImportApi):
    """Validate predictions against a version synchronously, then import and score in a job."""

    roles = EVALUATE
    serializer_class = RunImportIn
    start = staticmethod(services.run_import_start)

    @extend_schema(request=RunImportIn, responses={202: EvalJobOut, **ERRORS})
    def post(self, request, version_id: int):
        version = selectors.version_for_user_or_404(request.user, version_id, allowed=EVALUATE)
        return self._accepted(request, version=version)


class RunComputeApi(GenericAPIView):
    roles = EVALUATE
    permission_classes = [RolePermission]
    serializer_class = EvalJobOut

    @extend_schema(request=None, responses={202: EvalJobOut, **ERRORS})
    def post(self, request, run_id: int):
        run = selectors.run_for_user_or_404(request.user, run_id, allowed=EVALUATE)
        job = services.compute_enqueue(run=run, created_by=request.user)
        return Response({"job_id": job.pk, "rows": run.prediction_count}, status=202)


class JudgmentSetsApi(GenericAPIView):
    roles = READ
    permission_classes = [RolePermission]
    serializer_class = EvalJudgmentSetOut

    @extend_schema(responses={200: EvalJudgmentSetOut(many=True), **ERRORS})
    def get(self, request, version_id: int):
        version = selectors.version_for_user_or_404(request.user, version_id)
        return Response(EvalJudgmentSetOut(selectors.judgment_sets(version), many=True).data)


class JudgmentImportApi(VersionImportApi):
    """Validate a judge's head-to-head file or the crowd votes CSV against a VisIT-Bench version
    synchronously, then import it and compute ratings and agreement in a job."""

    roles = EVALUATE
    serializer_class = JudgmentImportIn
    start = staticmethod(services.judgments_import_start)

    @extend_schema(request=JudgmentImportIn, responses={202: EvalJobOut, **ERRORS})
    def post(self, request, version_id: int):
        version = selectors.version_for_user_or_404(request.user, version_id, allowed=EVALUATE)
        return self._accepted(request, version=version)


class JudgmentComputeApi(GenericAPIView):
    roles = EVALUATE
    permission_classes = [RolePermission]
    serializer_class = EvalJobOut

    @extend_schema(request=None, responses={202: EvalJobOut, **ERRORS})
    def post(self, request, version_id: int):
        version = selectors.version_for_user_or_404(request.user, version_id, allowed=EVALUATE)
        job = services.judgments_compute_enqueue(version=version, created_by=request.user)
        return Response({"job_id": job.pk, "rows": version.judgment_sets.count()}, status=202)


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
        result = pairwise.correlate(options[key_a], options[key_b])
        return Response(RankCorrelationOut(result).data)


# --- Model runs and LLM judges through the gateway ------------------------------------------------


class RunModelIn(serializers.Serializer):
    provider_id = serializers.IntegerField(
        required=False,
        allow_null=True,
        help_text="LLM provider (a VLM); omitted: the project's default, else the offline blind "
        "baseline, which answers from the question text alone",
    )
    scorer_id = serializers.IntegerField(
        required=False, allow_null=True, help_text="NaturalBench-Retrieval: the scorer"
    )
    model_name = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
    label = serializers.CharField(max_length=120, required=False, default="", allow_blank=True)
    limit = serializers.IntegerField(required=False, allow_null=True, min_value=1)
    seed = serializers.IntegerField(required=False, default=0)
    space_before_suffix = serializers.BooleanField(required=False, default=False)
    logprobs = serializers.BooleanField(required=False, default=False)
    post_hoc = serializers.BooleanField(required=False, default=False)


class RunModelOut(serializers.Serializer):
    job_id = serializers.IntegerField()
    run_id = serializers.IntegerField()
    items = serializers.IntegerField(help_text="items that count on the version")


class PairIn(serializers.Serializer):
    instance_id = serializers.CharField(max_length=200)
    a_model = serializers.CharField(max_length=200)
    b_model = serializers.CharField(max_length=200)


class JudgeIn(serializers.Serializer):
    provider_id = serializers.IntegerField(required=False, allow_null=True)
    label = serializers.CharField(max_length=120)
    model = serializers.CharField(
        max_length=200,
        required=False,
        default="",
        allow_blank=True,
        help_text="draw pairs for this run's model (ignored when pairs are given)",
    )
    pairs = PairIn(many=True, required=False, help_text="explicit (instance, A, B) pairs")
    instances = serializers.IntegerField(
        required=False, default=runners.DEFAULT_JUDGE_INSTANCES, min_value=1, max_value=5000
    )
    seed = serializers.IntegerField(required=False, default=0)
    opponents = serializers.BooleanField(required=False, default=True)
    with_reference = serializers.BooleanField(required=False, default=False)


class JudgeOut(serializers.Serializer):
    job_id = serializers.IntegerField()
    judgment_set_id = serializers.IntegerField()
    pairs = serializers.IntegerField()


def _provider(request, provider_id, project):
    """A provider the user may use on the project (others answer like missing ones), else the
    project's default."""
    if provider_id is None:
        return provider_for(project)
    provider = selectors.providers_for(request.user, project).filter(pk=provider_id).first()
    if provider is None:
        raise NotFound(f"No LLM provider {provider_id}.")
    return provider


class RunModelApi(GenericAPIView):
    """Start (or resume) a run of a VLM, or of a scorer for NaturalBench-Retrieval, on a
    version; the job answers every item with the official prompt and computes the metrics."""

    roles = EVALUATE
    permission_classes = [RolePermission]
    serializer_class = RunModelIn

    @extend_schema(request=RunModelIn, responses={202: RunModelOut, **ERRORS})
    def post(self, request, version_id: int):
        version = selectors.version_for_user_or_404(request.user, version_id, allowed=EVALUATE)
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        common = {
            "version": version,
            "created_by": request.user,
            "limit": data.get("limit"),
            "label": data["label"],
            "model_name": data["model_name"],
        }
        if version.benchmark.family == Family.NATURALBENCH_RETRIEVAL:
            scorer = Scorer.objects.filter(pk=data.get("scorer_id") or 0).first()
            if scorer is None:
                raise Invalid("Give the scorer_id of the scorer to run.")
            job = runners.score_model_start(scorer=scorer, **common)
        else:
            job = runners.run_model_start(
                provider=_provider(request, data.get("provider_id"), version.benchmark.project),
                seed=data["seed"],
                options={
                    k: data[k]
                    for k in ("space_before_suffix", "logprobs", "post_hoc")
                    if version.benchmark.family == Family.NATURALBENCH or data[k]
                },
                **common,
            )
        run_id = job.params["run_id"]
        return Response(
            {"job_id": job.pk, "run_id": run_id, "items": version.kept_count},
            status=status.HTTP_202_ACCEPTED,
        )


class JudgeApi(GenericAPIView):
    """Judge VisIT-Bench pairs in both orders (App. F) in a job: explicit pairs, or pairs drawn
    with a seed for one model (against the reference and one random other model)."""

    roles = EVALUATE
    permission_classes = [RolePermission]
    serializer_class = JudgeIn

    @extend_schema(request=JudgeIn, responses={202: JudgeOut, **ERRORS})
    def post(self, request, version_id: int):
        version = selectors.version_for_user_or_404(request.user, version_id, allowed=EVALUATE)
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        services._require_visit(version)
        pairing = None
        if data.get("pairs"):
            pairs = [dict(p) for p in data["pairs"]]
        elif data["model"]:
            pairs = runners.judge_pairs_sample(
                version=version,
                model=data["model"],
                n=data["instances"],
                seed=data["seed"],
                opponents=data["opponents"],
            )
            pairing = {
                "model": data["model"],
                "instances": data["instances"],
                "seed": data["seed"],
                "opponents": data["opponents"],
            }
        else:
            raise Invalid("Give the pairs to judge, or the model to draw pairs for.")
        job = runners.judge_start(
            version=version,
            judgment_set_name=data["label"],
            pairs=pairs,
            provider=_provider(request, data.get("provider_id"), version.benchmark.project),
            created_by=request.user,
            seed=data["seed"],
            with_reference=data["with_reference"],
            pairing=pairing,
        )
        return Response(
            {
                "job_id": job.pk,
                "judgment_set_id": job.params["judgment_set_id"],
                "pairs": len(pairs),
            },
            status=status.HTTP_202_ACCEPTED,
        )
