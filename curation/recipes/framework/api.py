"""The recipes over JSON (mounted at ``api/recipes/``), generic like their pages: what each
recipe declares (stages, exports), its objects in your projects with their funnel counts,
starting a stage or an export (a job: follow it at ``/api/jobs/{id}/``), and an export's file.

Curators start work; an export's file is for the curators and researchers of its project, as on
the pages. Anything outside your projects, an unknown recipe or stage answers 404."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from annotator.platform.api import ERRORS, ApiView, JobOut
from annotator.platform.errors import Invalid, NotFound
from annotator.platform.files import downloadable_or_404, file_response
from annotator.platform.roles import CURATOR, RESEARCHER
from curation.export_files import export_file_problem

from . import exports, selectors, stages
from .declare import Recipe
from .registry import recipe_of, recipes


class StageOut(serializers.Serializer):
    name = serializers.CharField()
    label = serializers.CharField()


class ExportOut(serializers.Serializer):
    kind = serializers.CharField(help_text="The export's job kind: name it to start one.")
    route = serializers.CharField(help_text="Its arguments, as in the page's address.")


class RecipeOut(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()
    stages = StageOut(many=True)
    exports = ExportOut(many=True)


class RecipeObjectOut(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    project = serializers.IntegerField()
    counts = serializers.DictField(help_text="The funnel: how many items are at each stage.")


class StageIn(serializers.Serializer):
    params = serializers.DictField(
        required=False, default=dict, help_text="The stage form's fields (its page's button)."
    )


class ExportIn(serializers.Serializer):
    kind = serializers.CharField(help_text="The export's job kind (GET /api/recipes/).")
    args = serializers.DictField(
        required=False, default=dict, help_text='Its route arguments, e.g. {"fmt": "jsonl"}.'
    )
    params = serializers.DictField(required=False, default=dict, help_text="Its form fields.")


def _recipe(key: str) -> Recipe:
    try:
        return recipe_of(key)
    except LookupError:
        raise NotFound("Not found.") from None


def _recipe_data(recipe: Recipe) -> dict:
    return {
        "key": recipe.key,
        "label": str(recipe.label),
        "stages": [{"name": s.name, "label": str(s.label)} for s in recipe.stages if s.button],
        "exports": [{"kind": e.job_kind, "route": e.url} for e in recipe.exports],
    }


def _object_data(recipe: Recipe, obj: Any) -> dict:
    counts = {k: v for k, v in recipe.funnel(obj).items() if isinstance(v, int | float)}
    name = getattr(obj, "name", "") or str(obj)
    return {"id": obj.pk, "name": name, "project": obj.project_id, "counts": counts}


class RecipeListApi(ApiView):
    """Every recipe with the stages you can start and the exports it writes."""

    roles = (CURATOR, RESEARCHER)
    serializer_class = RecipeOut

    @extend_schema(responses={200: RecipeOut(many=True), **ERRORS})
    def get(self, request):
        return Response([_recipe_data(r) for r in recipes()])


class RecipeObjectListApi(ApiView):
    """A recipe's objects (pipelines, case sets, benches) in the projects you curate, with
    their funnel counts."""

    roles = (CURATOR,)
    serializer_class = RecipeObjectOut

    @extend_schema(responses={200: RecipeObjectOut(many=True), **ERRORS})
    def get(self, request, key: str):
        recipe = _recipe(key)
        page = self.paginate_queryset(selectors.objects_for(recipe, request.user).order_by("pk"))
        return self.get_paginated_response([_object_data(recipe, o) for o in page])


class RecipeStageApi(ApiView):
    """Start a stage of an object (as its page's button does): what blocks it, or a stage
    already running when it runs one at a time, answers 400 saying what to do first."""

    roles = (CURATOR,)
    serializer_class = JobOut

    @extend_schema(request=StageIn, responses={202: JobOut, **ERRORS})
    def post(self, request, key: str, object_id: int, stage: str):
        recipe = _recipe(key)
        obj = selectors.object_or_404(recipe, request.user, object_id)
        declared = recipe.stage(stage)
        if declared is None or not declared.button:
            raise NotFound("Not found.")
        params = self.valid(StageIn).validated_data["params"]
        if declared.form is not None:
            form = declared.form(params, obj=obj)
            if not form.is_valid():
                raise Invalid(form.invalid_message())
            params = form.job_params()
        job = stages.stage_start(recipe, stage, obj, created_by=request.user, params=params)
        return Response(JobOut(job).data, status=status.HTTP_202_ACCEPTED)


class RecipeExportApi(ApiView):
    """Start an export of an object (its file is written by a job; download it from
    ``exports/{job_id}/`` once the job succeeded)."""

    roles = (CURATOR,)
    serializer_class = JobOut

    @extend_schema(request=ExportIn, responses={202: JobOut, **ERRORS})
    def post(self, request, key: str, object_id: int):
        recipe = _recipe(key)
        obj = selectors.object_or_404(recipe, request.user, object_id)
        data = self.valid(ExportIn).validated_data
        export = next((e for e in recipe.exports if e.job_kind == data["kind"]), None)
        if export is None:
            kinds = ", ".join(e.job_kind for e in recipe.exports) or "none"
            raise Invalid(f"Unknown export {data['kind'][:60]!r}; this recipe's: {kinds}.")
        args = {k: str(v) for k, v in data["args"].items()}
        form = {k: str(v) for k, v in data["params"].items()}
        params = export.params(obj, args, form)
        problem = export.unknown(params) if export.unknown is not None else ""
        if problem:
            raise Invalid(problem)
        job = exports.export_start(recipe, export, obj, params, created_by=request.user)
        return Response(JobOut(job).data, status=status.HTTP_202_ACCEPTED)


class RecipeExportFileApi(ApiView):
    """The file an export job wrote, streamed (or a redirect to a short-lived signed URL on
    S3); its SHA-256 is the job's ``result.sha256``. 404 says why when it is not there yet."""

    roles = (CURATOR, RESEARCHER)
    serializer_class = JobOut

    @extend_schema(
        responses={
            (200, "application/octet-stream"): OpenApiResponse(description="The file."),
            **ERRORS,
        }
    )
    def get(self, request, key: str, object_id: int, job_id: int):
        recipe = _recipe(key)
        obj = downloadable_or_404(request.user, recipe.model.objects, object_id)
        job = exports.export_jobs(recipe, obj).filter(pk=job_id).first()
        problem = export_file_problem(job)
        if problem:
            raise NotFound(problem)
        result = job.result
        return file_response(
            request,
            result["path"],
            filename=result["filename"],
            content_type=result.get("content_type") or "application/octet-stream",
        )
