"""Shared pieces of the VLind-Bench tests: uploads, offline-drafted triples, three reviewers and
their answers, an assembled instance."""

from __future__ import annotations

import io

from annotator.platform import roles
from curation import gateway
from curation.recipes.vlind import archive, export, images, nouns, triples
from curation.recipes.vlind.demo import reviews_answer
from curation.recipes.vlind.models import VLindImage, VLindTriple
from tests.curation.recipes.common import png_bytes
from tests.factories import UserFactory


def export_zip(bench=None, *, version=None, appendix_b: bool = False) -> io.BytesIO:
    """The archive the export job writes (of the bench's assembly or of a frozen ``version``),
    built in memory after the job's own checks."""
    rows = export.version_rows(version) if version is not None else export.rows_of(bench)
    fh = io.BytesIO()
    archive.write_zip(fh, rows, by_sha=export.stored_images(rows), appendix_b=appendix_b)
    fh.seek(0)
    return fh


def upload(seed: int, name: str | None = None) -> images.Upload:
    return images.Upload(name=name or f"img{seed}.png", data=png_bytes(seed))


def draft_offline(bench, names=("color",), count=3):
    ids = list(bench.concepts.filter(name__in=names).values_list("pk", flat=True))
    return triples.triples_draft(
        bench=bench, concept_ids=ids, count=count, provider=gateway.provider_offline()
    )


def reviewers(n: int = 3) -> list:
    return [UserFactory(role=roles.CROWDWORKER) for _ in range(n)]


def answer(queue, people, accepts_of) -> None:
    """Person k accepts a task when k < accepts_of(task_id); everyone answers all they get."""
    queue.project.members.add(*people)  # people work in their projects only
    reviews_answer(queue, people, accepts_of)


def review_triples(bench, people, accepts: dict[int, int]) -> None:
    """``accepts``: context_id → accepts (of 3) for the triples of the bench."""
    by_task = {t.task_id: accepts.get(t.context_id, 3) for t in bench.triples.all()}
    bench.refresh_from_db()
    answer(bench.triple_queue, people, lambda task_id: by_task[task_id])


def review_images(bench, people, accepts: dict[int, int]) -> None:
    """``accepts``: VLindImage pk → accepts (of 3)."""
    by_task = {i.task_id: accepts.get(i.pk, 3) for i in VLindImage.objects.all()}
    bench.refresh_from_db()
    answer(bench.image_queue, people, lambda task_id: by_task[task_id])


def kept(bench) -> list[VLindTriple]:
    rows = list(bench.triples.filter(status="kept").order_by("context_id"))
    for t in rows:
        t.bench = bench
    return rows


def assemble(bench, triple, *, seed: int, accepts=(3, 2, 1), people=None) -> list[VLindImage]:
    """Upload one image per style, review them with ``accepts``, add a factual image and nouns."""
    rows = []
    for k, style in enumerate(("photorealistic", "illustration", "cartoon")):
        rows += images.images_upload(triple=triple, style=style, files=[upload(seed * 10 + k)])
    review_images(
        bench, people or reviewers(), {r.pk: a for r, a in zip(rows, accepts, strict=True)}
    )
    images.factual_upload(triple=triple, upload=upload(seed * 10 + 9, "factual.png"))
    nouns.nouns_pick(triple=triple, existent="a banana", non_existent="a kite")
    return rows
