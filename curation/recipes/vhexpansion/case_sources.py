"""Test-case sets from other sources (vhexpansion.txt Sec. 3): (image, question, answer) triples,
and the yes/no items of a NaturalBench version of the evaluation app, four triples per sample."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import PurePosixPath

from annotator.platform.errors import Invalid, LineErrors
from annotator.platform.models import Project
from curation import assets
from curation.models import Image
from evaluation.families.naturalbench import layout as nb

from .case_import import (
    ANSWERS,
    MAX_QUESTION,
    SHA,
    CaseRow,
    check_name,
    images_in_reach,
    set_write,
)
from .models import VHCaseSet

NATURALBENCH = "naturalbench"  # the evaluation family whose yes/no items become cases
Triple = CaseRow  # (image, question, answer) for ``case_set_from_triples``


def case_set_from_triples(
    *,
    project: Project,
    name: str,
    triples: Sequence[Triple],
    source: str = "",
    description: str = "",
    created_by=None,
) -> VHCaseSet:
    """A set from (image, question, answer) triples, e.g. NaturalBench's yes/no items."""
    name = check_name(project, name)
    errors = LineErrors()
    seen: dict[str, int] = {}
    cases = []
    for k, t in enumerate(triples, start=1):
        external_id = (t.external_id or f"case-{k}")[:200]
        question = " ".join((t.question or "").split())
        answer = ANSWERS.get(str(t.answer).strip().lower())
        if not question or len(question) > MAX_QUESTION:
            errors.add(k, "the question is empty or too long")
        if answer is None:
            errors.add(k, f"the answer must be yes or no, got {t.answer!r}")
        if not isinstance(t.image, Image) or t.image.pk is None:
            errors.add(k, "the image must be a stored Image")
        if external_id in seen:
            errors.add(k, f"duplicate id {external_id!r} (first at {seen[external_id]})")
        seen.setdefault(external_id, k)
        short = {"source_dataset": t.source_dataset[:100], "category": t.category[:100]}
        cases.append(replace(t, external_id=external_id, question=question, answer=answer, **short))
    errors.raise_if_any("Some triples cannot become test cases; nothing was created.{more}")
    if not cases:
        raise Invalid("There are no test cases to create.")
    case_set = set_write(
        cases,
        project=project,
        name=name,
        description=description,
        source=source,
        created_by=created_by,
    )
    assets.thumbnails_make(image_ids=list({case.image.pk for case in cases}))
    return case_set


def image_by_reference(ref: str, *, reach) -> Image | None:
    """A stored image named by ``sha256:<hex>``, a bare SHA-256, ``image:<id>``, a content-
    addressed path (``images/<sha256>.png``, as exports write them), or a file name that exactly
    one stored image was uploaded as."""
    ref = (ref or "").strip()
    if not ref:
        return None
    sha = SHA.match(ref) or SHA.match(PurePosixPath(ref).stem)
    if sha:
        return reach.filter(sha256=sha.group(1).lower()).first()
    if ref.startswith("image:") and ref[6:].isdigit():
        return reach.filter(pk=int(ref[6:])).first()
    hits = list(reach.filter(original_name=PurePosixPath(ref).name)[:2])
    return hits[0] if len(hits) == 1 else None


def naturalbench_triples(*, version, user=None) -> list[Triple]:
    """Yes/no NaturalBench samples as four triples each (METRICS.md §1 layout: q0_i0 = Yes,
    q0_i1 = No, q1_i0 = No, q1_i1 = Yes). Images are looked up in the image store."""
    if version.benchmark.family != NATURALBENCH:
        raise Invalid("Choose a NaturalBench version.")
    reach = images_in_reach(user)
    errors = LineErrors()
    triples: list[Triple] = []
    items = version.items.order_by("position")
    for line, item in enumerate(items, start=1):
        data = item.data
        if data.get("question_type") != "yes_no":
            continue
        images = []
        for key in ("image_0", "image_1"):
            image = image_by_reference(str(data.get(key, "")), reach=reach)
            if image is None:
                errors.add(
                    line,
                    f"item {item.item_id}: {key} {data.get(key)!r} is not in the image store; "
                    "import the images first (as a corpus) or name them by sha256:<hex>",
                )
            images.append(image)
        if None in images:
            continue
        for key, answer in zip(nb.SAMPLE_KEYS, nb.expected_answers(nb.YES_NO), strict=True):
            q, i = key[1], int(key[4])
            triples.append(
                Triple(
                    image=images[i],
                    question=str(data.get(f"question_{q}", "")),
                    answer=answer.lower(),
                    external_id=f"{item.item_id}:{q}:{i}",
                    source_dataset=str(data.get("source") or "NaturalBench")[:100],
                    category="naturalbench",
                )
            )
    errors.raise_if_any("Some NaturalBench items cannot be used; nothing was created.{more}")
    if not triples:
        raise Invalid("This NaturalBench version has no yes/no items.")
    return triples


def case_set_from_naturalbench(*, project: Project, name: str, version, created_by=None):
    """A set from the yes/no items of a NaturalBench version of the evaluation app."""
    return case_set_from_triples(
        project=project,
        name=name,
        triples=naturalbench_triples(version=version, user=created_by),
        source=f"NaturalBench {version.benchmark.name} {version.label}",
        created_by=created_by,
    )
