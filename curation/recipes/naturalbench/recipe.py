"""The NaturalBench recipe (naturalbench.txt Sec. 3, App. A–C) declared on the recipe framework:
mine confounding pairs, verify them, draft questions with an LLM, keep those two annotators
answer as intended, assemble balanced 2 × 2 samples, tag skills and export frozen versions."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from curation.recipes.framework.declare import (
    ItemList,
    Page,
    Publish,
    Recipe,
    RecipeTemplates,
    RecipeUrlNames,
    Stage,
)
from curation.recipes.framework.registry import register

from . import (
    export,
    mining,
    pairs,
    prompts,  # noqa: F401  (importing it registers the offline drafter's rules)
    questions,
    samples,
    selectors,
    tags,
    views,
)
from .demo import naturalbench_demo
from .forms import ExportForm, PipelineForm
from .models import ConfoundingPair, NaturalBenchPipeline, NaturalBenchSample, PairQuestionSet
from .pipelines import pipeline_create, pipeline_update


# --------------------------------------------------------------------------------------------
# the stages: what each runs, and why it cannot start now ("" = it can)
# --------------------------------------------------------------------------------------------
def _mine_blocker(pipeline, f: dict) -> str:
    if f["pairs"]["all"] and f["pairs"]["all"] != f["pairs"]["mined"]:
        return "Pairs are being verified already; make a new pipeline to mine again."
    return ""


def _draft_blocker(pipeline, f: dict) -> str:
    todo = f["questions"]["pending"] + f["questions"]["to_create"]
    return "" if todo else "No verified pair waits for questions."


def _unless(group: str, count: str, refusal: str):
    """Blocked with ``refusal`` while the funnel's ``group``/``count`` is zero."""
    return lambda pipeline, f: "" if f[group][count] else refusal


def _stage(name, label, run, blocked_by, **extra) -> Stage:
    # Job kind "naturalbench.<name>"; one job per stage and pipeline at a time (refused while
    # one is queued or running).
    kind = f"naturalbench.{name}"
    return Stage(name, label, kind, run, blocked_by, one_at_a_time=True, **extra)


STAGES = (
    _stage("mine", _("Mine pairs"), mining.pairs_mine, _mine_blocker, check=mining.weights_check),
    _stage(
        "verify",
        _("Send pairs to verification"),
        pairs.pairs_send_to_review,
        _unless("pairs", "mined", "No mined pair waits for verification."),
    ),
    _stage("draft", _("Draft questions"), questions.questions_draft, _draft_blocker),
    _stage(
        "assemble",
        _("Assemble samples"),
        samples.samples_assemble,
        _unless("questions", "to_assemble", "No kept question pair to assemble."),
    ),
    _stage(
        "tag",
        _("Send to skill tagging"),
        tags.skills_send_to_tagging,
        _unless("samples", "untagged", "No assembled sample waits for tags."),
    ),
    _stage(
        "export",
        _("Export a version"),
        export.version_export_run,
        _unless("samples", "assembled", "No assembled sample to export yet."),
        form=ExportForm,
    ),
)


def _list(name: str, rows, choices, **extra) -> ItemList:
    """The list behind the funnel's ``name`` counts at <pipeline>/<name>/, 20 a page."""
    template = f"naturalbench/{name}.html"
    counts = views.list_counts(name, choices)
    url, url_name = f"{name}/", f"curator-nb-{name}"
    return ItemList(url, url_name, template, rows, counts, choices, page_size=20, **extra)


LISTS = (
    _list("pairs", selectors.pairs_page, ConfoundingPair.State.choices),
    _list(
        "questions",
        selectors.question_sets_page,
        PairQuestionSet.State.choices,
        extra=views.draft_limit,
    ),
    _list("samples", selectors.samples_page, NaturalBenchSample.State.choices),
)


RECIPE = register(
    Recipe(
        key="naturalbench",
        label="NaturalBench",
        model=NaturalBenchPipeline,
        pk_kwarg="pipeline_id",
        names=RecipeUrlNames(
            list="curator-nb-pipelines",
            detail="curator-nb-pipeline",
            new="curator-nb-new",
            settings="curator-nb-settings",
            stage="curator-nb-stage",
        ),
        context_name="pipeline",
        order=10,
        templates=RecipeTemplates(
            list="naturalbench/pipelines.html",
            detail="naturalbench/pipeline.html",
            funnel="naturalbench/_funnel.html",
            form="naturalbench/form.html",
            settings_page=True,
        ),
        stages=STAGES,
        lists=LISTS,
        pages=(
            # A version's dataset card and its files, for the project's researchers too.
            Page(
                "versions/<int:version_id>/",
                views.version_detail,
                "curator-nb-version",
                readers=True,
            ),
            # The version files, for the project's researchers too.
            Page(
                "versions/<int:version_id>/<slug:fmt>/",
                views.version_download,
                "curator-nb-download",
                readers=True,
            ),
        ),
        queues=(pairs.PAIR_QUEUE, questions.ANSWER_QUEUE, tags.TAG_QUEUE),
        outcomes={
            pairs.PAIR_HANDLER: pairs.pair_review_record,
            questions.ANSWER_HANDLER: questions.answer_record,
            tags.TAG_HANDLER: tags.skill_tags_record,
        },
        # Every export is also a published version of the pipeline's benchmark: the export stage
        # passes the items it read back from the JSONL it wrote (no publish form of its own).
        publishes=Publish(family=export.FAMILY, name=export.benchmark_name),
        funnel=selectors.funnel,
        bar=lambda f: f["corpus"]["samples"],
        select_related=("project", "corpus", "provider", "created_by"),
        detail_context=views.detail_context,
        funnel_extra=True,
        create_form=PipelineForm,
        create=pipeline_create,
        created=_("Pipeline created. Mine pairs to start."),
        settings_form=PipelineForm,
        update=pipeline_update,
        demo=naturalbench_demo,
        version_files=views.version_files,
    )
)
