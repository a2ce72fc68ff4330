"""The VLind-Bench part of the demo: a bench with a few triples at every stage of the funnel and
review tasks waiting, everything made through the services and the annotation engine.

Triples come from the offline drafter (hand-written, labelled offline); images are placeholders
drawn with Pillow and labelled as such (origin "placeholder", the word on the picture). Three
simulated reviewers (accounts without a usable password) answer the first rounds, so some
triples and images are decided and others wait for the demo's crowdworkers. The version it
publishes gets the demo's model runs (the offline blind baseline and two offline stand-ins, each
labelled so), so its leaderboard has rows and plots.
"""

from __future__ import annotations

import io
import textwrap
import zlib
from collections.abc import Callable

from annotator.platform.models import Project
from curation import assets, gateway
from curation.recipes.framework.demo import demo_annotators, demo_once, demo_work
from curation.recipes.framework.exports import export_run_now
from curation.recipes.framework.publish import publish_object
from curation.recipes.framework.registry import recipe_for
from evaluation.runners import demo_runs_add

from . import benches, images, nouns, prompts, triples
from .models import VLindBench, VLindImage, VLindTriple

DEMO_NAME = "VLind-Bench demo"
REVIEWER_NAMES = ("vlind-reviewer-1", "vlind-reviewer-2", "vlind-reviewer-3")
STYLE_COLOURS = {
    "photorealistic": ((52, 86, 120), (170, 196, 214)),
    "illustration": ((196, 140, 84), (246, 226, 196)),
    "cartoon": ((210, 52, 96), (255, 236, 120)),
}
# Accepts (of 3) the simulated reviewers give, in drafting / upload order.
TRIPLE_ACCEPTS = (3, 3, 2, 1, 3, 2, 0, 3, 3, 2, 3, 1)
IMAGE_ACCEPTS = ((3, 2, 1), (1, 0, 1), (3, 3, 3), (2, 1, 3), (3, 1, 2), (0, 2, 3))


def placeholder_png(*, text: str, style: str, label: str, seed: int) -> bytes:
    """A 512×384 picture that says it is a placeholder: style colours, a few shapes, the text."""
    from PIL import Image as PILImage
    from PIL import ImageDraw

    dark, light = STYLE_COLOURS.get(style, ((60, 60, 60), (220, 220, 220)))
    img = PILImage.new("RGB", (512, 384), light)
    draw = ImageDraw.Draw(img)
    x = seed % 200
    for k in range(4):
        r = 30 + (seed >> (k * 3)) % 40
        cx, cy = 60 + (x + k * 110) % 420, 250 + (k * 37 + seed) % 90
        shape = [cx - r, cy - r, cx + r, cy + r]
        if style == "cartoon":
            draw.ellipse(shape, fill=dark, outline=(0, 0, 0), width=4)
        elif style == "illustration":
            draw.rounded_rectangle(shape, radius=12, fill=dark)
        else:
            draw.rectangle(shape, fill=tuple(min(255, c + 30 * k) for c in dark))
    draw.rectangle([0, 0, 512, 44], fill=dark)
    draw.text((12, 10), f"PLACEHOLDER · {label}", fill=(255, 255, 255), font=_font(20))
    wrapped = "\n".join(textwrap.wrap(text, width=44)[:5])
    draw.multiline_text((14, 60), wrapped, fill=(20, 20, 20), font=_font(18), spacing=4)
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def _font(size: int):
    from PIL import ImageFont

    return ImageFont.load_default(size=size)


def _seed(*parts) -> int:
    return zlib.crc32("|".join(map(str, parts)).encode())


def reviews_answer(queue, people, accepts_of: Callable[[int], int]) -> None:
    """Each reviewer (k = 0, 1, …) answers every task handed out to them: accept while k <
    ``accepts_of(task id)``, else reject (the demo and the tests)."""
    criteria = queue.config.get("criteria", [])
    for k, person in enumerate(people):

        def verdict(task, k=k) -> dict:
            if k < accepts_of(task.pk):
                # every criterion ticked: the review kind accepts nothing less
                return {"verdict": "accept", "checked": list(range(len(criteria)))}
            return {"verdict": "reject", "reason": "unclear_truth"}

        demo_work(queue, person, verdict)


def _placeholder_image(triple: VLindTriple, slot: int, curator) -> VLindImage:
    """A placeholder counterfactual image of the triple in ``slot`` (its style), sent to review."""
    style = prompts.style_of_slot(slot)
    seed = _seed(triple.pk, slot)
    data = placeholder_png(text=triple.context, style=style, label=f"{style} #{slot}", seed=seed)
    image, _new = assets.image_ingest(
        data=data,
        name=f"vlind-demo-{triple.pk}-{slot}.png",
        source="placeholder (VLind-Bench demo, drawn with Pillow)",
        created_by=curator,
    )
    origin = VLindImage.Origin.PLACEHOLDER
    return images.image_record(triple, slot, image, origin, created_by=curator)


def _add_images(triples: list[VLindTriple], curator) -> list[VLindImage]:
    """A placeholder image in the first slot of each style of every triple."""
    slots = prompts.STYLE_BASE.values()
    return [_placeholder_image(triple, slot, curator) for triple in triples for slot in slots]


@demo_once(VLindBench, DEMO_NAME)
def vlind_demo(*, project: Project, curator) -> VLindBench:
    """Made once per project (``demo_once``: an existing demo bench is returned as it is)."""
    bench = benches.bench_create(
        project=project,
        name=DEMO_NAME,
        description=(
            "Demo data: triples from the offline drafter (hand-written), images are Pillow "
            "placeholders. Configure an LLM and an image endpoint for real ones."
        ),
        triples_per_concept=4,
        created_by=curator,
    )
    offline = gateway.provider_offline()
    concepts = {c.name: c for c in bench.concepts.all()}
    people = demo_annotators(project, REVIEWER_NAMES)

    # Round 1: twelve triples, decided by the simulated reviewers (some rejected).
    triples.triples_draft(
        bench=bench,
        concept_ids=[concepts[n].pk for n in ("color", "habitat", "landmark")],
        count=4,
        provider=offline,
        created_by=curator,
    )
    kept = _triples_reviewed(bench, people)
    reviewed, waiting = _images_reviewed(bench, kept, people, curator)
    _factual_and_nouns(bench, kept, offline, curator)
    assets.thumbnails_make(
        image_ids=[r.image_id for r in [*reviewed, *waiting]]
        + [t.factual_image_id for t in bench.triples.exclude(factual_image=None)]
    )
    recipe = recipe_for(bench)
    version = publish_object(recipe, bench, label="demo-v1", created_by=curator)
    # The version's archive for the datasets pages, and its leaderboard's rows: the offline blind
    # baseline and two labelled offline stand-ins.
    params = {"version_id": version.pk, "appendix_b": False}
    export_run_now(recipe, recipe.exports[0], bench, params, created_by=curator)
    demo_runs_add(version=version, created_by=curator)

    # Round 2: six more triples left waiting for the demo's crowdworkers.
    triples.triples_draft(
        bench=bench,
        concept_ids=[concepts[n].pk for n in ("size", "weight")],
        count=3,
        provider=offline,
        created_by=curator,
    )
    return bench


def _triples_reviewed(bench: VLindBench, people: list) -> list[VLindTriple]:
    """The first round's triples answered by the simulated reviewers; the kept ones."""
    first = list(bench.triples.order_by("concept__position", "context_id"))
    wanted = {t.task_id: TRIPLE_ACCEPTS[k % len(TRIPLE_ACCEPTS)] for k, t in enumerate(first)}
    bench.refresh_from_db()
    reviews_answer(bench.triple_queue, people, lambda task_id: wanted.get(task_id, 3))
    kept = list(
        bench.triples.filter(status=VLindTriple.Status.KEPT).order_by(
            "concept__position", "context_id"
        )
    )
    for t in kept:
        t.bench = bench
    return kept


def _images_reviewed(bench: VLindBench, kept: list, people: list, curator):
    """Images: six triples reviewed (one ends with no good image), two waiting, one with none."""
    reviewed = _add_images(kept[:6], curator)
    image_wanted = {row.task_id: IMAGE_ACCEPTS[k // 3][k % 3] for k, row in enumerate(reviewed)}
    bench.refresh_from_db()
    reviews_answer(bench.image_queue, people, lambda task_id: image_wanted.get(task_id, 3))
    return reviewed, _add_images(kept[6:8], curator)


def _factual_and_nouns(bench: VLindBench, kept: list, offline, curator) -> None:
    """Factual images and nouns: three instances assembled, others one step short."""
    with_good = [t for t in kept[:6] if t.images.filter(status=VLindImage.Status.GOOD).exists()]
    for t in with_good[:4]:
        images.factual_upload(
            triple=t,
            upload=images.Upload(
                name=f"factual-{t.pk}.png",
                data=placeholder_png(
                    text=t.factual_context or t.false_statement,
                    style="photorealistic",
                    label="factual",
                    seed=_seed(t.pk, "factual"),
                ),
            ),
            created_by=curator,
        )
    nouns.nouns_draft(bench=bench, provider=offline, created_by=curator)
    for t in with_good[:3]:
        t.refresh_from_db()
        candidates = t.noun_candidates
        nouns.nouns_pick(
            triple=t,
            existent=candidates["nouns"][0],
            non_existent=candidates["non-existent_nouns"][0],
        )
