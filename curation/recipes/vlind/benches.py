"""VLind-Bench benches and concepts (vlind-bench.txt Sec. 4, App. A): the recipe's names, a bench
with the paper's 11 concepts and their 3-shot examples, its settings, and its two review queues
(three reviewers; a triple or image is kept with at least two accepts)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from django.db.models import Max

from annotator.models import Task
from annotator.platform.errors import Invalid
from annotator.platform.models import Project, taken_refused
from curation import gateway
from curation.models import LLMProvider
from curation.recipes.framework.declare import QueueSpec
from curation.recipes.framework.queues import task_row

from . import concepts as concept_specs
from . import prompts
from .models import VLindBench, VLindConcept

DRAFT_JOB = "vlind.draft_triples"
NOUNS_JOB = "vlind.draft_nouns"
IMAGES_JOB = "vlind.generate_images"
EXPORT_JOB = "vlind.export"

TRIPLE_HANDLER = "vlind.triple_review"
IMAGE_HANDLER = "vlind.image_review"
TRIPLES_PURPOSE = "vlind.triples"
NOUNS_PURPOSE = "vlind.vp_nouns"
IMAGE_PURPOSE = "vlind.image"

# App. A: "Each instance triple or image was reviewed by a total of three reviewers. Only those
# … accepted by at least two reviewers were included." The published data.json's vote counts
# are read with the same threshold, so both numbers are fixed here.
REVIEWERS = 3
MIN_ACCEPTS = 2
MAX_TRIPLES_PER_CONCEPT = 500
BATCH = 25  # triples asked for per LLM call
MAX_IMAGE_FAILURES = 3  # consecutive failed image calls before a generation job gives up
MAX_NOUN = 100

TRIPLE_QUESTION = "Accept this instance triple for VLind-Bench?"
TRIPLE_CRITERIA = [
    "Decide on the text alone; do not think about how an image could be generated.",
    "Reject if the true statement is not clearly true, or the false statement not clearly "
    "false, in the context.",
    "Reject if the context is not counterfactual.",
    "Reject if a statement, even if true (false), does not address the counterfactual aspect "
    "of the context.",
    "Reject if the truth values of the statements cannot be inferred from the context.",
    "You may search the internet to check the context and the statements.",
]
TRIPLE_REASONS = [
    {"code": "unclear_truth", "label": "A statement is not clearly true/false"},
    {"code": "not_counterfactual", "label": "The context is not counterfactual"},
    {"code": "misses_aspect", "label": "Misses the counterfactual aspect"},
    {"code": "not_inferable", "label": "Truth not inferable from the context"},
]
IMAGE_QUESTION = "Is this image good for VLind-Bench?"
IMAGE_CRITERIA = [
    "Reject if, looking at the image, the true statement is not clearly true or the false "
    "statement not clearly false.",
    "Accept the image if it is enough to decide the truth values of the statements, even if it "
    "does not depict the context precisely.",
    "Reject if the image is of significantly poor quality.",
    "You may search the internet to check the image.",
]
IMAGE_REASONS = [
    {"code": "unclear_truth", "label": "Statements not clearly true/false here"},
    {"code": "poor_quality", "label": "Significantly poor quality"},
    {"code": "wrong_content", "label": "Does not show the situation"},
]


def check_counts(triples_per_concept: int | None, images_per_style: int | None) -> None:
    if triples_per_concept is not None and not (
        1 <= int(triples_per_concept) <= MAX_TRIPLES_PER_CONCEPT
    ):
        raise Invalid(f"Triples per concept must be between 1 and {MAX_TRIPLES_PER_CONCEPT}.")
    if images_per_style is not None and not 1 <= int(images_per_style) <= prompts.PER_STYLE:
        raise Invalid(
            f"Images per style must be between 1 and {prompts.PER_STYLE}: the published layout "
            "has four image ids per style (0–3, 4–7, 8–11)."
        )


def bench_create(
    *,
    project: Project,
    name: str,
    description: str = "",
    triples_per_concept: int = 50,
    images_per_style: int = prompts.PER_STYLE,
    created_by=None,
) -> VLindBench:
    """A bench with the paper's 11 concepts and their 3-shot examples (editable afterwards)."""
    name = " ".join((name or "").split())
    if not name:
        raise Invalid("Give the benchmark a name.", [{"line": 0, "error": "name is required"}])
    if len(name) > 200:
        raise Invalid("The benchmark name is longer than 200 characters.")
    check_counts(triples_per_concept, images_per_style)
    with taken_refused(f"This project already has a VLind-Bench “{name}”; choose another name."):
        bench = VLindBench.objects.create(
            project=project,
            name=name,
            description=description.strip(),
            triples_per_concept=triples_per_concept,
            images_per_style=images_per_style,
            created_by=created_by,
        )
        VLindConcept.objects.bulk_create(
            [VLindConcept(bench=bench, **row) for row in concept_specs.default_concepts()]
        )
    gateway.templates_ensure(prompts.TEMPLATES)
    return bench


def bench_settings(bench: VLindBench, **changes) -> VLindBench:
    """Counts per concept and style, and the image endpoint (an OpenAI-compatible provider):
    ``triples_per_concept``, ``images_per_style``, ``image_provider`` (None: upload only),
    ``image_model``, ``image_size``; a count or text given as None stays as it is."""
    check_counts(changes.get("triples_per_concept"), changes.get("images_per_style"))
    provider = changes.get("image_provider")
    if provider is not None and provider.kind != LLMProvider.Kind.OPENAI:
        raise Invalid("Choose an OpenAI-compatible provider for images, not the offline one.")
    size = changes.get("image_size")
    if size is not None and not re.fullmatch(r"\d{2,5}x\d{2,5}", size.strip()):
        raise Invalid("Image size must look like 1024x1024.")
    cleaners = {"image_model": lambda v: v.strip()[:200], "image_size": str.strip}
    fields = [k for k, v in changes.items() if v is not None or k == "image_provider"]
    for name in fields:
        value = changes[name]
        setattr(bench, name, cleaners[name](value) if name in cleaners else value)
    if fields:
        bench.save(update_fields=fields)
    return bench


def _check_examples(examples: Sequence[dict]) -> list[dict]:
    cleaned, problems = prompts.triples_check(list(examples))
    if problems:
        raise Invalid(
            "The examples are not usable.",
            [{"line": 0, "error": p.replace("item", "example")} for p in problems],
        )
    if len(cleaned) != 3:
        raise Invalid("Give exactly three examples (one is shown in prose, two as JSON).")
    return cleaned


def _guidance_set(concept: VLindConcept, description: str, image_hint: str, examples) -> None:
    """A concept's guidance (description, how example 1 is depicted) and checked examples."""
    image_hint = " ".join((image_hint or "").split())
    if not image_hint:
        raise Invalid("Say how the first example would be depicted (“an image of …”).")
    concept.description = " ".join((description or "").split())[:300]
    concept.image_hint = image_hint[:300]
    concept.examples = _check_examples(examples)


def concept_update(
    *,
    concept: VLindConcept,
    description: str,
    image_hint: str,
    examples: Sequence[dict],
    active: bool = True,
) -> VLindConcept:
    """Edit a concept's guidance and its three hand-written examples (App. A's italic parts)."""
    _guidance_set(concept, description, image_hint, examples)
    concept.active = bool(active)
    concept.save(update_fields=["description", "image_hint", "examples", "active"])
    return concept


def concept_add(
    *, bench: VLindBench, name: str, description: str, image_hint: str, examples: Sequence[dict]
) -> VLindConcept:
    """A concept of the curator's own (the offline drafter knows only the paper's 11)."""
    name = " ".join((name or "").lower().split())
    if not re.fullmatch(r"[a-z][a-z0-9 _-]{0,39}", name):
        raise Invalid("A concept name is 1–40 lower-case letters, digits, spaces, - or _.")
    if bench.concepts.filter(name=name).exists():
        raise Invalid(f"This benchmark already has the concept “{name}”.")
    concept = VLindConcept(
        bench=bench,
        name=name,
        position=(bench.concepts.aggregate(n=Max("position"))["n"] or 0) + 1,
    )
    _guidance_set(concept, description, image_hint, examples)
    with taken_refused(f"This benchmark already has the concept “{name}”."):
        concept.save()
    return concept


def _review_queue(
    field: str, what: str, handler: str, intro: str, question: str, criteria, reasons
):
    """A review queue of the bench (App. A): three reviewers, the question and the criteria."""
    steps = "\n".join(f"{i}. {c}" for i, c in enumerate(criteria, 1))
    return QueueSpec(
        field=field,
        kind="review",
        title=lambda bench: f"VLind-Bench {what}: {bench.name}",
        handler=handler,
        instructions=f"{intro}\n\n**{question}** Accept or reject it by these criteria "
        f"(VLind-Bench App. A):\n\n{steps}",
        config={"criteria": criteria, "reason_codes": reasons},
        redundancy=REVIEWERS,
        max_redundancy=REVIEWERS,
    )


TRIPLE_QUEUE = _review_queue(
    "triple_queue",
    "triples",
    TRIPLE_HANDLER,
    "Each item is an instance triple an LLM drafted: a counterfactual context, a statement "
    "that is true in that context and one that is false in it (but true by common sense).",
    TRIPLE_QUESTION,
    TRIPLE_CRITERIA,
    TRIPLE_REASONS,
)
IMAGE_QUEUE = _review_queue(
    "image_queue",
    "images",
    IMAGE_HANDLER,
    "Each item is an image of a counterfactual context with its two statements.",
    IMAGE_QUESTION,
    IMAGE_CRITERIA,
    IMAGE_REASONS,
)


def review_decided(model, task: Task, decision, *, kept: str, rejected: str):
    """A review queue's outcome (inside the submit's transaction): the row of ``task`` when it
    is still in review, its votes, accept count and status (``kept`` with at least
    ``MIN_ACCEPTS`` accepts, else ``rejected``) saved; None otherwise."""
    row = task_row(model.objects, task)
    if row is None or row.status != model.Status.REVIEW:
        return None
    accepts = (decision.counts or {}).get("accept", 0)
    row.decide(decision, accepts=accepts, status=kept if accepts >= MIN_ACCEPTS else rejected)
    return row
