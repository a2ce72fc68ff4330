"""Endpoints that start jobs: imports (checked now, written in a job), metric and rating
computations, model and scorer runs, the family's LLM judge."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.generics import GenericAPIView
from rest_framework.response import Response

from annotator.platform.edge import FormParser, JSONParser, MultiPartParser
from annotator.platform.errors import Invalid, NotFound
from annotator.platform.roles import RolePermission
from curation.gateway.providers import provider_for
from curation.models import Scorer

from .. import runners, selectors, services
from ..registry import LLMRunner, ScorerRunner, family_of
from .serializers import (
    CURATE,
    ERRORS,
    EVALUATE,
    EvalJobOut,
    JudgeIn,
    JudgeOut,
    JudgmentImportIn,
    RunImportIn,
    RunModelIn,
    RunModelOut,
    VersionImportIn,
    content_of,
)


class _JobApi(GenericAPIView):
    # POST starts a job: ``started(request, **the URL's ids)`` returns the answer, sent with 202.
    # (A comment: a docstring would describe every subclass in the schema.)

    permission_classes = [RolePermission]

    def post(self, request, **ids):
        return Response(self.started(request, **ids), status=status.HTTP_202_ACCEPTED)

    def version(self, request, version_id: int):
        """The version of the URL, when the person may evaluate it (else 404)."""
        return selectors.version_for_user_or_404(request.user, version_id, allowed=EVALUATE)

    def body(self, request) -> dict:
        """The request's data, validated by ``serializer_class``."""
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data


@extend_schema(responses={202: EvalJobOut, **ERRORS})
class VersionImportApi(_JobApi):
    """Validate a dataset file synchronously, then import it as a new version in a job."""

    roles = CURATE
    serializer_class = VersionImportIn
    parser_classes = [JSONParser, MultiPartParser, FormParser]
    # The serializer's fields, less the content, are the arguments of this service.
    start = staticmethod(services.version_import_start)

    def started(self, request, **target):
        data = self.body(request)
        content, filename = content_of(data)
        args = {k: v for k, v in data.items() if k not in ("content", "file")}
        job, rows = self.start(
            **target, **args, content=content, filename=filename, created_by=request.user
        )
        return {"job_id": job.pk, "rows": rows}


class _IntoVersionApi(VersionImportApi):
    """A file validated against an existing version synchronously, then imported in a job."""

    roles = EVALUATE

    def started(self, request, version_id: int):
        return super().started(request, version=self.version(request, version_id))


class RunImportApi(_IntoVersionApi):
    """Validate predictions against a version synchronously, then import and score in a job."""

    serializer_class = RunImportIn
    start = staticmethod(services.run_import_start)


class JudgmentImportApi(_IntoVersionApi):
    """Validate a judge's head-to-head file or the crowd votes CSV against a version with pairwise
    judgments synchronously, then import it and compute ratings and agreement in a job."""

    serializer_class = JudgmentImportIn
    start = staticmethod(services.judgments_import_start)


@extend_schema(request=None, responses={202: EvalJobOut, **ERRORS})
class RunComputeApi(_JobApi):
    roles = EVALUATE
    serializer_class = EvalJobOut

    def started(self, request, run_id: int):
        run = selectors.run_for_user_or_404(request.user, run_id, allowed=EVALUATE)
        job = services.compute_enqueue(run=run, created_by=request.user)
        return {"job_id": job.pk, "rows": run.prediction_count}


@extend_schema(request=None, responses={202: EvalJobOut, **ERRORS})
class JudgmentComputeApi(_JobApi):
    roles = EVALUATE
    serializer_class = EvalJobOut

    def started(self, request, version_id: int):
        version = self.version(request, version_id)
        job = services.judgments_compute_enqueue(version=version, created_by=request.user)
        return {"job_id": job.pk, "rows": version.judgment_sets.count()}


def _provider(request, provider_id, project):
    """A provider the user may use on the project (others answer like missing ones), else the
    project's default."""
    if provider_id is None:
        return provider_for(project)
    provider = selectors.providers_for(request.user, project).filter(pk=provider_id).first()
    if provider is None:
        raise NotFound(f"No LLM provider {provider_id}.")
    return provider


@extend_schema(request=RunModelIn, responses={202: RunModelOut, **ERRORS})
class RunModelApi(_JobApi):
    """Start (or resume) a run of a VLM, or of a scorer for a family scored by one, on a
    version; the job answers every item with the official prompt and computes the metrics."""

    roles = EVALUATE
    serializer_class = RunModelIn

    def started(self, request, version_id: int):
        version = self.version(request, version_id)
        data = self.body(request)
        common = {
            "version": version,
            "created_by": request.user,
            "limit": data.get("limit"),
            "label": data["label"],
            "model_name": data["model_name"],
        }
        runner = family_of(version.benchmark.family).runner
        if isinstance(runner, ScorerRunner):
            scorer = Scorer.objects.filter(pk=data.get("scorer_id") or 0).first()
            if scorer is None:
                raise Invalid("Give the scorer_id of the scorer to run.")
            job = runners.score_model_start(scorer=scorer, **common)
        else:
            # The family's own options as given; another family's only when set (refused).
            own = runner.options.names if isinstance(runner, LLMRunner) else ()
            names = [o.name for f in runners.option_owners() for o in f.runner.options.fields]
            job = runners.run_model_start(
                provider=_provider(request, data.get("provider_id"), version.benchmark.project),
                seed=data["seed"],
                options={k: data[k] for k in names if k in own or data[k]},
                **common,
            )
        return {"job_id": job.pk, "run_id": job.params["run_id"], "items": version.kept_count}


@extend_schema(request=JudgeIn, responses={202: JudgeOut, **ERRORS})
class JudgeApi(_JobApi):
    """Judge pairs of a version whose family has an LLM judge, in both orders, in a job:
    explicit pairs, or pairs drawn with a seed for one model (against the reference and one
    random other model)."""

    roles = EVALUATE
    serializer_class = JudgeIn

    def started(self, request, version_id: int):
        version = self.version(request, version_id)
        data = self.body(request)
        judge = services.require_pairwise(version).judge
        if judge is None:
            raise Invalid("This benchmark family has no LLM judge.")
        options = {**data, "instances": data["instances"] or judge.default_instances}
        pairs = [dict(p) for p in data["pairs"]] if data.get("pairs") else None
        if pairs is None and not data["model"]:
            raise Invalid("Give the pairs to judge, or the model to draw pairs for.")
        job, pairs = services.judge_start(
            version=version,
            judge=judge,
            options=options,
            provider=_provider(request, data.get("provider_id"), version.benchmark.project),
            created_by=request.user,
            pairs=pairs,
        )
        return {
            "job_id": job.pk,
            "judgment_set_id": job.params["judgment_set_id"],
            "pairs": len(pairs),
        }
