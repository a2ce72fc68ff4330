"""Evaluation data: benchmarks and their frozen versions, evaluated models, runs, predictions and
metric results. State changes go through ``evaluation.services``; pure metric code lives in
``evaluation.metrics``.
"""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext_lazy as _

from annotator.platform.models import CreatedStamp, JobStamp, NewestFirst


class RunStatus(models.TextChoices):
    """Where a model run or a judge's run stands."""

    PENDING = "pending", _("Pending")
    RUNNING = "running", _("Running")
    SUCCEEDED = "succeeded", _("Succeeded")
    FAILED = "failed", _("Failed")


class Benchmark(CreatedStamp):
    """A benchmark of one project: its versions, runs, predictions, metrics and judgments are
    seen and changed only through that project (``evaluation.selectors``). Deleting the project
    deletes them too (an admin-only act that Django's admin lists before confirming); a benchmark
    never outlives its project, since one without a project would belong to nobody's reach."""

    # A registered family's key (evaluation.registry); what it means lives in its declaration.
    family = models.CharField(max_length=30)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    project = models.ForeignKey(
        "annotator.Project", on_delete=models.CASCADE, related_name="benchmarks"
    )

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            # Per project: one project's names neither collide with nor reveal another's.
            models.UniqueConstraint(
                fields=["project", "family", "name"], name="benchmark_project_family_name_uniq"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class BenchmarkVersion(CreatedStamp):
    """A set of items. Once ``frozen`` (published) its items never change."""

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="versions")
    label = models.CharField(max_length=60)
    notes = models.TextField(blank=True)
    frozen = models.BooleanField(default=False)
    published_at = models.DateTimeField(null=True, blank=True)
    item_count = models.PositiveIntegerField(default=0)
    # Items that count on the leaderboard (e.g. the human-verified instances of a dataset).
    kept_count = models.PositiveIntegerField(default=0)
    source = models.CharField(max_length=255, blank=True)

    class Meta:
        ordering = ["benchmark", "-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["benchmark", "label"], name="version_label_uniq"),
            models.CheckConstraint(
                condition=Q(frozen=False) | Q(published_at__isnull=False),
                name="version_frozen_has_published_at",
            ),
            models.CheckConstraint(
                condition=Q(kept_count__lte=F("item_count")), name="version_kept_lte_items"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.benchmark.name} {self.label}"


class BenchmarkItem(models.Model):
    version = models.ForeignKey(BenchmarkVersion, on_delete=models.CASCADE, related_name="items")
    item_id = models.CharField(max_length=200)
    position = models.PositiveIntegerField()
    # False for items the leaderboard leaves out (kept in the version for provenance).
    kept = models.BooleanField(default=True)
    data = models.JSONField(default=dict)

    class Meta:
        ordering = ["version", "position"]
        constraints = [
            models.UniqueConstraint(fields=["version", "item_id"], name="item_id_per_version_uniq"),
            models.UniqueConstraint(fields=["version", "position"], name="item_position_uniq"),
        ]

    def __str__(self) -> str:
        return self.item_id


class EvaluatedModel(models.Model):
    """A global catalogue of model names (shared by every project, so one name is one model).
    Nothing lists it: a model is only ever seen through the runs of a benchmark in the reader's
    projects, so the catalogue reveals nothing across projects."""

    name = models.CharField(max_length=200, unique=True)
    provider = models.CharField(max_length=100, blank=True)
    endpoint = models.CharField(max_length=500, blank=True)
    parameters = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ModelRun(JobStamp):
    Status = RunStatus

    class Source(models.TextChoices):
        IMPORTED = "imported", _("Imported")
        RUNNER = "runner", _("Model runner")

    model = models.ForeignKey(EvaluatedModel, on_delete=models.PROTECT, related_name="runs")
    # Runs go with their version (and so with its benchmark and project).
    version = models.ForeignKey(BenchmarkVersion, on_delete=models.CASCADE, related_name="runs")
    label = models.CharField(max_length=120, blank=True)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.IMPORTED)
    prompt_settings = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    seed = models.IntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    cost = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    prediction_count = models.PositiveIntegerField(default=0)
    metrics_computed_at = models.DateTimeField(null=True, blank=True)

    class Meta(NewestFirst.Meta):
        constraints = [
            models.UniqueConstraint(
                fields=["model", "version", "label"], name="run_model_version_label_uniq"
            ),
            models.CheckConstraint(
                condition=Q(finished_at__isnull=True)
                | Q(started_at__isnull=True)
                | Q(finished_at__gte=F("started_at")),
                name="run_finished_after_started",
            ),
            models.CheckConstraint(
                condition=Q(cost__isnull=True) | Q(cost__gte=0), name="run_cost_nonneg"
            ),
        ]
        indexes = [models.Index(fields=["version", "status"], name="run_version_status_idx")]

    def __str__(self) -> str:
        suffix = f" ({self.label})" if self.label else ""
        return f"{self.model.name}{suffix} on {self.version}"


class Prediction(models.Model):
    run = models.ForeignKey(ModelRun, on_delete=models.CASCADE, related_name="predictions")
    item = models.ForeignKey(BenchmarkItem, on_delete=models.CASCADE, related_name="predictions")
    # A string, or a mapping of strings for items asked several prompts.
    raw_output = models.JSONField(default=str, blank=True)
    parsed_answer = models.JSONField(null=True, blank=True)
    scores = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "item"], name="prediction_run_item_uniq"),
        ]


class MetricResult(models.Model):
    run = models.ForeignKey(ModelRun, on_delete=models.CASCADE, related_name="metric_results")
    metric = models.CharField(max_length=80)
    value = models.FloatField(null=True, blank=True)  # None = undefined ("n/a")
    interval_low = models.FloatField(null=True, blank=True)
    interval_high = models.FloatField(null=True, blank=True)
    n = models.PositiveIntegerField(default=0)
    breakdown = models.JSONField(default=dict, blank=True)
    details = models.JSONField(default=dict, blank=True)  # seed, rounds, notes, τ …
    code_version = models.CharField(max_length=40)
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["run", "metric"]
        constraints = [
            models.UniqueConstraint(fields=["run", "metric"], name="metric_run_metric_uniq"),
            models.CheckConstraint(
                condition=Q(interval_low__isnull=True)
                | Q(interval_high__isnull=True)
                | Q(interval_low__lte=F("interval_high")),
                name="metric_interval_ordered",
            ),
        ]
        indexes = [models.Index(fields=["metric"], name="metric_name_idx")]

    def __str__(self) -> str:
        return f"{self.metric}={self.value}"


class JudgmentSet(JobStamp):
    """Pairwise judgments of one version (a family with pairwise judgments) by one judge: crowd
    votes or an LLM judge (both orders). Ratings, win-rates and agreement are computed into
    ``results``."""

    class Kind(models.TextChoices):
        HUMAN = "human", _("Human votes")
        LLM = "llm", _("LLM judge")

    Status = RunStatus

    class Source(models.TextChoices):
        IMPORTED = "imported", _("Imported")
        RUNNER = "runner", _("Judge runner")

    version = models.ForeignKey(
        BenchmarkVersion, on_delete=models.CASCADE, related_name="judgment_sets"
    )
    kind = models.CharField(max_length=10, choices=Kind.choices)
    label = models.CharField(max_length=120)
    # The LLM engine (e.g. "gpt-4") or who voted (e.g. "crowd").
    judge = models.CharField(max_length=200, blank=True)
    # Reference-backed judge prompt (App. F, Table 17); reference-free is the default.
    with_reference = models.BooleanField(default=False)
    reference_player = models.CharField(max_length=200, default="human_verified_reference")
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.IMPORTED)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.SUCCEEDED)
    # Seed of the online-Elo shuffle (1 = the official elo_analysis) and of the bootstrap.
    seed = models.IntegerField(default=1)
    bootstrap_seed = models.IntegerField(default=0)
    # File, dropped duplicates, aliases; for runner sets the prompt templates and provider.
    provenance = models.JSONField(default=dict, blank=True)
    pair_count = models.PositiveIntegerField(default=0)
    results = models.JSONField(default=dict, blank=True)
    results_computed_at = models.DateTimeField(null=True, blank=True)
    code_version = models.CharField(max_length=40, blank=True)

    class Meta:
        ordering = ["version", "kind", "id"]
        constraints = [
            models.UniqueConstraint(fields=["version", "label"], name="judgment_set_label_uniq"),
        ]

    def __str__(self) -> str:
        return self.label


class ResponsePair(models.Model):
    """Two models' responses to one instance, compared: crowd votes are counted per response."""

    model_a = models.CharField(max_length=200)
    model_b = models.CharField(max_length=200)
    # The two names sorted and joined: one comparison per unordered pair and instance.
    pair_key = models.CharField(max_length=401)
    response_a = models.TextField(blank=True)
    response_b = models.TextField(blank=True)
    votes_a = models.PositiveSmallIntegerField(default=0)
    votes_b = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True


class PairJudgment(ResponsePair):
    """One judged pair of responses to one instance. An LLM judge records the winner of each
    order and its outputs; crowd votes are counted per response. ``winner`` is model_a,
    model_b or "tie" (two-order aggregation for a judge, majority for votes)."""

    judgment_set = models.ForeignKey(
        JudgmentSet, on_delete=models.CASCADE, related_name="judgments"
    )
    item = models.ForeignKey(BenchmarkItem, on_delete=models.CASCADE, related_name="+")
    # File order: online Elo keeps the first of repeated battles, then shuffles (App. E).
    position = models.PositiveIntegerField()
    order_winners = models.JSONField(default=list, blank=True)
    outputs = models.JSONField(default=list, blank=True)
    winner = models.CharField(max_length=200)

    class Meta:
        ordering = ["judgment_set", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["judgment_set", "position"], name="pair_judgment_position_uniq"
            ),
            models.UniqueConstraint(
                fields=["judgment_set", "item", "pair_key"], name="pair_judgment_pair_uniq"
            ),
            models.CheckConstraint(
                condition=~Q(model_a=F("model_b")), name="pair_judgment_two_models"
            ),
            models.CheckConstraint(
                condition=Q(winner=F("model_a")) | Q(winner=F("model_b")) | Q(winner="tie"),
                name="pair_judgment_winner_known",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.model_a} vs {self.model_b}: {self.winner}"
