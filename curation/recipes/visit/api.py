"""JSON API of the living leaderboard (visit-bench.txt Sec. 1, App. F), mounted at ``api/visit/``
(``urlpatterns``): researchers and curators of a pipeline's project submit a new model's
responses (token auth) and read the ratings. One view per operation; bad files answer 400 with
line-numbered errors and store nothing; pipelines out of reach answer 404 like missing ones."""

from __future__ import annotations

from pathlib import PurePosixPath

from django.urls import path
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from annotator.platform.api import ERRORS as PLATFORM_ERRORS
from annotator.platform.api import STAFF, ApiView, ErrorOut
from annotator.platform.edge import FormParser, JSONParser, MultiPartParser
from annotator.platform.forms import INT_MAX
from annotator.platform.scoping import get_or_404
from evaluation.families.visit.api import LeaderboardOut, leaderboard_out

from . import selectors
from .models import VisitSubmission
from .pipelines import upload_text
from .submissions import submission_create

ERRORS = {
    **PLATFORM_ERRORS,
    400: OpenApiResponse(ErrorOut, description="Invalid file (line-numbered errors)"),
    409: OpenApiResponse(ErrorOut, description="Name taken, or the judge is still busy"),
}


class SubmissionIn(serializers.Serializer):
    model = serializers.CharField(max_length=200)
    file = serializers.FileField(required=False, help_text="CSV or JSONL upload")
    content = serializers.CharField(
        required=False, trim_whitespace=False, help_text="…or the file's text"
    )
    filename = serializers.CharField(
        required=False, default="", allow_blank=True, help_text="e.g. responses.jsonl"
    )
    seed = serializers.IntegerField(required=False, default=0, min_value=0, max_value=INT_MAX)
    reference_pairs = serializers.IntegerField(
        required=False, default=150, min_value=1, max_value=10000
    )

    def validate(self, data):
        if not data.get("file") and not data.get("content"):
            raise serializers.ValidationError("Give the responses as 'file' or 'content'.")
        return data


class JudgeJobOut(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    done = serializers.IntegerField()
    total = serializers.IntegerField()
    message = serializers.CharField()
    error = serializers.CharField()


class SubmissionOut(serializers.ModelSerializer):
    model = serializers.CharField(source="model_name")
    pair_count = serializers.SerializerMethodField()
    judge_job = JudgeJobOut(allow_null=True)
    rating = serializers.SerializerMethodField(
        help_text="Elo (bootstrap median), 95% interval, matches and win-rate vs the reference "
        "once the judge has rated the version; null before"
    )

    class Meta:
        model = VisitSubmission
        fields = [
            "id",
            "model",
            "format",
            "rows",
            "version_id",
            "run_id",
            "judgment_set_label",
            "seed",
            "reference_pairs",
            "pair_count",
            "pairs",
            "judge_job",
            "rating",
            "created_at",
        ]

    def get_pair_count(self, obj) -> int:
        return len(obj.pairs or [])

    def get_rating(self, obj) -> dict | None:
        players = self.context.get("players") or {}
        return players.get(obj.model_name)


def _out(pipeline, submissions, **kwargs) -> dict:
    """``SubmissionOut`` of ``submissions``, each model with its rating on the leaderboard."""
    board = selectors.leaderboard(pipeline)
    players = {p["player"]: p for p in board["players"]}
    return SubmissionOut(submissions, context={"players": players}, **kwargs).data


class SubmissionsApi(ApiView):
    """GET: the pipeline's submissions. POST: submit a new model's responses (CSV or JSONL): they
    are checked (missing columns, unknown instances, duplicate rows → 400 with line numbers,
    nothing stored), imported as a run, paired (seeded) with the reference and a random other
    model per instance, and judged by the LLM judge in both orders."""

    roles = STAFF
    parser_classes = [MultiPartParser, FormParser, JSONParser]
    serializer_class = SubmissionOut

    @extend_schema(responses={200: SubmissionOut(many=True), **ERRORS})
    def get(self, request, pipeline_id: int):
        pipeline = selectors.pipeline_or_404(request.user, pipeline_id)
        rows = VisitSubmission.objects.filter(pipeline=pipeline).select_related("judge_job")
        return Response(_out(pipeline, rows, many=True))

    @extend_schema(request=SubmissionIn, responses={201: SubmissionOut, **ERRORS})
    def post(self, request, pipeline_id: int):
        pipeline = selectors.pipeline_or_404(request.user, pipeline_id)
        data = self.valid(SubmissionIn).validated_data
        upload = data.get("file")
        if upload is not None:
            content = upload_text(upload)
            filename = PurePosixPath(upload.name or "").name
        else:
            content, filename = data["content"], data.get("filename", "")
        submission = submission_create(
            pipeline=pipeline,
            model_name=data["model"],
            content=content,
            filename=filename,
            seed=data["seed"],
            reference_pairs=data["reference_pairs"],
            created_by=request.user,
        )
        submission.refresh_from_db()
        return Response(_out(pipeline, submission), status=status.HTTP_201_CREATED)


class SubmissionDetailApi(ApiView):
    """One submission: its judge job's progress and, once rated, the model's rating."""

    roles = STAFF
    serializer_class = SubmissionOut

    @extend_schema(responses={200: SubmissionOut, **ERRORS})
    def get(self, request, pipeline_id: int, submission_id: int):
        pipeline = selectors.pipeline_or_404(request.user, pipeline_id)
        submissions = VisitSubmission.objects.select_related("judge_job")
        submission = get_or_404(submissions, pipeline=pipeline, pk=submission_id)
        return Response(_out(pipeline, submission))


class LeaderboardApi(ApiView):
    """The LLM judge's ratings of the pipeline's version (Table 4 layout) and the crowd's
    (Table 3), each player with its bootstrap interval."""

    roles = STAFF
    serializer_class = LeaderboardOut

    @extend_schema(responses={200: LeaderboardOut, **ERRORS})
    def get(self, request, pipeline_id: int):
        pipeline = selectors.pipeline_or_404(request.user, pipeline_id)
        board = selectors.leaderboard(pipeline)
        return Response(leaderboard_out(board, pipeline.version_id))


# Mounted at ``api/visit/`` (``Recipe.api_urls``).
urlpatterns = [
    path(
        "pipelines/<int:pipeline_id>/submissions/",
        SubmissionsApi.as_view(),
        name="api-visit-submissions",
    ),
    path(
        "pipelines/<int:pipeline_id>/submissions/<int:submission_id>/",
        SubmissionDetailApi.as_view(),
        name="api-visit-submission",
    ),
    path(
        "pipelines/<int:pipeline_id>/leaderboard/",
        LeaderboardApi.as_view(),
        name="api-visit-leaderboard",
    ),
]
