"""VisIT-Bench (visit-bench.txt Sec. 2–4, App. C–F) on the recipe framework: instruction
families, crowd-written instructions and instruction-conditioned captions, LLM references
people verify, forced-choice A/B ratings fed to the evaluation app, and a living leaderboard
judged by the LLM judge.

Importing this module registers the recipe (its jobs, outcome handlers and pages) and, through
``prompts``, the offline reference rule.
"""

from __future__ import annotations

from django.db.models import Count
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from curation.recipes.framework.declare import (
    Export,
    ItemList,
    Publish,
    Recipe,
    RecipeTemplates,
    RecipeUrlNames,
    Stage,
)
from curation.recipes.framework.forms import NameForm
from curation.recipes.framework.registry import register

from . import (
    categories,
    dataset,
    demo,
    export,
    fetch,
    forms,
    pipelines,
    publish,
    ratings,
    references,
    selectors,
    views,
)
from .models import VisitInstance, VisitPipeline


def _published(version) -> str:
    return _("Published %(n)d instances (%(k)d verified) as %(v)s.") % {
        "n": version.item_count,
        "k": version.kept_count,
        "v": version,
    }


RECIPE = register(
    Recipe(
        key="visit",
        label="VisIT-Bench",
        model=VisitPipeline,
        pk_kwarg="pipeline_id",
        context_name="pipeline",
        order=40,
        names=RecipeUrlNames(
            list="curator-visit-pipelines",
            detail="curator-visit-pipeline",
            new="curator-visit-new",
            settings="curator-visit-settings",
        ),
        templates=RecipeTemplates(
            list="visit/pipelines.html",
            detail="visit/pipeline.html",
            funnel="visit/_funnel.html",
            form="visit/new.html",
        ),
        stages=(
            Stage(
                name="import",
                label=gettext_lazy("Dataset import"),
                job_kind=pipelines.IMPORT_JOB,
                run=dataset.dataset_import_run,
                button=False,
            ),
            Stage(
                name="fetch",
                label=gettext_lazy("Image fetch"),
                job_kind=pipelines.FETCH_JOB,
                run=fetch.images_fetch,
                check=fetch.fetch_check,
                url_name="curator-visit-fetch",
                started=gettext_lazy("Fetching the remote images"),
            ),
            Stage(
                name="draft",
                label=gettext_lazy("Reference drafts"),
                job_kind=pipelines.DRAFT_JOB,
                run=references.references_draft,
                check=references.draft_check,
                url_name="curator-visit-draft",
                started=gettext_lazy("Drafting references"),
            ),
            Stage(
                name="sync",
                label=gettext_lazy("Crowd votes → ratings"),
                job_kind=pipelines.SYNC_JOB,
                run=ratings.human_votes_sync,
                check=ratings.sync_check,
                url_name="curator-visit-sync",
                started=gettext_lazy("Rating the crowd votes"),
                refused_at="ratings",
            ),
        ),
        queues=pipelines.QUEUES,
        outcomes={
            pipelines.INSTRUCTION_HANDLER: categories.instruction_record,
            pipelines.CAPTION_HANDLER: references.caption_record,
            pipelines.REVIEW_HANDLER: references.reference_review_record,
            pipelines.RATING_HANDLER: ratings.pair_rating_record,
        },
        exports=(
            Export(
                job_kind=pipelines.EXPORT_JOB,
                run=export.export_run,
                check=export.export_check,
                unknown=export.export_unknown,
                label=export.export_label,
                what=export.export_what,
                variant=lambda p: (p.get("what"), p.get("fmt")),
                variants=export.EXPORTS,
                url="export/<str:what>.<str:fmt>",
                url_name="curator-visit-export",
                file_url_name="curator-visit-export-file",
                layout=export.export_layout,
                reads=export.export_reads,
                anchor="export",
                refused_at="export",
            ),
        ),
        publishes=Publish(
            family="visit",
            items=publish.version_items,
            name=publish.benchmark_name,
            source=publish.version_source,
            published=publish.version_published,
            done=_published,
            versions=publish.published_versions,
            form=forms.PublishForm,
            initial=lambda pipeline: {"benchmark": pipeline.name},
            url_name="curator-visit-publish",
            back="publish",
            then="responses",
        ),
        funnel=selectors.funnel,
        select_related=("project", "provider"),
        list_counts={"n_families": Count("categories", distinct=True), **selectors.INSTANCE_COUNTS},
        detail_context=views.detail_context,
        create_form=NameForm,  # the pipeline's name and description
        create=pipelines.pipeline_create,
        created=gettext_lazy("Pipeline created."),
        settings_form=forms.SettingsForm,
        update=pipelines.pipeline_settings,
        pages=views.PAGES,
        lists=(
            ItemList(
                url="instances/",
                url_name="curator-visit-instances",
                template="visit/instances.html",
                rows=selectors.instances_page,
                counts=selectors.instance_counts,
                choices=[
                    c for c in VisitInstance.State.choices if c[0] != VisitInstance.State.SEED
                ],
                params=views.category_param,
            ),
        ),
        api_urls="curation.recipes.visit.api",
        demo=demo.visit_demo,
    )
)
