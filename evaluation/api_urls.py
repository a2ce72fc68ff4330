"""JSON routes of the evaluation app, mounted at /api/eval/."""

from django.urls import path

from . import api

urlpatterns = [
    path("benchmarks/", api.BenchmarkListApi.as_view(), name="api-eval-benchmarks"),
    path("import/", api.VersionImportApi.as_view(), name="api-eval-import"),
    path("versions/<int:version_id>/", api.VersionDetailApi.as_view(), name="api-eval-version"),
    path("versions/<int:version_id>/runs/", api.VersionRunsApi.as_view(), name="api-eval-runs"),
    path(
        "versions/<int:version_id>/import/", api.RunImportApi.as_view(), name="api-eval-run-import"
    ),
    path(
        "versions/<int:version_id>/judgments/",
        api.JudgmentSetsApi.as_view(),
        name="api-eval-judgments",
    ),
    path(
        "versions/<int:version_id>/judgments/import/",
        api.JudgmentImportApi.as_view(),
        name="api-eval-judgments-import",
    ),
    path(
        "versions/<int:version_id>/judgments/compute/",
        api.JudgmentComputeApi.as_view(),
        name="api-eval-judgments-compute",
    ),
    path(
        "versions/<int:version_id>/rankings/", api.RankingsApi.as_view(), name="api-eval-rankings"
    ),
    path("versions/<int:version_id>/run/", api.RunModelApi.as_view(), name="api-eval-run-model"),
    path("versions/<int:version_id>/judge/", api.JudgeApi.as_view(), name="api-eval-judge"),
    path("runs/<int:run_id>/", api.RunDetailApi.as_view(), name="api-eval-run"),
    path("runs/<int:run_id>/metrics/", api.RunMetricsApi.as_view(), name="api-eval-metrics"),
    path("runs/<int:run_id>/compute/", api.RunComputeApi.as_view(), name="api-eval-compute"),
]
