from django import forms
from django.contrib import admin

from annotator.platform.admin import StampsLastAdmin

from . import registry
from .models import (
    Benchmark,
    BenchmarkVersion,
    EvaluatedModel,
    JudgmentSet,
    MetricResult,
    ModelRun,
)


class BenchmarkAdminForm(forms.ModelForm):
    # The family is a key of the registry (the model field has no choices: families register).
    family = forms.ChoiceField(choices=registry.choices)

    class Meta:
        model = Benchmark
        fields = ["family", "name", "description", "project", "created_by"]


@admin.register(Benchmark)
class BenchmarkAdmin(admin.ModelAdmin):
    form = BenchmarkAdminForm
    list_display = ["name", "family_label", "project", "created_at"]
    # "Unassigned (admins only)" holds the benchmarks that had no project: move them from here.
    list_filter = ["project", "family"]

    @admin.display(description="family", ordering="family")
    def family_label(self, benchmark: Benchmark) -> str:
        return registry.label_of(benchmark.family)


@admin.register(BenchmarkVersion)
class BenchmarkVersionAdmin(StampsLastAdmin):
    list_display = ["benchmark", "label", "frozen", "item_count", "kept_count", "created_at"]
    readonly_fields = ["frozen", "published_at", "item_count", "kept_count"]


@admin.register(EvaluatedModel)
class EvaluatedModelAdmin(admin.ModelAdmin):
    list_display = ["name", "provider", "endpoint"]


@admin.register(ModelRun)
class ModelRunAdmin(StampsLastAdmin):
    list_display = ["model", "version", "label", "status", "prediction_count", "created_at"]
    list_filter = ["status", "source"]


@admin.register(MetricResult)
class MetricResultAdmin(admin.ModelAdmin):
    list_display = ["run", "metric", "value", "interval_low", "interval_high", "n", "code_version"]
    list_filter = ["metric"]


@admin.register(JudgmentSet)
class JudgmentSetAdmin(StampsLastAdmin):
    list_display = ["label", "version", "kind", "judge", "pair_count", "status", "created_at"]
    list_filter = ["kind", "status", "source"]
    readonly_fields = ["results", "results_computed_at", "code_version", "pair_count"]
