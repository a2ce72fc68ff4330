"""The hunt demo: a small open round on the demo corpus whose two targets are stand-ins
(offline rules, labelled as such everywhere) and whose blind model is the offline blind
baseline, so a visitor can hunt with no key."""

from __future__ import annotations

from annotator.platform.models import Project
from curation.corpora import demo_corpus
from curation.models import LLMProvider
from curation.recipes.framework.demo import demo_once
from curation.scorers import scorer_tiny

from .models import HuntRound
from .rounds import round_create

NAME = "Hunt demo (stand-in targets)"
STANDINS = ("Stand-in target A (offline rule)", "Stand-in target B (offline rule)")
INSTRUCTIONS = (
    "Write a yes/no question about the picture that a model gets **wrong**. The two targets "
    "here are *stand-ins* (offline rules, not models) so the demo runs without a key. Then pick "
    "a similar picture where the answer flips, and a second question."
)


@demo_once(HuntRound, NAME)
def hunt_demo(*, project: Project, curator) -> HuntRound:
    corpus = demo_corpus(project=project, created_by=curator)
    targets = [
        LLMProvider.objects.get_or_create(
            project=project,
            name=name,
            defaults={"kind": LLMProvider.Kind.OFFLINE, "model": f"standin-{name[17].lower()}"},
        )[0]
        for name in STANDINS
    ]
    return round_create(
        project=project,
        created_by=curator,
        name=NAME,
        corpus=corpus,
        targets=targets,
        scorer=scorer_tiny(),
        blind=None,
        instructions=INSTRUCTIONS,
        hide_targets=False,
        max_per_minute=20,
        demo=True,
    )
