"""JSON API of the evaluation app, mounted at /api/eval/. Everything is reached through the
caller's projects (``evaluation.selectors``): curators and researchers read and evaluate (run,
judge, import runs and judgments, compute); curators alone import benchmark versions. One view
per operation; refusals answer like missing objects (404)."""

from .actions import (
    JudgeApi,
    JudgmentComputeApi,
    JudgmentImportApi,
    RunComputeApi,
    RunImportApi,
    RunModelApi,
    VersionImportApi,
)
from .reads import (
    BenchmarkListApi,
    JudgmentSetsApi,
    RankingsApi,
    RunDetailApi,
    RunMetricsApi,
    VersionDetailApi,
    VersionRunsApi,
)

__all__ = [
    "BenchmarkListApi",
    "JudgeApi",
    "JudgmentComputeApi",
    "JudgmentImportApi",
    "JudgmentSetsApi",
    "RankingsApi",
    "RunComputeApi",
    "RunDetailApi",
    "RunImportApi",
    "RunMetricsApi",
    "RunModelApi",
    "VersionDetailApi",
    "VersionImportApi",
    "VersionRunsApi",
]
