"""The hunt (issue 24) declared on the recipe framework: curators open rounds; crowdworkers hunt
in them (``workers``: their own pages, and a home-page card); the models answer in the
``hunt.ask`` job; blindspots are verified in a ``vqa_choice`` queue and published as a
NaturalBench-family version."""

from __future__ import annotations

from django.db.models import Count, Q
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from curation.recipes.framework.declare import (
    Export,
    Publish,
    Recipe,
    RecipeTemplates,
    RecipeUrlNames,
    Stage,
    WorkerPage,
    Workers,
)
from curation.recipes.framework.registry import register

from . import parquet, publish, rounds, selectors, views
from .asking import ASK_JOB, ask_run
from .candidates import candidate_job_failed
from .checks import CHECK_HANDLER, VERIFY_QUEUE, check_record
from .demo import hunt_demo
from .forms import RoundForm, SettingsForm
from .models import HuntCandidate, HuntRound

POST = ("POST",)


def _published(version) -> str:
    return _("Published %(n)d hunted samples as %(label)s.") % {
        "n": version.item_count,
        "label": version,
    }


def _update(round_: HuntRound, **data) -> None:
    rounds.round_update(round_, **data)


RECIPE = register(
    Recipe(
        key="hunt",
        label="Hunts",
        model=HuntRound,
        pk_kwarg="round_id",
        names=RecipeUrlNames(
            list="curator-hunt-rounds",
            detail="curator-hunt-round",
            new="curator-hunt-new",
            settings="curator-hunt-settings",
        ),
        context_name="round",
        select_related=("project", "blind"),  # what the hunt.ask job reads of its round
        list_key="rounds",
        order=50,
        templates=RecipeTemplates(
            detail="hunt/round.html",
            funnel="hunt/_funnel.html",
        ),
        stages=(
            Stage(
                "ask",
                gettext_lazy("Models answer"),
                ASK_JOB,
                ask_run,
                button=False,
                on_failed=candidate_job_failed,
            ),
        ),
        queues=(VERIFY_QUEUE,),
        outcomes={CHECK_HANDLER: check_record},
        exports=(
            Export(
                job_kind=publish.EXPORT_JOB,
                run=publish.export_run,
                params=publish.export_params,
                check=publish.export_check,
                unknown=publish.export_unknown,
                label=publish.export_label,
                what=lambda p: "NaturalBench Parquet" if p["fmt"] == "parquet" else "JSONL",
                url_name="curator-hunt-export",
                file_url_name="curator-hunt-export-file",
                layout=lambda p: str(
                    parquet.LAYOUT if p.get("fmt") == "parquet" else publish.EXPORT_LAYOUT
                ),
                reads=lambda p: str(
                    parquet.READS if p.get("fmt") == "parquet" else publish.EXPORT_READS
                ),
                buttons=(
                    (gettext_lazy("Items with every model answer (JSONL)"), {"fmt": "jsonl"}),
                    (
                        gettext_lazy("Newest published version as NaturalBench Parquet"),
                        {"fmt": "parquet"},
                    ),
                ),
            ),
        ),
        publishes=Publish(
            family=publish.FAMILY,
            items=publish.published_items,
            source=lambda r: f"hunt round {r.pk}: {r.name}",
            done=_published,
            name=lambda r: f"{r.name} · {r.project.slug}"[:200],
            url_name="curator-hunt-publish",
        ),
        funnel=selectors.funnel,
        bar=lambda f: f["written"],
        list_counts={
            "n_items": Count("candidates", distinct=True),
            "n_validated": Count(
                "candidates",
                filter=Q(candidates__state=HuntCandidate.State.VALIDATED),
                distinct=True,
            ),
        },
        detail_context=views.detail_context,
        create_form=RoundForm,
        create=rounds.round_create,
        settings_form=SettingsForm,
        update=_update,
        workers=Workers(
            pages=(
                WorkerPage("", views.workspace, "hunt-work"),
                WorkerPage("submit/", views.submit, "hunt-submit", POST),
                WorkerPage("mine/", views.mine, "hunt-mine"),
                WorkerPage("items/<int:candidate_id>/", views.item, "hunt-item"),
                WorkerPage(
                    "items/<int:candidate_id>/partner/", views.partner, "hunt-partner", POST
                ),
                WorkerPage("items/<int:candidate_id>/again/", views.again, "hunt-again", POST),
            ),
            open_when={"state": HuntRound.State.OPEN},
            select_related=("blind",),  # its name is on every worker page: read with the round
            home_template="hunt/_home.html",
            home_context=views.home_context,
        ),
        demo=hunt_demo,
    )
)
