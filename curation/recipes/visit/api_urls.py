"""JSON API of the VisIT-Bench living leaderboard; the project's urls mount it at ``api/visit/``."""

from django.urls import path

from . import api

urlpatterns = [
    path(
        "pipelines/<int:pipeline_id>/submissions/",
        api.SubmissionsApi.as_view(),
        name="api-visit-submissions",
    ),
    path(
        "pipelines/<int:pipeline_id>/submissions/<int:submission_id>/",
        api.SubmissionDetailApi.as_view(),
        name="api-visit-submission",
    ),
    path(
        "pipelines/<int:pipeline_id>/leaderboard/",
        api.LeaderboardApi.as_view(),
        name="api-visit-leaderboard",
    ),
]
