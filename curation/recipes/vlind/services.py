"""VLind-Bench services (vlind-bench.txt Sec. 4, App. A): keyword-only, each write atomic; long
work runs in ``jobs.py``.

Flow: ``bench_create`` seeds the 11 concepts → ``triples_draft`` (App. A prompt through the
gateway) puts every usable triple in a ``review`` queue (six criteria, three people) → the
outcome handler keeps a triple with ≥ 2 accepts → counterfactual images per kept triple, uploaded
(``images_upload``) or generated (``images_generate``), each in a ``review`` queue (four criteria,
three people, "good" with ≥ 2 accepts) → a factual image (``factual_upload``) and the VP nouns
(``nouns_draft`` proposes, ``nouns_pick`` decides) → ``export`` assembles the instances.
"""

from __future__ import annotations

import base64
import math
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from annotator import services as annotator_services
from annotator.models import Task, TaskQueue
from annotator.platform.errors import Invalid
from annotator.platform.files import media_url
from annotator.platform.jobs import job_enqueue, job_progress
from annotator.platform.models import Project

from ... import assets, gateway
from ...models import Generation, Image, LLMProvider
from ...models.vlind import VLindBench, VLindConcept, VLindImage, VLindTriple
from . import concepts as concept_specs
from . import prompts

DRAFT_JOB = "vlind.draft_triples"
NOUNS_JOB = "vlind.draft_nouns"
IMAGES_JOB = "vlind.generate_images"
# The export job (export.py) has its own cards, newest per export, so it is not in JOB_KINDS.
EXPORT_JOB = "vlind.export"
JOB_KINDS = (DRAFT_JOB, IMAGES_JOB, NOUNS_JOB)

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


# ============================================================================================
# 1. Benches and concepts
# ============================================================================================
def _clean_name(name: str, what: str, limit: int) -> str:
    name = " ".join((name or "").split())
    if not name:
        raise Invalid(f"Give the {what} a name.", [{"line": 0, "error": "name is required"}])
    if len(name) > limit:
        raise Invalid(f"The {what} name is longer than {limit} characters.")
    return name


def _check_counts(triples_per_concept: int | None, images_per_style: int | None) -> None:
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
    name = _clean_name(name, "benchmark", 200)
    _check_counts(triples_per_concept, images_per_style)
    try:
        with transaction.atomic():
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
    except IntegrityError:
        raise Invalid(
            f"This project already has a VLind-Bench “{name}”; choose another name."
        ) from None
    prompts.templates_ensure()
    return bench


_KEEP = object()


def bench_settings(
    *,
    bench: VLindBench,
    triples_per_concept: int | None = None,
    images_per_style: int | None = None,
    image_provider=_KEEP,
    image_model: str | None = None,
    image_size: str | None = None,
) -> VLindBench:
    """Counts per concept and style, and the image endpoint (an OpenAI-compatible provider)."""
    _check_counts(triples_per_concept, images_per_style)
    fields = []
    if triples_per_concept is not None:
        bench.triples_per_concept = int(triples_per_concept)
        fields.append("triples_per_concept")
    if images_per_style is not None:
        bench.images_per_style = int(images_per_style)
        fields.append("images_per_style")
    if image_provider is not _KEEP:
        if image_provider is not None and image_provider.kind != LLMProvider.Kind.OPENAI:
            raise Invalid("Choose an OpenAI-compatible provider for images, not the offline one.")
        bench.image_provider = image_provider
        fields.append("image_provider")
    if image_model is not None:
        bench.image_model = image_model.strip()[:200]
        fields.append("image_model")
    if image_size is not None:
        if not re.fullmatch(r"\d{2,5}x\d{2,5}", image_size.strip()):
            raise Invalid("Image size must look like 1024x1024.")
        bench.image_size = image_size.strip()
        fields.append("image_size")
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


def concept_update(
    *,
    concept: VLindConcept,
    description: str,
    image_hint: str,
    examples: Sequence[dict],
    active: bool = True,
) -> VLindConcept:
    """Edit a concept's guidance and its three hand-written examples (App. A's italic parts)."""
    image_hint = " ".join((image_hint or "").split())
    if not image_hint:
        raise Invalid("Say how the first example would be depicted (“an image of …”).")
    concept.description = " ".join((description or "").split())[:300]
    concept.image_hint = image_hint[:300]
    concept.examples = _check_examples(examples)
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
    image_hint = " ".join((image_hint or "").split())
    if not image_hint:
        raise Invalid("Say how the first example would be depicted (“an image of …”).")
    concept.description = " ".join((description or "").split())[:300]
    concept.image_hint = image_hint[:300]
    concept.examples = _check_examples(examples)
    try:
        with transaction.atomic():
            concept.save()
    except IntegrityError:
        raise Invalid(f"This benchmark already has the concept “{name}”.") from None
    return concept


# ============================================================================================
# 2. Review queues (App. A: three reviewers, kept with at least two accepts)
# ============================================================================================
def _queue_spec(bench: VLindBench, which: str) -> dict:
    if which == "triple":
        return {
            "title": f"VLind-Bench triples: {bench.name}"[:200],
            "instructions": (
                "Each item is an instance triple an LLM drafted: a counterfactual context, a "
                "statement that is true in that context and one that is false in it (but true "
                "by common sense).\n\n"
                f"**{TRIPLE_QUESTION}** Accept or reject it by these criteria (VLind-Bench "
                "App. A):\n\n" + "\n".join(f"{i}. {c}" for i, c in enumerate(TRIPLE_CRITERIA, 1))
            ),
            "config": {"criteria": TRIPLE_CRITERIA, "reason_codes": TRIPLE_REASONS},
            "outcome_handler": TRIPLE_HANDLER,
        }
    return {
        "title": f"VLind-Bench images: {bench.name}"[:200],
        "instructions": (
            "Each item is an image of a counterfactual context with its two statements.\n\n"
            f"**{IMAGE_QUESTION}** Accept or reject it by these criteria (VLind-Bench "
            "App. A):\n\n" + "\n".join(f"{i}. {c}" for i, c in enumerate(IMAGE_CRITERIA, 1))
        ),
        "config": {"criteria": IMAGE_CRITERIA, "reason_codes": IMAGE_REASONS},
        "outcome_handler": IMAGE_HANDLER,
    }


def queue_ensure(*, bench: VLindBench, which: str) -> TaskQueue:
    """The bench's triple or image review queue, created on first use (under a row lock)."""
    field = f"{which}_queue"
    with transaction.atomic():
        fresh = VLindBench.objects.select_for_update(of=("self",)).get(pk=bench.pk)
        queue = getattr(fresh, field)
        if queue is None:
            queue = annotator_services.queue_create(
                project=bench.project,
                kind="review",
                redundancy=REVIEWERS,
                max_redundancy=REVIEWERS,
                rule=TaskQueue.Rule.MAJORITY,
                **_queue_spec(bench, which),
            )
            VLindBench.objects.filter(pk=bench.pk).update(**{field: queue})
    setattr(bench, field, queue)
    return queue


def _accepts(decision) -> tuple[int, dict]:
    counts = {str(k): int(v) for k, v in (decision.counts or {}).items()}
    return counts.get("accept", 0), counts


def _add_tasks(queue: TaskQueue, rows: list[tuple[object, dict, str]]) -> None:
    """Create one review task per (object, payload, external id) and link it (same transaction)."""
    if not rows:
        return
    annotator_services.tasks_bulk_create(
        queue=queue,
        rows=[annotator_services.TaskRow(payload=p, external_id=e) for _o, p, e in rows],
    )
    tasks = dict(
        Task.objects.filter(queue=queue, external_id__in=[e for _o, _p, e in rows]).values_list(
            "external_id", "pk"
        )
    )
    for obj, _payload, external_id in rows:
        type(obj).objects.filter(pk=obj.pk).update(task_id=tasks[external_id])
        obj.task_id = tasks[external_id]


# ============================================================================================
# 3. Instance triples (Sec. 4, App. A)
# ============================================================================================
def _triple_payload(triple: VLindTriple) -> dict:
    return {
        "title": TRIPLE_QUESTION,
        "text": f"Concept: {triple.concept.name}",
        "fields": {
            "Context": triple.context,
            "True statement (true in the context)": triple.true_statement,
            "False statement (false in the context, true by common sense)": (
                triple.false_statement
            ),
        },
    }


def triples_record(
    *, concept: VLindConcept, triples: Sequence[dict], generation: Generation | None, queue
) -> list[VLindTriple]:
    """Store checked triples (context ids continue the concept's numbering) and put each in the
    review queue, in one transaction."""
    with transaction.atomic():
        concept = VLindConcept.objects.select_for_update().get(pk=concept.pk)
        start = concept.triples.aggregate(n=Max("context_id"))["n"] or 0
        rows = VLindTriple.objects.bulk_create(
            [
                VLindTriple(
                    bench_id=concept.bench_id,
                    concept=concept,
                    context_id=start + k,
                    generation=generation,
                    **t,
                )
                for k, t in enumerate(triples, start=1)
            ]
        )
        if rows and rows[0].pk is None:  # backends without RETURNING on bulk insert
            rows = list(concept.triples.filter(context_id__gt=start).order_by("context_id"))
        for row in rows:
            row.concept = concept
        _add_tasks(queue, [(t, _triple_payload(t), f"vlind-triple-{t.pk}") for t in rows])
    return rows


def triples_draft(
    *,
    bench: VLindBench,
    concept_ids: Sequence[int] | None = None,
    count: int | None = None,
    provider: LLMProvider | None = None,
    job_id: int | None = None,
    created_by=None,
    batch: int = BATCH,
) -> dict:
    """Draft triples until each active concept has ``count`` (default: the bench's number),
    ``batch`` per call, and send them to review. Calls run outside any transaction; a failed or
    empty call ends that concept (its error is reported). Idempotent: full concepts are skipped.
    """
    prompts.templates_ensure()
    queue = queue_ensure(bench=bench, which="triple")
    target = int(count or bench.triples_per_concept)
    _check_counts(target, None)
    qs = bench.concepts.filter(active=True).order_by("position", "name")
    if concept_ids is not None:
        qs = qs.filter(pk__in=list(concept_ids))
    chosen = list(qs)
    result = {"drafted": 0, "invalid": 0, "failed_calls": 0, "errors": [], "concepts": {}}
    if job_id:
        job_progress(job_id=job_id, done=0, total=len(chosen), message="Drafting triples")
    for done, concept in enumerate(chosen, start=1):
        have = concept.triples.count()
        calls, limit = 0, math.ceil(max(target - have, 0) / batch) + 2
        made = 0
        while have < target and calls < limit:
            want = min(batch, target - have)
            variables = prompts.triple_variables(
                concept=concept.name,
                image_hint=concept.image_hint,
                examples=concept.examples,
                count=want,
            )
            generation = gateway.generate(
                template=prompts.TRIPLES_TEMPLATE,
                variables=variables,
                project=bench.project,
                provider=provider,
                purpose=TRIPLES_PURPOSE,
                seed=have,
                job=job_id,
                created_by=created_by,
                item_key=f"vlind-{bench.pk}-{concept.pk}-{have}",
            )
            calls += 1
            if generation.status != Generation.Status.OK:
                result["failed_calls"] += 1
                result["errors"].append(f"{concept.name}: {generation.error}"[:500])
                break
            seen = set(concept.triples.values_list("context", flat=True))
            usable, problems = prompts.triples_check(
                generation.output, seen_contexts=seen, examples=concept.examples
            )
            result["invalid"] += len(problems)
            usable = usable[: target - have]
            if not usable:
                result["errors"].append(f"{concept.name}: no new usable triple in the answer")
                break
            rows = triples_record(
                concept=concept, triples=usable, generation=generation, queue=queue
            )
            have += len(rows)
            made += len(rows)
        result["drafted"] += made
        result["concepts"][concept.name] = made
        if job_id:
            job_progress(job_id=job_id, done=done, message=f"{result['drafted']} triples in review")
    return result


def triples_draft_start(
    *, bench: VLindBench, count: int | None = None, concept_ids=None, created_by=None
):
    target = int(count or bench.triples_per_concept)
    _check_counts(target, None)
    concepts = bench.concepts.filter(active=True)
    if concept_ids:
        concepts = concepts.filter(pk__in=list(concept_ids))
    if not concepts.exists():
        raise Invalid("No active concept: switch one on, or add one, first.")
    return job_enqueue(
        kind=DRAFT_JOB,
        params={"bench_id": bench.pk, "count": target, "concept_ids": list(concept_ids or [])},
        created_by=created_by,
        project=bench.project,
        total=concepts.count(),
    )


def triple_review_record(*, task: Task, decision) -> VLindTriple | None:
    """The triple queue's outcome (inside the submit's transaction): kept with ≥ 2 accepts."""
    triple = VLindTriple.objects.select_for_update().filter(task_id=task.pk).first()
    if triple is None or triple.status != VLindTriple.Status.REVIEW:
        return triple
    accepts, counts = _accepts(decision)
    triple.accepts = accepts
    triple.votes = counts
    triple.status = (
        VLindTriple.Status.KEPT if accepts >= MIN_ACCEPTS else VLindTriple.Status.REJECTED
    )
    triple.decided_at = timezone.now()
    if triple.status == VLindTriple.Status.KEPT and not triple.factual_context:
        # Sec. 4: the factual image shows s_fact; a curator may rewrite it as a factual context.
        triple.factual_context = triple.false_statement
    triple.save(update_fields=["accepts", "votes", "status", "decided_at", "factual_context"])
    return triple


# ============================================================================================
# 4. Counterfactual images (Sec. 4, App. A, App. C)
# ============================================================================================
def free_slots(triple: VLindTriple, style: str, per_style: int) -> list[int]:
    taken = set(triple.images.values_list("slot", flat=True))
    return [s for s in prompts.slots_of_style(style, per_style) if s not in taken]


def _image_payload(image: VLindImage) -> dict:
    triple = image.triple
    return {
        "title": IMAGE_QUESTION,
        "images": [
            {"url": media_url(image.image.file.name), "alt": f"{image.style} image of the context"}
        ],
        "text": f"Concept: {triple.concept.name} · style: {image.style}",
        "fields": {
            "Context": triple.context,
            "True statement": triple.true_statement,
            "False statement": triple.false_statement,
        },
    }


def image_record(
    *,
    triple: VLindTriple,
    slot: int,
    image: Image,
    origin: str,
    generation: Generation | None = None,
    created_by=None,
    queue: TaskQueue | None = None,
) -> VLindImage:
    """A counterfactual image in ``slot`` (its style follows from the slot) and its review."""
    queue = queue or queue_ensure(bench=triple.bench, which="image")
    with transaction.atomic():
        row = VLindImage.objects.create(
            triple=triple,
            slot=slot,
            style=prompts.style_of_slot(slot),
            image=image,
            origin=origin,
            generation=generation,
            created_by=created_by,
        )
        row.triple = triple
        _add_tasks(queue, [(row, _image_payload(row), f"vlind-image-{row.pk}")])
    return row


def _require_kept(triple: VLindTriple) -> None:
    if triple.status != VLindTriple.Status.KEPT:
        raise Invalid(
            f"Only a kept triple gets images: this one is {triple.get_status_display().lower()}."
        )


@dataclass
class Upload:
    name: str
    data: bytes


def _check_uploads(files: Sequence[Upload], *, taken: dict[str, int] | None = None) -> list:
    """Decode every file before anything is stored; line-numbered errors naming each file."""
    errors: list[dict] = []
    normalised = []
    seen: dict[str, str] = {}
    for k, upload in enumerate(files, start=1):
        try:
            norm = assets.image_normalise(data=upload.data, name=upload.name)
        except assets.ImageRejected as exc:
            errors.append({"line": k, "error": str(exc)})
            continue
        if norm.sha256 in seen:
            errors.append(
                {"line": k, "error": f"{upload.name}: the same picture as {seen[norm.sha256]}"}
            )
            continue
        if taken and norm.sha256 in taken:
            errors.append(
                {
                    "line": k,
                    "error": f"{upload.name}: already image {taken[norm.sha256]} of this triple",
                }
            )
            continue
        seen[norm.sha256] = upload.name
        normalised.append(norm)
    if errors:
        raise Invalid("Some files were refused; nothing was stored.", errors)
    return normalised


def images_upload(
    *, triple: VLindTriple, style: str, files: Sequence[Upload], created_by=None
) -> list[VLindImage]:
    """Upload counterfactual images of one style into the triple's free slots. Every file is
    validated first (Pillow decode, limits, duplicates); any refusal stores nothing."""
    _require_kept(triple)
    if style not in prompts.STYLES:
        raise Invalid(f"Unknown style {style!r}: choose photorealistic, illustration or cartoon.")
    if not files:
        raise Invalid("Choose at least one image file.")
    bench = triple.bench
    free = free_slots(triple, style, bench.images_per_style)
    if len(files) > len(free):
        raise Invalid(
            f"The {style} style has {len(free)} free slot{'s' if len(free) != 1 else ''} of "
            f"{bench.images_per_style}; {len(files)} files were sent. Nothing was stored."
        )
    taken = dict(triple.images.values_list("image__sha256", "slot"))
    _check_uploads(files, taken=taken)
    queue = queue_ensure(bench=bench, which="image")
    rows = []
    with transaction.atomic():
        for upload, slot in zip(files, free, strict=False):
            image, _new = assets.image_ingest(
                data=upload.data,
                name=upload.name,
                source=f"upload · VLind-Bench {bench.name}"[:500],
                created_by=created_by,
            )
            rows.append(
                image_record(
                    triple=triple,
                    slot=slot,
                    image=image,
                    origin=VLindImage.Origin.UPLOAD,
                    created_by=created_by,
                    queue=queue,
                )
            )
    assets.thumbnails_make(image_ids=[r.image_id for r in rows])
    return rows


def image_review_record(*, task: Task, decision) -> VLindImage | None:
    """The image queue's outcome: good with ≥ 2 accepts; the accept count is the published
    ``aggregated_human_label_good_images`` value of this image id."""
    row = VLindImage.objects.select_for_update().filter(task_id=task.pk).first()
    if row is None or row.status != VLindImage.Status.REVIEW:
        return row
    accepts, counts = _accepts(decision)
    row.accepts = accepts
    row.votes = counts
    row.status = VLindImage.Status.GOOD if accepts >= MIN_ACCEPTS else VLindImage.Status.BAD
    row.decided_at = timezone.now()
    row.save(update_fields=["accepts", "votes", "status", "decided_at"])
    return row


def best_of(triple: VLindTriple, images: Iterable[VLindImage]) -> VLindImage | None:
    """The curator's pick when it is good, else the good image with the most accepts (lowest
    image id on a tie); None without a good image."""
    good = [i for i in images if i.status == VLindImage.Status.GOOD]
    if not good:
        return None
    picked = next((i for i in good if i.pk == triple.best_image_id), None)
    return picked or min(good, key=lambda i: (-i.accepts, i.slot))


def best_image_pick(*, triple: VLindTriple, image_id: int | None) -> VLindTriple:
    """Choose the best image (Sec. 3: VP and CB use it); None: back to the most accepts."""
    if image_id is not None:
        chosen = triple.images.filter(pk=image_id).first()
        if chosen is None:
            raise Invalid("That image does not belong to this triple.")
        if chosen.status != VLindImage.Status.GOOD:
            raise Invalid("Only a good image (≥ 2 accepts) can be the best image.")
    VLindTriple.objects.filter(pk=triple.pk).update(best_image_id=image_id)
    triple.best_image_id = image_id
    return triple


# --- generation through an OpenAI-compatible image endpoint ---------------------------------
def image_endpoint(bench: VLindBench):
    """(endpoint, model, problem): the problem says what to configure when there is none."""
    from ...gateway.providers import provider_endpoint

    provider = bench.image_provider
    if provider is None:
        return (
            None,
            "",
            (
                "No image endpoint is configured: choose an OpenAI-compatible provider and an "
                "image model in the settings below, or upload images instead."
            ),
        )
    if provider.kind != LLMProvider.Kind.OPENAI:
        return None, "", "The image provider must be an OpenAI-compatible endpoint."
    if not bench.image_model:
        return None, "", "Name the image model (e.g. dall-e-3) in the settings below."
    endpoint, problem = provider_endpoint(provider)
    return (None if problem else endpoint), bench.image_model, problem


@dataclass
class ImageCall:
    ok: bool
    data: bytes = b""
    revised_prompt: str = ""
    error: str = ""
    latency_ms: int = 0


def image_call(*, endpoint, model: str, prompt: str, size: str) -> ImageCall:
    """One ``images.generate`` request (b64_json); never raises for the endpoint's failure."""
    import openai

    t0 = time.monotonic()
    try:
        client = openai.OpenAI(
            base_url=endpoint.base_url,
            api_key=endpoint.api_key,
            timeout=endpoint.timeout_s,
            max_retries=endpoint.max_retries,
        )
        try:
            response = client.images.generate(
                model=model, prompt=prompt, n=1, size=size, response_format="b64_json"
            )
        finally:
            client.close()
        item = response.data[0] if response.data else None
        if item is None or not item.b64_json:
            raise ValueError("the answer holds no b64_json image")
        data = base64.b64decode(item.b64_json, validate=True)
    except Exception as exc:  # noqa: BLE001 - recorded on the Generation, never a 500
        ms = int((time.monotonic() - t0) * 1000)
        return ImageCall(False, error=f"{type(exc).__name__}: {exc}"[:2000], latency_ms=ms)
    ms = int((time.monotonic() - t0) * 1000)
    return ImageCall(True, data=data, revised_prompt=item.revised_prompt or "", latency_ms=ms)


def image_generate_one(
    *,
    bench: VLindBench,
    template: str,
    variables: dict,
    item_key: str,
    job_id=None,
    created_by=None,
) -> tuple[Image | None, Generation]:
    """Render the image prompt, call the endpoint, record a Generation; the stored Image (or
    None when the call or the picture failed, with the reason on the Generation)."""
    endpoint, model, problem = image_endpoint(bench)
    if problem:
        raise Invalid(problem)
    tpl = gateway.template_current(template)
    prompt = gateway.render(tpl.text, variables, template=tpl.name)
    call = image_call(endpoint=endpoint, model=model, prompt=prompt, size=bench.image_size)
    image = None
    error = call.error
    if call.ok:
        try:
            image, _new = assets.image_ingest(
                data=call.data,
                name=f"{item_key}.png",
                source=f"generated · {model} · {endpoint.base_url}"[:500],
                created_by=created_by,
            )
        except assets.ImageRejected as exc:
            error = f"The endpoint's picture was refused: {exc.reason}"
    provider = bench.image_provider
    generation = Generation.objects.create(
        project=bench.project,
        provider=provider,
        provider_kind=provider.kind,
        template=tpl,
        template_name=tpl.name,
        template_version=tpl.version,
        template_sha256=tpl.sha256,
        purpose=IMAGE_PURPOSE,
        variables=variables,
        messages=[{"role": "user", "content": prompt}],
        model=model,
        params={
            "endpoint": "images.generate",
            "provider": provider.name,
            "base_url": provider.base_url,
            "size": bench.image_size,
            "n": 1,
            "response_format": "b64_json",
        },
        status=Generation.Status.OK if image is not None else Generation.Status.FAILED,
        raw_response=call.revised_prompt,
        output={"image_sha256": image.sha256, "revised_prompt": call.revised_prompt}
        if image is not None
        else None,
        attempts=1,
        attempt_log=[
            {
                "attempt": 1,
                "outcome": "ok" if image is not None else "error",
                "error": error,
                "latency_ms": call.latency_ms,
            }
        ],
        latency_ms=call.latency_ms,
        error=error,
        job_id=job_id,
        item_key=item_key[:200],
        created_by=created_by,
    )
    if image is not None and image.generation_id is None:
        Image.objects.filter(pk=image.pk).update(generation=generation)
    return image, generation


def images_generate(
    *,
    bench: VLindBench,
    triple_ids: Sequence[int] | None = None,
    factual: bool = True,
    job_id: int | None = None,
    created_by=None,
) -> dict:
    """Fill every kept triple's free slots (``images_per_style`` per style) with generated
    images, and its factual image when missing (from the factual context, Sec. 4). Stops after
    three failed calls in a row. Idempotent: filled slots are skipped."""
    endpoint, _model, problem = image_endpoint(bench)
    if problem:
        raise Invalid(problem)
    prompts.templates_ensure()
    queue = queue_ensure(bench=bench, which="image")
    triples = bench.triples.filter(status=VLindTriple.Status.KEPT).select_related("concept")
    if triple_ids is not None:
        triples = triples.filter(pk__in=list(triple_ids))
    triples = list(triples.order_by("concept__position", "context_id"))
    todo = []
    for triple in triples:
        for style in prompts.STYLES:
            todo += [(triple, slot) for slot in free_slots(triple, style, bench.images_per_style)]
        if factual and triple.factual_image_id is None:
            todo.append((triple, None))
    result = {"images": 0, "factual": 0, "failed": 0, "errors": []}
    if job_id:
        job_progress(job_id=job_id, done=0, total=len(todo), message="Generating images")
    failures_in_row = 0
    made: list[int] = []
    for done, (triple, slot) in enumerate(todo, start=1):
        triple.bench = bench
        if slot is None:
            image, generation = image_generate_one(
                bench=bench,
                template=prompts.FACTUAL_IMAGE_TEMPLATE,
                variables={"statement": triple.factual_context or triple.false_statement},
                item_key=f"vlind-{triple.pk}-factual",
                job_id=job_id,
                created_by=created_by,
            )
            if image is not None:
                VLindTriple.objects.filter(pk=triple.pk).update(factual_image=image)
                result["factual"] += 1
        else:
            style = prompts.style_of_slot(slot)
            image, generation = image_generate_one(
                bench=bench,
                template=prompts.IMAGE_TEMPLATE,
                variables={"context": triple.context, "style": style},
                item_key=f"vlind-{triple.pk}-{slot}",
                job_id=job_id,
                created_by=created_by,
            )
            if image is not None:
                image_record(
                    triple=triple,
                    slot=slot,
                    image=image,
                    origin=VLindImage.Origin.GENERATED,
                    generation=generation,
                    created_by=created_by,
                    queue=queue,
                )
                result["images"] += 1
        if image is None:
            result["failed"] += 1
            failures_in_row += 1
            result["errors"].append(generation.error[:300])
        else:
            failures_in_row = 0
            made.append(image.pk)
        if job_id:
            job_progress(job_id=job_id, done=done, message=f"{result['images']} images made")
        if failures_in_row >= MAX_IMAGE_FAILURES:
            result["errors"].append(f"Stopped after {MAX_IMAGE_FAILURES} failed calls in a row.")
            break
    assets.thumbnails_make(image_ids=made)
    result["errors"] = result["errors"][:10]
    return result


def images_generate_start(*, bench: VLindBench, created_by=None):
    _endpoint, _model, problem = image_endpoint(bench)
    if problem:
        raise Invalid(problem)
    kept = bench.triples.filter(status=VLindTriple.Status.KEPT).count()
    if not kept:
        raise Invalid("No kept triple yet: images are made for triples people accepted.")
    return job_enqueue(
        kind=IMAGES_JOB,
        params={"bench_id": bench.pk},
        created_by=created_by,
        project=bench.project,
    )


# ============================================================================================
# 5. Factual images and VP nouns (Sec. 4, App. A)
# ============================================================================================
def factual_upload(
    *,
    triple: VLindTriple,
    upload: Upload | None,
    factual_context: str | None = None,
    created_by=None,
) -> VLindTriple:
    """The factual image (CK shows it) and/or the factual context it depicts."""
    _require_kept(triple)
    if upload is None and factual_context is None:
        raise Invalid("Choose the factual image, or edit the factual context.")
    fields = []
    if factual_context is not None:
        text = " ".join(factual_context.split())
        if not text or len(text) > prompts.MAX_TEXT:
            raise Invalid(f"The factual context must be 1–{prompts.MAX_TEXT} characters.")
        triple.factual_context = text
        fields.append("factual_context")
    if upload is not None:
        _check_uploads([upload])
        image, _new = assets.image_ingest(
            data=upload.data,
            name=upload.name,
            source=f"upload · VLind-Bench {triple.bench.name} (factual)"[:500],
            created_by=created_by,
        )
        triple.factual_image = image
        fields.append("factual_image")
        assets.thumbnails_make(image_ids=[image.pk])
    triple.save(update_fields=fields)
    return triple


def _noun_list(value, limit: int = 2) -> list[str]:
    out: list[str] = []
    for item in value if isinstance(value, list) else []:
        text = " ".join(str(item).split())[:MAX_NOUN]
        if text and text.casefold() not in {o.casefold() for o in out}:
            out.append(text)
    return out[:limit]


def nouns_draft(
    *,
    bench: VLindBench,
    triple_ids: Sequence[int] | None = None,
    provider: LLMProvider | None = None,
    job_id: int | None = None,
    created_by=None,
) -> dict:
    """Two key nouns and two absent nouns per kept triple (App. A prompt); a person then picks
    one of each. Triples that have candidates are skipped; failed ones are tried again."""
    prompts.templates_ensure()
    triples = bench.triples.filter(status=VLindTriple.Status.KEPT)
    if triple_ids is not None:
        triples = triples.filter(pk__in=list(triple_ids))
    todo = [t for t in triples.order_by("pk") if not t.noun_candidates.get("nouns")]
    result = {"drafted": 0, "failed": 0, "errors": []}
    if job_id:
        job_progress(job_id=job_id, done=0, total=len(todo), message="Drafting nouns")
    for done, triple in enumerate(todo, start=1):
        generation = gateway.generate(
            template=prompts.NOUNS_TEMPLATE,
            variables={"context": triple.context},
            project=bench.project,
            provider=provider,
            purpose=NOUNS_PURPOSE,
            seed=triple.pk,
            job=job_id,
            created_by=created_by,
            item_key=f"vlind-nouns-{triple.pk}",
        )
        if generation.status == Generation.Status.OK:
            candidates = {
                "nouns": _noun_list(generation.output.get("nouns")),
                "non-existent_nouns": _noun_list(generation.output.get("non-existent_nouns")),
            }
            result["drafted"] += 1
        else:
            candidates = {"error": generation.error[:500]}
            result["failed"] += 1
            result["errors"].append(generation.error[:300])
        VLindTriple.objects.filter(pk=triple.pk).update(
            noun_candidates=candidates, noun_generation=generation
        )
        if job_id:
            job_progress(job_id=job_id, done=done, message=f"{result['drafted']} drafted")
    result["errors"] = result["errors"][:10]
    return result


def nouns_draft_start(*, bench: VLindBench, created_by=None):
    if not bench.triples.filter(status=VLindTriple.Status.KEPT).exists():
        raise Invalid("No kept triple yet: nouns are drafted for triples people accepted.")
    return job_enqueue(
        kind=NOUNS_JOB, params={"bench_id": bench.pk}, created_by=created_by, project=bench.project
    )


def nouns_pick(*, triple: VLindTriple, existent: str, non_existent: str) -> VLindTriple:
    """The person's choice of the pair (Sec. 4): s_exist and s_nil follow the template."""
    _require_kept(triple)
    existent = " ".join((existent or "").split())
    non_existent = " ".join((non_existent or "").split())
    if not existent or not non_existent:
        raise Invalid("Pick (or type) both nouns: one in the image, one absent from it.")
    if len(existent) > MAX_NOUN or len(non_existent) > MAX_NOUN:
        raise Invalid(f"A noun is at most {MAX_NOUN} characters.")
    if existent.casefold() == non_existent.casefold():
        raise Invalid("The two nouns must differ.")
    words = {w.casefold() for w in re.findall(r"[\w'’-]+", triple.context)}
    absent_words = {w.casefold() for w in re.findall(r"[\w'’-]+", non_existent)}
    clash = sorted(absent_words & words - {"a", "an", "the"})
    if clash:
        raise Invalid(
            f"“{non_existent}” should be absent from the image, but the context mentions "
            f"{', '.join(clash)}."
        )
    triple.existent_noun = existent
    triple.non_existent_noun = non_existent
    triple.save(update_fields=["existent_noun", "non_existent_noun"])
    return triple
