"""The VHExpansion recipe (vhexpansion.txt Sec. 3) declared on the recipe framework: import test
cases, draft their negations and let people check them, add common and adversarial image
variants, export the expanded set and publish it to the evaluation app."""

from __future__ import annotations

from django.db.models import Count, Q
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from curation.recipes.framework.declare import (
    Create,
    Export,
    ItemList,
    Publish,
    Recipe,
    RecipeTemplates,
    RecipeUrlNames,
    Stage,
)
from curation.recipes.framework.registry import register

from . import case_sources, export, negations, selectors, variants, views
from .case_import import IMPORT_JOB, case_set_import_run, case_set_import_start
from .demo import vhexpansion_demo
from .forms import AdversarialForm, ImportForm, PerturbForm, SettingsForm
from .models import VHCase, VHCaseSet

STAGES = (
    Stage(
        "import",
        gettext_lazy("Import"),
        IMPORT_JOB,
        case_set_import_run,
        button=False,
        needs_object=False,
    ),
    Stage(
        "negate",
        gettext_lazy("Draft negations"),
        negations.NEGATE_JOB,
        negations.negations_draft,
        check=negations.negations_check,
        url_name="curator-vhx-negate",
        card=gettext_lazy("Negations"),
        started=gettext_lazy("Drafting negations"),
    ),
    Stage(
        "perturb",
        gettext_lazy("Common perturbations"),
        variants.PERTURB_JOB,
        variants.variants_perturb,
        check=variants.perturb_check,
        form=PerturbForm,
        url_name="curator-vhx-perturb",
        started=gettext_lazy("Common perturbations"),
    ),
    Stage(
        "adversarial",
        gettext_lazy("Adversarial perturbation"),
        variants.ADVERSARIAL_JOB,
        variants.variants_adversarial,
        check=variants.adversarial_check,
        form=AdversarialForm,
        url_name="curator-vhx-adversarial",
        card=gettext_lazy("Adversarial"),
        started=gettext_lazy("Adversarial perturbation"),
    ),
)


def _export_label(params: dict) -> str:
    fmt = params.get("fmt", "")
    return _("Export: %(format)s") % {"format": views.FORMAT_LABELS.get(fmt, fmt)}


EXPORT = Export(
    job_kind=export.EXPORT_JOB,
    run=export.export_run,
    check=export.export_check,
    unknown=lambda params: (
        ""
        if params["fmt"] in export.FORMATS
        else _("Unknown export format; choose jsonl or llava.")
    ),
    label=_export_label,
    what=lambda params: params["fmt"].upper(),
    variant=lambda params: params.get("fmt", ""),
    variants=export.FORMATS,
    cards=20,
    url_name="curator-vhx-export",
    buttons=tuple((label, {"fmt": fmt}) for fmt, label in views.FORMAT_LABELS.items()),
    file_url_name="curator-vhx-export-file",
    layout=lambda params: str(views.FORMAT_LAYOUTS.get(params.get("fmt", ""), "")),
    reads=lambda params: str(views.FORMAT_READERS.get(params.get("fmt", ""), "")),
)


CASES = ItemList(
    url="cases/",
    url_name="curator-vhx-cases",
    template="vhexpansion/cases.html",
    rows=selectors.cases_page,
    counts=selectors.case_states,
    choices=VHCase.NegationState.choices,
)


def _published(version) -> str:
    return _("Published %(n)d test cases as %(label)s.") % {
        "n": version.item_count,
        "label": version,
    }


RECIPE = register(
    Recipe(
        key="vhexpansion",
        label="VHExpansion",
        model=VHCaseSet,
        pk_kwarg="set_id",
        job_param="case_set_id",
        names=RecipeUrlNames(
            list="curator-vhx-sets",
            detail="curator-vhx-set",
            new="curator-vhx-new",
            settings="curator-vhx-settings",
        ),
        context_name="case_set",
        list_key="sets",
        order=20,
        templates=RecipeTemplates(
            list="vhexpansion/sets.html",
            detail="vhexpansion/set.html",
            funnel="vhexpansion/_funnel.html",
            form="vhexpansion/new.html",
        ),
        stages=STAGES,
        queues=(negations.REVIEW_QUEUE,),
        outcomes={negations.OUTCOME_HANDLER: negations.negation_review_record},
        exports=(EXPORT,),
        lists=(CASES,),
        publishes=Publish(
            family=export.FAMILY,
            items=export.published_items,
            source=lambda case_set: f"vhexpansion set {case_set.pk}: {case_set.name}",
            done=_published,
            name=lambda case_set: f"{case_set.name} · {case_set.project.slug}"[:200],
            url_name="curator-vhx-publish",
        ),
        funnel=selectors.funnel,
        bar=lambda f: f["cases"],
        list_counts={
            "n_cases": Count("cases", distinct=True),
            "n_accepted": Count(
                "cases",
                filter=Q(cases__negation_state=VHCase.NegationState.ACCEPTED),
                distinct=True,
            ),
        },
        detail_context=views.detail_context,
        create_form=ImportForm,
        create=case_set_import_start,
        created=views.imported,
        creates=(
            Create(
                url="from-naturalbench/",
                url_name="curator-vhx-from-naturalbench",
                form=views.naturalbench_form,
                create=case_sources.case_set_from_naturalbench,
                done=gettext_lazy("Test cases created from NaturalBench."),
                context_name="nb_form",
            ),
        ),
        settings_form=SettingsForm,
        update=negations.case_set_settings,
        settings_saved=gettext_lazy("Review settings saved."),
        demo=vhexpansion_demo,
    )
)
