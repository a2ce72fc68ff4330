"""Opening and changing a hunt round (curators), and what a worker may reach: the open rounds
of their projects and their own candidates only."""

from __future__ import annotations

from django.db import transaction
from django.db.models import QuerySet

from annotator.platform.errors import Invalid
from annotator.platform.models import taken_refused
from annotator.platform.scoping import projects_for
from curation.models import LLMProvider
from curation.recipes.framework.queues import queues_follow

from .asking import templates_ensure
from .checks import VERIFY_QUEUE
from .models import HuntCandidate, HuntRound, HuntTarget

MAX_TARGETS = 8
SETTINGS = (
    "question_type",
    "instructions",
    "max_items_per_worker",
    "max_per_minute",
    "points_per_item",
    "hide_targets",
    "verifiers",
    "neighbours",
    "demo",
)
DEFAULTS = {
    "question_type": HuntRound.QuestionType.YES_NO,
    "max_items_per_worker": 50,
    "max_per_minute": 6,
    "points_per_item": 10,
    "hide_targets": True,
    "verifiers": 2,
    "neighbours": 6,
}


def alias(position: int) -> str:
    return f"Model {chr(ord('A') + position - 1)}"


def _targets_set(round_: HuntRound, providers: list[LLMProvider]) -> None:
    if not providers:
        raise Invalid("Choose at least one target model.")
    if len(providers) > MAX_TARGETS:
        raise Invalid(f"At most {MAX_TARGETS} target models per round.")
    for provider in providers:
        if provider.kind == LLMProvider.Kind.OPENAI and not provider.supports_vision:
            raise Invalid(
                f"{provider.name} does not accept images: a target must see the image (tick "
                "'supports vision' on its page) or be a stand-in."
            )
    HuntTarget.objects.filter(round=round_).delete()
    HuntTarget.objects.bulk_create(
        [
            HuntTarget(round=round_, provider=p, position=k, alias=alias(k))
            for k, p in enumerate(providers, start=1)
        ]
    )


def round_create(
    *, project, created_by, name: str, corpus, targets, scorer=None, blind=None, **settings
) -> HuntRound:
    """Open a round in ``project`` (its corpus, scorer and providers are checked by the form)."""
    if corpus.project_id != project.pk:
        raise Invalid("The image pool must be a corpus of this project.")
    if not corpus.sample_count:
        raise Invalid("The image pool is empty: import images into the corpus first.")
    templates_ensure()
    with transaction.atomic():
        with taken_refused(f"This project already has a round named {name!r}."):
            round_ = HuntRound.objects.create(
                project=project,
                created_by=created_by,
                name=name,
                corpus=corpus,
                scorer=scorer,
                blind=blind,
                **{**DEFAULTS, **{k: v for k, v in settings.items() if k in SETTINGS}},
            )
        _targets_set(round_, list(targets))
    return round_


def round_update(round_: HuntRound, *, targets=None, blind=None, scorer=None, **settings) -> None:
    """Change a round's settings; its targets only while no one has hunted in it."""
    with transaction.atomic():
        for name in SETTINGS:
            if name in settings:
                setattr(round_, name, settings[name])
        round_.blind, round_.scorer = blind, scorer
        if "state" in settings:
            round_.state = settings["state"]
        round_.save()
        if targets is not None:
            chosen = [t.pk for t in targets]
            have = list(round_.targets.order_by("position").values_list("provider_id", flat=True))
            if chosen != have:
                if round_.candidates.exists():
                    raise Invalid("People have hunted in this round: its targets stay as they are.")
                _targets_set(round_, list(targets))
        queues_follow(round_, (VERIFY_QUEUE,))


def rounds_open_for(worker) -> QuerySet[HuntRound]:
    """The open rounds of the worker's projects, newest first."""
    return HuntRound.objects.filter(
        project__in=projects_for(worker), state=HuntRound.State.OPEN
    ).select_related("project")


def candidates_of(worker, round_: HuntRound) -> QuerySet[HuntCandidate]:
    """The worker's own candidates in the round (no one sees another worker's)."""
    return HuntCandidate.objects.filter(round=round_, worker=worker)
