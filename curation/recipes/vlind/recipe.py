"""VLind-Bench (vlind-bench.txt Sec. 3–4, App. A–C) on the recipe framework: LLM-drafted
counterfactual triples, three reviewers per triple and per image, counterfactual and factual
images, VP nouns, and the CK / VP / CB / LP test set in the published ``data.json`` layout.

Importing this module registers the recipe (its jobs, outcome handlers and pages) and, through
``prompts``, the offline drafter rules.
"""

from __future__ import annotations

from django.db.models import Count, Q
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from curation.recipes.framework.declare import (
    Export,
    Page,
    Publish,
    Recipe,
    RecipeTemplates,
    RecipeUrlNames,
    Stage,
)
from curation.recipes.framework.registry import register

from . import benches, demo, export, forms, generation, images, nouns, selectors, triples, views
from .models import VLindBench, VLindTriple

TRIPLE = "triples/<int:triple_id>/"  # one triple's page and its POSTs, under the bench
POST = ("POST",)
KEPT = VLindTriple.Status.KEPT

RECIPE = register(
    Recipe(
        key="vlind",
        label="VLind-Bench",
        model=VLindBench,
        pk_kwarg="bench_id",
        context_name="bench",
        list_key="benches",
        order=30,
        names=RecipeUrlNames(
            list="curator-vlind-benches",
            detail="curator-vlind-bench",
            new="curator-vlind-new",
            settings="curator-vlind-settings",
        ),
        templates=RecipeTemplates(
            list="vlind/benches.html",
            detail="vlind/bench.html",
            funnel="vlind/_funnel.html",
            form="vlind/new.html",
        ),
        stages=(
            Stage(
                name="draft",
                label=gettext_lazy("Triples"),
                job_kind=benches.DRAFT_JOB,
                run=triples.triples_draft,
                check=triples.draft_check,
                form=forms.DraftForm,
                url_name="curator-vlind-draft",
                started=gettext_lazy("Drafting triples"),
            ),
            Stage(
                name="images",
                label=gettext_lazy("Images"),
                job_kind=benches.IMAGES_JOB,
                run=generation.images_generate,
                check=generation.generate_check,
                url_name="curator-vlind-generate",
                started=gettext_lazy("Generating images"),
            ),
            Stage(
                name="nouns",
                label=gettext_lazy("VP nouns"),
                job_kind=benches.NOUNS_JOB,
                run=nouns.nouns_draft,
                check=nouns.nouns_check,
                url_name="curator-vlind-nouns-draft",
                started=gettext_lazy("Drafting VP nouns"),
            ),
        ),
        queues=(benches.TRIPLE_QUEUE, benches.IMAGE_QUEUE),
        outcomes={
            benches.TRIPLE_HANDLER: triples.triple_review_record,
            benches.IMAGE_HANDLER: images.image_review_record,
        },
        exports=(
            Export(
                job_kind=benches.EXPORT_JOB,
                run=export.export_run,
                params=export.export_params,
                check=export.export_check,
                label=export.export_label,
                variant=lambda p: (p.get("version_id"), bool(p.get("appendix_b"))),
                cards=4,
                url="export/",
                url_name="curator-vlind-export",
                also=(("versions/<int:version_id>/export/", "curator-vlind-version-export"),),
                file_url_name="curator-vlind-export-file",
                layout=lambda p: str(export.ARCHIVE_LAYOUT),
                reads=lambda p: str(export.ARCHIVE_READS),
                refused_at="export-title",
            ),
        ),
        publishes=Publish(
            family="vlind",
            items=export.published_items,
            source=lambda bench: f"vlind bench {bench.pk}: {bench.name}",
            name=export.benchmark_name,
            done=lambda version: (
                _("Froze %(n)d instances as version %(label)s.")
                % {"n": version.item_count, "label": version.label}
            ),
            url_name="curator-vlind-publish",
        ),
        funnel=selectors.funnel,
        bar=lambda counts: counts["triples"],
        select_related=("project", "image_provider"),  # and the queues (framework)
        list_counts={
            "n_triples": Count("triples", distinct=True),
            "n_kept": Count("triples", filter=Q(triples__status=KEPT), distinct=True),
        },
        detail_context=views.detail_context,
        create_form=forms.BenchForm,
        create=benches.bench_create,
        created=gettext_lazy("VLind-Bench created with the paper's 11 concepts."),
        settings_form=forms.SettingsForm,
        update=benches.bench_settings,
        refuse=views.refuse,
        pages=(
            Page("concepts/new/", views.concept_new, "curator-vlind-concept-new", None),
            Page("concepts/<int:concept_id>/", views.concept_edit, "curator-vlind-concept", None),
            Page("triples/", views.triples, "curator-vlind-triples"),
            Page(TRIPLE, views.triple_detail, "curator-vlind-triple"),
            Page(f"{TRIPLE}images/", views.triple_images, "curator-vlind-upload", POST),
            Page(f"{TRIPLE}factual/", views.triple_factual, "curator-vlind-factual", POST),
            Page(f"{TRIPLE}nouns/", views.triple_nouns, "curator-vlind-nouns", POST),
            Page(f"{TRIPLE}best/", views.triple_best, "curator-vlind-best", POST),
        ),
        demo=demo.vlind_demo,
    )
)
