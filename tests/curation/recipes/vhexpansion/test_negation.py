"""Negation (vhexpansion.txt Sec. 3.1, Fig. 3) through the gateway — the offline negator and the
fake OpenAI-compatible server — and its review queue: accept, reject → draft again → drop, and a
rejected negation never reaches an export."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from annotator.models import Task
from annotator.platform.errors import Invalid
from annotator.platform.models import Job
from curation import gateway
from curation.models import Generation, LLMProvider
from curation.recipes.vhexpansion import case_sources, export, negations, selectors
from curation.recipes.vhexpansion.models import VHCase, VHNegation
from tests.curation.recipes.common import fake_provider
from tests.curation.recipes.vhexpansion import helpers
from tests.curation.recipes.vhexpansion.helpers import draft_negations, review, reviewers
from tests.fake_openai import reply, status

pytestmark = pytest.mark.django_db
case_set = helpers.case_set
media = helpers.media

OFFLINE = {
    "c1": "Is there no cat in the image?",
    "c2": "Is it false that the cup is on the table?",
    "c3": "Is it false that the two dogs are sleeping?",
}


def negations_of(case_set):
    return {
        n.case.external_id: (n.attempt, n.question, n.answer, n.status)
        for n in VHNegation.objects.filter(case__case_set=case_set).select_related("case")
    }


def fake_llm(case_set, fake_openai) -> LLMProvider:
    """The project's default provider: the fake OpenAI-compatible server."""
    return fake_provider(case_set.project, fake_openai, model="fake-model", timeout_s=5)


def test_offline_negator_drafts_flips_the_answer_and_queues_a_review(case_set):
    # given a set of three cases and no LLM configured (the offline drafter answers)
    # when negations are drafted
    counts = negations.negations_draft(case_set=case_set)
    # then each case has one negation in review, its answer flipped, linked to its case
    assert counts == {"drafted": 3, "in_review": 3, "discarded": 0, "failed": 0, "fallback": 0}
    assert negations_of(case_set) == {
        "c1": (1, OFFLINE["c1"], "no", "review"),
        "c2": (1, OFFLINE["c2"], "yes", "review"),
        "c3": (1, OFFLINE["c3"], "no", "review"),
    }
    case_set.refresh_from_db()
    queue = case_set.review_queue
    assert (queue.kind, queue.redundancy, queue.outcome_handler) == (
        "review",
        3,
        "vhexpansion.negation_review",
    )
    task = VHNegation.objects.get(case__external_id="c2").task
    assert task.payload["title"] == negations.REVIEW_QUESTION
    assert task.payload["fields"] == {
        "Original question": "Is the cup on the table?",
        "Original answer": "No",
        "Negated question": OFFLINE["c2"],
        "Negated answer": "Yes",
    }
    gen = VHNegation.objects.get(case__external_id="c1").generation
    assert (gen.provider_kind, gen.template_name, gen.purpose, gen.status) == (
        "offline",
        "vhexpansion-negation",
        "vhexpansion.negation",
        "ok",
    )
    assert set(VHCase.objects.values_list("negation_state", flat=True)) == {"review"}


def test_drafting_twice_changes_nothing(case_set):
    negations.negations_draft(case_set=case_set)
    again = negations.negations_draft(case_set=case_set)
    assert again["drafted"] == 0
    assert VHNegation.objects.count() == 3
    assert Task.objects.count() == 3


def test_fake_llm_drafts_with_the_fig3_prompt(case_set, fake_openai):
    # given a project provider pointing at the fake OpenAI server that negates by a/an → no
    fake_llm(case_set, fake_openai)
    answers = {
        "Is there a cat in the image?": "Negated question: “Is there no cat in the image?”",
        "Is the cup on the table?": "Is it false that the cup is on the table?",
        "Are the two dogs sleeping?": "Is it false that the two dogs are sleeping?",
    }

    def by_prompt(body):
        prompt = body["messages"][-1]["content"]
        question = prompt.rsplit("The question is: ", 1)[1][:-1]
        return reply(answers[question])

    fake_openai.default = by_prompt
    # when negations are drafted
    counts = negations.negations_draft(case_set=case_set)
    # then the prompt was the paper's, the reply's label and quotes are gone, no fallback
    assert counts["in_review"] == 3 and counts["fallback"] == 0
    prompt = fake_openai.chat_requests[0]["body"]["messages"][-1]["content"]
    assert prompt.startswith("Rephrase the following question to be a negated question")
    assert prompt.endswith("The question is: Is there a cat in the image?.")
    assert negations_of(case_set)["c1"] == (1, "Is there no cat in the image?", "no", "review")
    assert {g.provider_kind for g in Generation.objects.all()} == {"openai"}
    assert [g.seed for g in Generation.objects.order_by("id")] == [1, 1, 1]


def test_failing_llm_falls_back_to_the_offline_negator(case_set, fake_openai):
    fake_llm(case_set, fake_openai)
    fake_openai.default = status(400, {"error": {"message": "bad model", "type": "invalid"}})
    counts = negations.negations_draft(case_set=case_set)
    assert counts == {"drafted": 3, "in_review": 3, "discarded": 0, "failed": 0, "fallback": 3}
    negation = VHNegation.objects.get(case__external_id="c1")
    assert (negation.question, negation.fallback, negation.generation.provider_kind) == (
        OFFLINE["c1"],
        True,
        "offline",
    )
    assert Generation.objects.filter(status="failed", provider_kind="openai").count() == 3


def test_a_question_no_rule_can_negate_fails_with_the_reason(project, curator, media):
    from curation import assets

    image, _ = assets.image_ingest(data=_png(), name="x.png")
    case_set = case_sources.case_set_from_triples(
        project=project,
        name="odd",
        triples=[
            case_sources.Triple(image=image, question="What colour is the car?", answer="yes")
        ],
        created_by=curator,
    )
    counts = negations.negations_draft(case_set=case_set)
    case = case_set.cases.get()
    assert counts["failed"] == 1
    assert case.negation_state == "failed"
    assert "does not start with an auxiliary verb" in case.negation_error
    assert VHNegation.objects.count() == 0


def _png() -> bytes:
    return helpers.png_bytes(99)


def test_review_accepts_rejects_regenerates_and_drops(
    case_set,
    eager,
    django_capture_on_commit_callbacks,
):
    # given drafted negations reviewed by two people (N = 2, majority)
    draft_negations(case_set, reviewers=2)
    queue = case_set.review_queue
    assert queue.redundancy == 2
    people = reviewers(2)
    # when both accept c1 and c2 and reject c3
    with django_capture_on_commit_callbacks(execute=True):
        review(queue, people, {"c1": "accept", "c2": "accept", "c3": "reject"})
    # then c1 and c2 are accepted; c3 was drafted again by a job: the offline negator repeats
    # the rejected question, so both later attempts are discarded unreviewed and c3 is dropped
    states = dict(VHCase.objects.values_list("external_id", "negation_state"))
    assert states == {"c1": "accepted", "c2": "accepted", "c3": "dropped"}
    assert [
        (n.attempt, n.status, n.note)
        for n in VHNegation.objects.filter(case__external_id="c3").order_by("attempt")
    ] == [
        (1, "rejected", ""),
        (2, "discarded", "The draft repeats a rejected negation."),
        (3, "discarded", "The draft repeats a rejected negation."),
    ]
    rejected = VHNegation.objects.get(case__external_id="c3", attempt=1)
    assert rejected.votes == {"reject": 2}
    job = Job.objects.get(kind=negations.NEGATE_JOB)
    assert (job.status, job.params) == (
        "succeeded",
        {"case_set_id": case_set.pk, "regenerate": True},
    )
    # and the acceptance rate is accepted / reviewed
    f = selectors.funnel(case_set)
    assert (f["accepted"], f["reviewed"], f["acceptance_rate"]) == (2, 3, pytest.approx(2 / 3))
    assert f["states"]["dropped"] == 1


def test_a_rejected_negation_never_reaches_an_export(case_set, media):
    # given c3's negation rejected by the review (and the set's attempts exhausted)
    draft_negations(case_set, reviewers=1, max_attempts=1)
    review(case_set.review_queue, reviewers(1), {"c1": "accept", "c2": "accept", "c3": "reject"})
    assert VHCase.objects.get(external_id="c3").negation_state == "dropped"
    # when the set is exported and published
    rows = export.expanded_set(case_set=case_set).rows
    data = helpers.export_zip(case_set, fmt="jsonl").read()
    llava = helpers.export_zip(case_set, fmt="llava").read()
    version = helpers.publish(case_set, "v1")
    # then nothing of c3 is anywhere: not its rejected negation, not even its original
    assert [r["id"] for r in rows] == [
        "c1:original:q",
        "c1:original:neg",
        "c2:original:q",
        "c2:original:neg",
    ]
    for blob in (data, llava):
        with zipfile.ZipFile(io.BytesIO(blob)) as zf:
            text = "".join(
                zf.read(n).decode() for n in zf.namelist() if n.endswith((".jsonl", ".json"))
            )
        assert OFFLINE["c3"] not in text and "two dogs" not in text
    assert sorted(version.items.values_list("item_id", flat=True)) == sorted(r["id"] for r in rows)


def test_a_negation_still_in_review_is_not_exported(case_set):
    negations.negations_draft(case_set=case_set)
    assert export.expanded_set(case_set=case_set).rows == []
    with pytest.raises(Invalid, match="no case has an accepted negation"):
        helpers.export_zip(case_set, fmt="jsonl")


def test_the_prompt_is_an_editable_template(case_set, curator):
    # given a curator's edit of the negation prompt
    from curation import gateway

    current = negations.negation_template()
    gateway.template_update(
        name=current.name,
        text="Negate this yes/no question, nothing else: {question}",
        created_by=curator,
    )
    negations.negations_draft(case_set=case_set)
    gen = VHNegation.objects.get(case__external_id="c1").generation
    assert gen.template_version == current.version + 1
    assert json.dumps(gen.messages).count("Negate this yes/no question, nothing else") == 1


def test_an_edit_never_changes_a_running_set_until_its_curator_moves_the_pin(
    case_set, curator, admin_user
):
    # given a set whose negations were drafted with the seeded prompt (the project pins it)
    negations.negations_draft(case_set=case_set)
    first = VHNegation.objects.get(case__external_id="c1").generation
    # when an admin saves a new version of the shared prompt
    edited = gateway.template_update(
        name=first.template_name, text="Negate, nothing else: {question}", created_by=admin_user
    )
    case = VHCase.objects.get(case_set=case_set, external_id="c1")
    again = negations.negation_generate(case=case, attempt=2)
    # then the set's next draft still renders the version it started with
    assert (again.generation.template_version, edited.version) == (first.template_version, 2)
    assert "Negate, nothing else" not in json.dumps(again.generation.messages)
    assert negations.negation_template(case_set.project).version == first.template_version
    # and once a curator of the project moves the pin, the next draft renders the new one
    gateway.template_pin(
        project=case_set.project, name=first.template_name, version=2, pinned_by=curator
    )
    moved = negations.negation_generate(case=case, attempt=3)
    assert moved.generation.template_version == 2
    assert "Negate, nothing else" in json.dumps(moved.generation.messages)
