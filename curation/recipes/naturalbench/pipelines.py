"""A NaturalBench pipeline and its settings (naturalbench.txt Sec. 3, App. A–C).

The stages, in order, each in its own module: ``mining`` (captions shortened when too long,
Eq. 1 mining or the random baseline) → ``pairs`` (people verify them) → ``questions`` (App. A
drafts, answered by two people, drafted again when an answer fails) → ``samples`` (checked 2 × 2
samples) → ``tags`` (App. C skills) → ``export`` (a frozen, content-hashed version). ``recipe.py``
declares them as stages of the recipe framework.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Exists, OuterRef, Q

from annotator.platform.errors import Invalid
from annotator.platform.models import Project
from curation.models import Caption, Corpus, Sample
from curation.recipes.framework import settings
from curation.recipes.framework.queues import queues_follow
from curation.recipes.framework.registry import recipe_for
from evaluation.families.naturalbench import layout as nb

from . import prompts
from .models import NaturalBenchPipeline

MAX_PEOPLE = 10
MAX_REGENERATIONS = 10
MIN_CAPTION_CHARS = 20
YES_NO, MULTIPLE_CHOICE = nb.YES_NO, nb.MULTIPLE_CHOICE

# Settings that decide which pairs exist: fixed once pairs are mined.
MINING_FIELDS = (
    "corpus",
    "scorers",
    "method",
    "language",
    "caption_max_chars",
    "random_pairs",
    "seed",
)
FIELDS = (
    *MINING_FIELDS,
    "name",
    "question_types",
    "annotators_per_item",
    "taggers_per_item",
    "max_regenerations",
    "provider",
    "auto_regenerate",
)
# The model's defaults; the paper's question type when none is chosen.
DEFAULTS: dict[str, Any] = {
    **settings.model_defaults(NaturalBenchPipeline, FIELDS),
    "question_types": [YES_NO],
}
_NUMBERS = (
    ("annotators_per_item", 1, MAX_PEOPLE, "Annotators per item"),
    ("taggers_per_item", 1, MAX_PEOPLE, "Taggers per question"),
    ("max_regenerations", 0, MAX_REGENERATIONS, "Maximum regenerations"),
)


def language_matches(code: str) -> Q:
    """Captions in ``code`` ("zh" also takes "zh-Hans", …)."""
    return Q(language__iexact=code) | Q(language__istartswith=f"{code}-")


def captioned_samples(corpus_id: int, language: str) -> int:
    """How many samples of the corpus have a caption in ``language`` (what pairs are made of)."""
    captioned = Caption.objects.filter(sample=OuterRef("pk")).filter(language_matches(language))
    return Sample.objects.filter(corpus_id=corpus_id).filter(Exists(captioned)).count()


# --------------------------------------------------------------------------------------------
# checking the settings (every problem is listed, in field order; nothing is written)
# --------------------------------------------------------------------------------------------
class _Problems(list):
    def bad(self, field: str, message: str) -> None:
        self.append({"line": 0, "field": field, "error": message})


def _clean_name(problems: _Problems, project: Project, values: dict, pipeline) -> None:
    name = " ".join(str(values.get("name") or "").split())
    taken = NaturalBenchPipeline.objects.filter(project=project, name=name).exclude(
        pk=getattr(pipeline, "pk", None)
    )
    if not name:
        problems.bad("name", "Give the pipeline a name.")
    elif len(name) > 200:
        problems.bad("name", "The name is longer than 200 characters.")
    elif taken.exists():
        problems.bad("name", f"This project already has a NaturalBench pipeline named {name!r}.")
    values["name"] = name


def _clean_pairing(problems: _Problems, project: Project, values: dict) -> Corpus | None:
    """Corpus, method, scorers and language: what decides the pairs."""
    corpus = values.get("corpus")
    if not isinstance(corpus, Corpus) or corpus.project_id != project.pk:
        problems.bad("corpus", "Choose a corpus of this project.")
        corpus = None
    method = values.get("method") or NaturalBenchPipeline.Method.EQ1
    if method not in NaturalBenchPipeline.Method.values:
        problems.bad("method", f"Unknown mining method {method!r}.")
    values["method"] = method
    scorers = list(values.get("scorers") or [])
    if method != NaturalBenchPipeline.Method.RANDOM and not scorers:
        problems.bad(
            "scorers", "Eq. 1 mining needs at least one scorer (add one on the Scorers page)."
        )
    values["scorers"] = scorers
    language = str(values.get("language") or "").strip()
    if not language or len(language) > 35:
        problems.bad("language", "Give the language of the captions to pair (e.g. en, zh, hi).")
    values["language"] = language
    return corpus


def _clean_types(problems: _Problems, values: dict) -> None:
    types = list(dict.fromkeys(values.get("question_types") or []))
    language = values["language"]
    if not types or any(t not in nb.QUESTION_TYPES for t in types):
        problems.bad("question_types", "Choose yes/no, multiple-choice or both.")
    elif MULTIPLE_CHOICE in types and not prompts.is_english(language):
        problems.bad(
            "question_types",
            "The paper's multiple-choice prompt is English only (App. A); for "
            f"{prompts.language_name(language)} choose yes/no.",
        )
    values["question_types"] = [t for t in nb.QUESTION_TYPES if t in types]


def _clean_numbers(problems: _Problems, project: Project, values: dict) -> None:
    for field, low, high, label in _NUMBERS:
        value = values.get(field)
        if not isinstance(value, int) or not low <= value <= high:
            problems.bad(field, f"{label} must be a whole number from {low} to {high}.")
    limit = values.get("caption_max_chars")
    if limit is not None and (not isinstance(limit, int) or limit < MIN_CAPTION_CHARS):
        problems.bad("caption_max_chars", f"A caption limit must be at least {MIN_CAPTION_CHARS}.")
    n_pairs = values.get("random_pairs")
    if n_pairs is not None and (not isinstance(n_pairs, int) or n_pairs < 1):
        problems.bad(
            "random_pairs", "The number of random pairs must be at least 1 (or empty: all)."
        )
    seed = values.get("seed", 0)
    if not isinstance(seed, int) or not 0 <= seed < 2**31:
        problems.bad("seed", "The seed is a whole number from 0 to 2147483647.")
    provider = values.get("provider")
    if provider is not None and provider.project_id not in (None, project.pk):
        problems.bad("provider", "Choose a provider of this project or a shared one.")


def _clean(project: Project, values: dict[str, Any], pipeline=None) -> dict[str, Any]:
    """Check every setting; Invalid lists each problem (nothing is written)."""
    problems = _Problems()
    _clean_name(problems, project, values, pipeline)
    corpus = _clean_pairing(problems, project, values)
    _clean_types(problems, values)
    _clean_numbers(problems, project, values)
    language = values["language"]
    if corpus is not None and language and not problems:
        n = captioned_samples(corpus.pk, language)
        if n < 2:
            problems.bad(
                "language",
                f"Corpus {corpus.name!r} has {n} sample(s) with a caption in {language!r}; "
                "pairs need at least two.",
            )
    if problems:
        raise Invalid("The pipeline settings are not valid; nothing was saved.", list(problems))
    return values


def _known(fields: dict) -> None:
    unknown = set(fields) - set(FIELDS)
    if unknown:
        raise Invalid(f"Unknown pipeline settings: {', '.join(sorted(unknown))}")


# --------------------------------------------------------------------------------------------
# create and update
# --------------------------------------------------------------------------------------------
def pipeline_create(*, project: Project, created_by=None, demo: bool = False, **fields: Any):
    """A new pipeline with checked settings (Invalid lists every problem)."""
    _known(fields)
    values = _clean(project, {**DEFAULTS, **fields})
    return settings.settings_create(
        NaturalBenchPipeline, values, project=project, created_by=created_by, demo=demo
    )


def _changed_mining(values: dict, current: dict) -> list[str]:
    def differs(field: str) -> bool:
        if field == "scorers":
            return {s.pk for s in values[field]} != {s.pk for s in current[field]}
        return values[field] != current[field]

    return [f for f in MINING_FIELDS if differs(f)]


def pipeline_update(pipeline: NaturalBenchPipeline, **fields: Any) -> NaturalBenchPipeline:
    """Change settings. Those that decide the pairs are fixed once pairs exist; the number of
    annotators and taggers follows into the queues (open tasks not escalated yet)."""
    _known(fields)
    current = settings.settings_of(pipeline, FIELDS)
    values = _clean(pipeline.project, {**current, **fields}, pipeline=pipeline)
    changed = _changed_mining(values, current) if pipeline.pairs.exists() else []
    if changed:
        raise Invalid(
            "Pairs are mined already: these settings decide which pairs exist and can no "
            f"longer change ({', '.join(changed)}). Make a new pipeline instead."
        )
    with transaction.atomic():
        settings.settings_save(pipeline, values)
        # The queues' people per item as their QueueSpecs give them (answers: no tie-break).
        queues_follow(pipeline, recipe_for(pipeline).queues)
    return pipeline
