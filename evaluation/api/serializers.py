"""The evaluation API's input and output serializers. The run request carries every family's
yes/no run options (``runner.options``) and the judge's default instance count comes from the
family that has a judge, both read from the registry when this module is imported (after the
apps are ready, as the URLconf is)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers

from annotator.platform.api import ErrorOut
from annotator.platform.forms import ID_MAX, INT_MAX, model_bounds

from .. import runners, selectors
from ..models import Benchmark, BenchmarkVersion, JudgmentSet, MetricResult, ModelRun
from ..registry import ScorerRunner, choices, families

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
    # The registry's families (the model field has no choices), so the schema keeps its enum.
    family = serializers.ChoiceField(choices=choices())
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
        min_value=1,
        max_value=ID_MAX,
        help_text="id of a project you curate; the benchmark is found or made in it",
    )
    family = serializers.ChoiceField(choices=choices())
    benchmark = serializers.CharField(
        max_length=200,
        help_text="an existing benchmark of this family in the project gets a new version",
    )
    label = serializers.CharField(max_length=60)
    publish = serializers.BooleanField(default=True)
    content = serializers.CharField(required=False, trim_whitespace=False)
    file = serializers.FileField(required=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["family"].choices = choices()  # families registered since import (tests)

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
    seed = serializers.IntegerField(
        required=False, default=0, **model_bounds(ModelRun, "seed", low=0)
    )
    skip_unmatched = serializers.BooleanField(
        required=False,
        default=False,
        help_text="tolerant matching: skip rows that match no item (counted with their lines "
        "in the job's result); off = all or nothing",
    )
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


def content_of(data: dict) -> tuple[str, str]:
    upload = data.get("file")
    if upload is not None:
        try:
            return upload.read().decode("utf-8-sig"), upload.name
        except UnicodeDecodeError as exc:
            raise serializers.ValidationError({"file": "not UTF-8 text"}) from exc
    if not data.get("content"):
        raise serializers.ValidationError({"content": "give the file content or upload a file"})
    return data["content"], ""


def _run_model_in() -> type[serializers.Serializer]:
    """The run request: common fields, then every family's yes/no run options (ignored, or
    refused when set, on the families they do not belong to)."""
    scored = " / ".join(f.label for f in families() if isinstance(f.runner, ScorerRunner))
    fields = {
        "provider_id": serializers.IntegerField(
            required=False,
            allow_null=True,
            min_value=1,
            max_value=ID_MAX,
            help_text="LLM provider (a VLM); omitted: the project's default, else the offline "
            "blind baseline, which answers from the question text alone",
        ),
        "scorer_id": serializers.IntegerField(
            required=False, allow_null=True, help_text=f"{scored}: the scorer"
        ),
        "model_name": serializers.CharField(
            max_length=200, required=False, default="", allow_blank=True
        ),
        "label": serializers.CharField(
            max_length=120, required=False, default="", allow_blank=True
        ),
        "limit": serializers.IntegerField(
            required=False, allow_null=True, min_value=1, max_value=INT_MAX
        ),
        "seed": serializers.IntegerField(
            required=False, default=0, **model_bounds(ModelRun, "seed", low=0)
        ),
    }
    for family in runners.option_owners():
        for option in family.runner.options.fields:
            fields[option.name] = serializers.BooleanField(required=False, default=False)
    return type("RunModelIn", (serializers.Serializer,), fields)


RunModelIn = _run_model_in()


class RunModelOut(serializers.Serializer):
    job_id = serializers.IntegerField()
    run_id = serializers.IntegerField()
    items = serializers.IntegerField(help_text="items that count on the version")


def _judge_instances() -> dict:
    """The judge's default number of instances (shown in the schema), when a family has one."""
    for family in families():
        if family.pairwise is not None and family.pairwise.judge is not None:
            return {"default": family.pairwise.judge.default_instances}
    return {"allow_null": True, "default": None}


class PairIn(serializers.Serializer):
    instance_id = serializers.CharField(max_length=200)
    a_model = serializers.CharField(max_length=200)
    b_model = serializers.CharField(max_length=200)


class JudgeIn(serializers.Serializer):
    provider_id = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, max_value=ID_MAX
    )
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
        required=False, min_value=1, max_value=5000, **_judge_instances()
    )
    seed = serializers.IntegerField(
        required=False, default=0, **model_bounds(JudgmentSet, "seed", low=0)
    )
    opponents = serializers.BooleanField(required=False, default=True)
    with_reference = serializers.BooleanField(required=False, default=False)


class JudgeOut(serializers.Serializer):
    job_id = serializers.IntegerField()
    judgment_set_id = serializers.IntegerField()
    pairs = serializers.IntegerField()
