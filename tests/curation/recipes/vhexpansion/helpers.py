"""Shared pieces of the VHExpansion tests: small images, an archive, a set whose negations people
have reviewed, the recipe's URLs mounted like curation/urls.py will mount them.

Fixtures are imported by name into the test modules that use them.
"""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from annotator import services as annotator_services
from annotator.models import Task
from annotator.platform import roles
from curation.corpora import MemorySource
from curation.recipes.framework.publish import publish_object
from curation.recipes.framework.registry import recipe_of
from curation.recipes.vhexpansion import case_import, case_sources, export, negations
from curation.recipes.vhexpansion.models import VHNegation
from tests.curation.recipes import common
from tests.factories import UserFactory

QUESTIONS = [
    ("c1", "Is there a cat in the image?", "yes"),
    ("c2", "Is the cup on the table?", "no"),
    ("c3", "Are the two dogs sleeping?", "yes"),
]


def zip_bytes(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


media = common.media  # the fixture, for the modules that import it from here
png_bytes = common.png_bytes


def jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def case_rows(n: int = 3) -> list[dict]:
    return [
        {"id": cid, "image": f"img/{cid}.png", "question": q, "answer": a, "source": "MMVP"}
        for cid, q, a in QUESTIONS[:n]
    ]


def archive_for(rows: list[dict]) -> dict[str, bytes]:
    return {r["image"]: png_bytes(k) for k, r in enumerate(rows)}


def import_cases(project, curator, name: str = "MMVP sample"):
    """Three cases with stored images, imported the way the job imports them."""

    rows = case_rows()
    return case_import.case_set_import(
        project=project,
        name=name,
        content=jsonl(rows),
        filename="cases.jsonl",
        source=MemorySource(archive_for(rows)),
        created_by=curator,
    )


@pytest.fixture
def case_set(project, curator, media):
    return import_cases(project, curator)


def two_cases(project, name: str, first, second):
    """A set of two test cases: "Is it red?" (yes) on image ``first``, "Is it blue?" (no) on
    image ``second``."""
    return case_sources.case_set_from_triples(
        project=project,
        name=name,
        triples=[
            case_sources.Triple(image=first, question="Is it red?", answer="yes"),
            case_sources.Triple(image=second, question="Is it blue?", answer="no"),
        ],
    )


def draft_negations(case_set, **settings) -> None:
    """The set's review settings (reviewers=N, max_attempts…), then its negations drafted
    (offline rules) and the set reloaded with its review queue."""
    negations.case_set_settings(case_set=case_set, **settings)
    negations.negations_draft(case_set=case_set)
    case_set.refresh_from_db()


def reviewers(n: int) -> list:
    return [UserFactory(role=roles.CROWDWORKER) for _ in range(n)]


def review(queue, people, verdicts: dict[str, str]) -> None:
    """Each person answers every task they are handed: verdict by the negation's case id."""

    queue.project.members.add(*people)  # people work in their projects only
    for person in people:
        while True:
            queue.refresh_from_db()
            got = annotator_services.assignment_claim(queue=queue, annotator=person)
            if got.assignment is None:
                break
            negation = VHNegation.objects.select_related("case").get(task_id=got.assignment.task_id)
            verdict = verdicts[negation.case.external_id]
            annotator_services.annotation_submit(
                task_id=got.assignment.task_id,
                annotator=person,
                response={
                    "verdict": verdict,
                    **({"reason": "changed"} if verdict == "reject" else {}),
                    **(
                        {"checked": list(range(len(queue.config.get("criteria", []))))}
                        if verdict == "accept"
                        else {}
                    ),
                },
            )


def open_tasks(queue) -> int:
    return Task.objects.filter(queue=queue, state=Task.State.OPEN).count()


def publish(case_set, label: str, created_by=None):
    """Publish the expanded set as the page's button does (the set's benchmark, made once)."""

    return publish_object(recipe_of("vhexpansion"), case_set, label=label, created_by=created_by)


def export_zip(case_set, fmt: str = "jsonl") -> io.BytesIO:
    """The zip the export job writes, in memory (refused as the job is: nothing accepted)."""
    export.export_check(case_set, {"fmt": fmt})
    buf = io.BytesIO()
    export.write_zip(buf, expanded=export.expanded_set(case_set=case_set), fmt=fmt)
    buf.seek(0)
    return buf
