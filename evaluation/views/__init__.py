"""Evaluation pages: benchmarks, versions, leaderboards with plots, imports and metric jobs.

Everything is reached through the person's projects (``evaluation.selectors``): researchers and
curators read and evaluate (run models and judges, import runs and judgments, compute metrics,
download); curators alone import benchmarks and publish versions. Anything out of reach answers
404, like a missing object; pages offer only the actions the person may take. What differs by
benchmark family comes from its declaration (``evaluation.registry``).
"""

from django.urls import path

from .benchmarks import benchmarks, version_detail, version_import, version_publish
from .judgments import (
    judge_run,
    judgments,
    judgments_compute,
    judgments_export,
    judgments_import,
)
from .leaderboard import leaderboard, rankings
from .runs import run_compute, run_detail, run_import, run_model

urlpatterns = [
    path("", benchmarks, name="eval-benchmarks"),
    path("import/", version_import, name="eval-import"),
    path("versions/<int:version_id>/", version_detail, name="eval-version"),
    path("versions/<int:version_id>/leaderboard/", leaderboard, name="eval-leaderboard"),
    path("versions/<int:version_id>/import/", run_import, name="eval-run-import"),
    path("versions/<int:version_id>/publish/", version_publish, name="eval-version-publish"),
    path("versions/<int:version_id>/run/", run_model, name="eval-run-model"),
    path("versions/<int:version_id>/judgments/run/", judge_run, name="eval-judge-run"),
    path("versions/<int:version_id>/judgments/", judgments, name="eval-judgments"),
    path(
        "versions/<int:version_id>/judgments/import/",
        judgments_import,
        name="eval-judgments-import",
    ),
    path(
        "versions/<int:version_id>/judgments/compute/",
        judgments_compute,
        name="eval-judgments-compute",
    ),
    path(
        "versions/<int:version_id>/judgments/<int:set_id>/export/",
        judgments_export,
        name="eval-judgments-export",
    ),
    path("versions/<int:version_id>/rankings/", rankings, name="eval-rankings"),
    path("runs/<int:run_id>/", run_detail, name="eval-run"),
    path("runs/<int:run_id>/compute/", run_compute, name="eval-run-compute"),
]
