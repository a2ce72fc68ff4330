"""Shared helpers of the NaturalBench tests: URLs (the recipe's pages mounted under curate/ like
curation/urls.py will), fixtures and small builders. No tests here."""

from __future__ import annotations

import io

from PIL import Image as PILImage

from annotator.platform import roles
from annotator.services import annotation_submit, assignment_claim
from curation import assets
from curation.models import Caption, Corpus, Image, LLMProvider, Sample
from curation.recipes.naturalbench import mining, pairs, pipelines, questions, samples, tags
from tests.curation.recipes.common import fake_provider, media  # noqa: F401  (media: a fixture)
from tests.factories import UserFactory

COLOURS = ["red", "green", "blue", "yellow", "purple", "orange", "white", "black", "pink", "cyan"]
SHAPES = ["circle", "square", "triangle", "star", "heart", "cross", "ring", "arrow", "moon", "leaf"]


def png_bytes(colour: str, size=(24, 18)) -> bytes:
    buf = io.BytesIO()
    PILImage.new("RGB", size, colour).save(buf, "PNG")
    return buf.getvalue()


def make_image(colour: str) -> Image:
    """A plain-colour 24 × 18 PNG in the image store (the same row for the same colour)."""
    return assets.image_ingest(data=png_bytes(colour), name=f"{colour}.png")[0]


def make_corpus(project, n: int = 6, name: str = "Shapes", extra=None) -> Corpus:
    """n samples, each a plain colour with the English caption "a <colour> <shape> …" (every
    pair of captions has content words the other lacks, so the offline drafter can draft)."""
    corpus = Corpus.objects.create(project=project, name=name, slug=name.lower())
    for k in range(n):
        sample = Sample.objects.create(
            corpus=corpus, image=make_image(COLOURS[k]), source_id=f"s{k}", position=k
        )
        Caption.objects.create(
            sample=sample, text=f"a {COLOURS[k]} {SHAPES[k]} on a plain background", position=0
        )
        for p, (language, text) in enumerate((extra or {}).get(k, []), start=1):
            Caption.objects.create(sample=sample, text=text, language=language, position=p)
    corpus.sample_count = n
    corpus.caption_count = Caption.objects.filter(sample__corpus=corpus).count()
    corpus.save()
    return corpus


def offline():
    from curation.gateway import provider_offline

    return provider_offline()


def make_pipeline(project, corpus, **fields):
    """A random-pairing pipeline (no scorer, so no embedding) drafted by the offline drafter."""
    values = {
        "name": "NB test",
        "corpus": corpus,
        "method": "random",
        "question_types": ["yes_no"],
        "provider": offline(),
        "auto_regenerate": False,
    }
    values.update(fields)
    return pipelines.pipeline_create(project=project, **values)


def annotators(project, n: int = 3):
    users = [UserFactory(username=f"nb-worker-{k}", role=roles.CROWDWORKER) for k in range(n)]
    project.members.add(*users)
    return users


def answer(queue, user, respond) -> int:
    """``user`` answers every task the engine hands them in ``queue`` with ``respond(task)``."""
    queue.refresh_from_db()
    count = 0
    claim = assignment_claim(queue=queue, annotator=user)
    while claim.task is not None:
        result = annotation_submit(
            task_id=claim.task.pk, annotator=user, response=respond(claim.task)
        )
        count += 1
        claim = result.next
    return count


def verify_all(pipeline, users, decision="keep"):
    pairs.pairs_send_to_review(pipeline=pipeline)
    pipeline.refresh_from_db()
    for user in users[: pipeline.annotators_per_item]:
        answer(pipeline.pair_queue, user, lambda task: {"decision": decision})


def intended(pipeline):
    from curation.recipes.naturalbench.models import VQAItem

    def respond(task):
        return {"answer": VQAItem.objects.get(task_id=task.pk).intended}

    return respond


def nb_provider(fake_openai, project) -> LLMProvider:
    """The fake server as a project LLM that is not the default (the pipeline names it)."""
    return fake_provider(
        project,
        fake_openai,
        is_default=False,
        model="fake-model",
        max_tokens=256,
        timeout_s=5.0,
        max_retries=0,
    )


TAGS = {0: {"tags": ["others", "shape", "color"]}, 1: {"tags": ["others", "logic"]}}


def built_pipeline(project):
    """Two verified pairs, both question types, every item answered as intended, assembled,
    tagged the same way by its three taggers."""
    pipeline = make_pipeline(
        project,
        make_corpus(project, n=6),
        random_pairs=2,
        question_types=["yes_no", "multiple_choice"],
    )
    mining.pairs_mine(pipeline=pipeline)
    users = annotators(project)
    verify_all(pipeline, users)
    questions.questions_draft(pipeline=pipeline)
    for user in users[:2]:
        answer(pipeline.answer_queue, user, intended(pipeline))
    samples.samples_assemble(pipeline=pipeline)
    tags.skills_send_to_tagging(pipeline=pipeline)
    pipeline.refresh_from_db()
    by_task = {}
    for sample in pipeline.samples.all():
        by_task[sample.tag_task_0_id] = TAGS[0]
        by_task[sample.tag_task_1_id] = TAGS[1]
    for user in users:
        answer(pipeline.tag_queue, user, lambda t: by_task[t.pk])
    return pipeline
