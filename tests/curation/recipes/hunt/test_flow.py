"""A hunt end to end through the services, the real job and the real gateway (fake server):
a question, the live verdicts, the partner image and second question, verification by two other
people, publishing as a NaturalBench version with provenance."""

from __future__ import annotations

import io

import pyarrow.parquet as pq
import pytest
from django.core.files.storage import default_storage

from annotator.services import annotation_submit, assignment_claim
from curation.models import Generation
from curation.recipes.framework import exports
from curation.recipes.framework.publish import publish_object
from curation.recipes.framework.registry import recipe_of
from curation.recipes.hunt import candidates as svc
from curation.recipes.hunt import criterion, publish
from curation.recipes.hunt.models import HuntAnswer, HuntCandidate, HuntCheck
from evaluation.families.naturalbench import layout as nb
from evaluation.families.naturalbench import release as nb_release

pytestmark = pytest.mark.django_db


def test_a_hunt_from_question_to_published_sample(
    hunt_round, crowdworker, other_worker, third_worker, eager, django_capture_on_commit_callbacks
):
    image = hunt_round.corpus.samples.order_by("position").first().image
    # Given the worker asks a question whose true answer on the picture is "No"
    with django_capture_on_commit_callbacks(execute=True):
        cand = svc.candidate_submit(
            round_=hunt_round,
            worker=crowdworker,
            image_id=image.pk,
            question="Is there a purple elephant in the picture?",
            answer="no",
        )
    cand.refresh_from_db()
    # Then both targets and the blind model answered the first item (q0_i1: "No" is on image 1)
    assert cand.state == HuntCandidate.State.PARTNER
    first = HuntAnswer.objects.filter(candidate=cand)
    assert sorted(first.values_list("slot", flat=True)) == ["q0_i1"] * 3
    yes_sayer = first.get(target__alias="Model B")
    assert (yes_sayer.parsed, yes_sayer.correct) == ("a0", False)  # fooled
    assert cand.verdict["fooled"]["Model B"] == 1
    assert yes_sayer.generation.status == Generation.Status.OK
    assert yes_sayer.generation.purpose == "hunt.target"
    blind = first.get(target=None)
    assert blind.generation.params.get("images") is None  # the blind model never sees it
    assert len(cand.neighbours["images"]) == hunt_round.neighbours
    assert cand.neighbours["method"] == "random"  # the round has no scorer

    # When the worker picks a partner and writes the second question
    partner = cand.neighbours["images"][0]["id"]
    with django_capture_on_commit_callbacks(execute=True):
        svc.candidate_pair(
            candidate=cand,
            worker=crowdworker,
            partner_id=partner,
            question_1="Is there no purple elephant here at all?",
        )
    cand.refresh_from_db()
    # Then the 2 x 2 is answered: the yes-sayer is fooled twice, the blind model is at chance
    assert HuntAnswer.objects.filter(candidate=cand).count() == 12
    assert cand.verdict["fooled"]["Model B"] == 2
    assert cand.verdict["blind_correct"] == 2 and cand.verdict["blind_chance"] == 2.0
    assert cand.blindspot is True and cand.state == HuntCandidate.State.VERIFYING
    # image 0 is the partner (where the first question is "Yes")
    assert cand.record["Image_0"] == f"sha256:{cand.partner.sha256}"
    assert cand.record["Image_1_Question_0"] == "No"

    # The author cannot verify their own item; two others answer as intended
    queue = hunt_round.__class__.objects.get(pk=hunt_round.pk).verify_queue
    assert assignment_claim(queue=queue, annotator=crowdworker).task is None
    for person in (other_worker, third_worker):
        claim = assignment_claim(queue=queue, annotator=person)
        while claim.task is not None:
            check = HuntCheck.objects.get(task=claim.task)
            assert claim.task.payload["choices"] == ["Yes", "No"]
            result = annotation_submit(
                task_id=claim.task.pk, annotator=person, response={"answer": check.intended}
            )
            claim = result.next
    cand.refresh_from_db()
    assert cand.state == HuntCandidate.State.VALIDATED and cand.points == 10

    # Published as a NaturalBench version carrying the hunt's provenance
    version = publish_object(recipe_of("hunt"), hunt_round, label="v1", created_by=None)
    item = version.items.get()
    assert version.benchmark.family == "naturalbench"
    assert item.item_id == str(cand.pk)
    assert item.data["question_0"] == cand.question
    assert item.data["hunt"]["worker"] == crowdworker.username
    assert item.data["hunt"]["round"] == hunt_round.pk
    assert len(item.data["hunt"]["answers"]) == 12
    assert {a["prompt"] for a in item.data["hunt"]["answers"]} == {"eval-naturalbench-yes-no"}


def test_a_verifier_who_disagrees_rejects_the_item(
    hunt_round, crowdworker, other_worker, third_worker, eager, django_capture_on_commit_callbacks
):
    image = hunt_round.corpus.samples.order_by("position").first().image
    with django_capture_on_commit_callbacks(execute=True):
        cand = svc.candidate_submit(
            round_=hunt_round,
            worker=crowdworker,
            image_id=image.pk,
            question="Is there a purple elephant in the picture?",
            answer="no",
        )
    cand.refresh_from_db()
    with django_capture_on_commit_callbacks(execute=True):
        svc.candidate_pair(
            candidate=cand,
            worker=crowdworker,
            partner_id=cand.neighbours["images"][1]["id"],
            question_1="Is the picture free of purple elephants?",
        )
    queue = HuntCheck.objects.filter(candidate=cand).first().task.queue
    # When one verifier says "Unanswerable" on the first slot they get, the other as intended
    for person, odd in ((other_worker, True), (third_worker, False)):
        claim = assignment_claim(queue=queue, annotator=person)
        while claim.task is not None:
            check = HuntCheck.objects.get(task=claim.task)
            answer = "Unanswerable" if odd else check.intended
            odd = False
            claim = annotation_submit(
                task_id=claim.task.pk, annotator=person, response={"answer": answer}
            ).next
    cand.refresh_from_db()
    # Then the item is rejected with the reason, earns nothing and is not published
    assert cand.state == HuntCandidate.State.REJECTED and cand.points == 0
    assert "Unanswerable" in cand.error
    with pytest.raises(svc.Invalid, match="Nothing to publish"):
        publish_object(recipe_of("hunt"), hunt_round, label="v1", created_by=None)


def test_limits_and_duplicates_are_refused_with_a_reason(hunt_round, crowdworker, eager):
    image = hunt_round.corpus.samples.order_by("position").first().image
    kwargs = {"round_": hunt_round, "worker": crowdworker, "image_id": image.pk, "answer": "yes"}
    with pytest.raises(svc.Invalid, match="at least 8"):
        svc.candidate_submit(question="Red?", **kwargs)
    with pytest.raises(svc.Invalid, match="not in this round's pool"):
        svc.candidate_submit(question="Is it red or not?", **{**kwargs, "image_id": 10**9})
    svc.candidate_submit(question="Is the shape red?", **kwargs)
    with pytest.raises(svc.Conflict, match="already asked"):
        svc.candidate_submit(question="is the SHAPE red", **kwargs)
    hunt_round.max_per_minute = 2
    hunt_round.save()
    svc.candidate_submit(question="Is the shape blue?", **kwargs)
    with pytest.raises(svc.RateLimited, match="At most 2 questions a minute"):
        svc.candidate_submit(question="Is the shape green?", **kwargs)
    assert HuntCandidate.objects.filter(round=hunt_round).count() == 2
    assert criterion.A0 == "a0"


def test_a_two_option_hunt_is_published_as_multiple_choice(
    two_option_round,
    fake_openai,
    crowdworker,
    other_worker,
    third_worker,
    eager,
    django_capture_on_commit_callbacks,
):
    round_ = two_option_round
    image = round_.corpus.samples.order_by("position").first().image
    # Given a two-option question whose true option on the picture is B
    with django_capture_on_commit_callbacks(execute=True):
        cand = svc.candidate_submit(
            round_=round_,
            worker=crowdworker,
            image_id=image.pk,
            question="What colour is the large shape?",
            options=("red", "blue"),
            answer="b",
        )
    cand.refresh_from_db()
    assert cand.question == "What colour is the large shape?\nOption: A:red; B:blue;"
    # Then every model was asked with the family's multiple-choice prompt (no space, Sec. 4)
    prompts = {
        r["body"]["messages"][0]["content"][0]["text"]
        if isinstance(r["body"]["messages"][0]["content"], list)
        else r["body"]["messages"][0]["content"]
        for r in fake_openai.chat_requests
    }
    assert prompts == {
        cand.question + "Please output the letter corresponding to the correct option."
    }
    # and the answers were read by the family's parser: the A-sayer is fooled on option B
    a_sayer = HuntAnswer.objects.get(candidate=cand, target__alias="Model B")
    assert (a_sayer.slot, a_sayer.text, a_sayer.parsed, a_sayer.correct) == (
        "q0_i1",
        "A.",
        "a0",
        False,
    )
    assert cand.state == HuntCandidate.State.PARTNER
    assert cand.verdict["fooled"]["Model B"] == 1

    # When the worker picks a partner and asks the question with its options swapped
    with django_capture_on_commit_callbacks(execute=True):
        svc.candidate_pair(
            candidate=cand,
            worker=crowdworker,
            partner_id=cand.neighbours["images"][0]["id"],
            question_1="What colour is the large shape?",
            options_1=("blue", "red"),
        )
    cand.refresh_from_db()
    assert cand.verdict["fooled"]["Model B"] == 2 and cand.state == HuntCandidate.State.VERIFYING
    assert cand.record["Question_Type"] == "multiple_choice"
    assert cand.record["Question_1"] == "What colour is the large shape?\nOption: A:blue; B:red;"
    assert [cand.record[f] for f in nb.ANSWER_FIELDS] == ["A", "B", "B", "A"]

    # Verifiers see the question without its options and choose among "A: red" / "B: blue"
    queue = HuntCheck.objects.filter(candidate=cand).first().task.queue
    for person in (other_worker, third_worker):
        claim = assignment_claim(queue=queue, annotator=person)
        while claim.task is not None:
            check = HuntCheck.objects.get(task=claim.task)
            payload = claim.task.payload
            assert payload["question"] == "What colour is the large shape?"
            assert check.intended in payload["choices"]
            assert payload["choices"] in (["A: red", "B: blue"], ["A: blue", "B: red"])
            claim = annotation_submit(
                task_id=claim.task.pk, annotator=person, response={"answer": check.intended}
            ).next
    cand.refresh_from_db()
    assert cand.state == HuntCandidate.State.VALIDATED
    intended = dict(HuntCheck.objects.filter(candidate=cand).values_list("slot", "intended"))
    assert intended == {
        "q0_i0": "A: red",
        "q0_i1": "B: blue",
        "q1_i0": "B: red",
        "q1_i1": "A: blue",
    }

    version = publish_object(recipe_of("hunt"), round_, label="v1", created_by=None)
    item = version.items.get()
    assert item.data["question_type"] == "multiple_choice"
    assert item.data["hunt"]["first_image_answer"] == "B"
    prompts = {a["prompt"] for a in item.data["hunt"]["answers"]}
    assert prompts == {"eval-naturalbench-multiple-choice"}

    # The version as NaturalBench's published Parquet: the record, images embedded
    recipe = recipe_of("hunt")
    params = publish.export_params(round_, {"fmt": "parquet"}, {})
    assert params == {"fmt": "parquet", "version_id": version.pk}
    job = exports.export_run_now(recipe, recipe.exports[0], round_, params)
    assert job.status == "succeeded", job.error
    with default_storage.open(job.result["path"], "rb") as fh:
        table = pq.read_table(io.BytesIO(fh.read()))
    assert table.column_names == list(nb_release.PARQUET_FIELDS)
    [row] = table.to_pylist()
    expected = {**cand.record, "Index": cand.pk, "Skills": [[], []]}
    for field in nb_release.PARQUET_FIELDS:
        if field not in ("Image_0", "Image_1"):
            assert row[field] == expected[field], field
    assert row["Question_Type"] == "multiple_choice"
    image_0 = HuntCandidate.objects.get(pk=cand.pk).partner  # "A" (red) is the partner's
    with image_0.file.open("rb") as fh:
        assert row["Image_0"]["bytes"] == fh.read()


def test_a_two_option_question_needs_two_different_options(two_option_round, crowdworker, eager):
    image = two_option_round.corpus.samples.order_by("position").first().image
    kwargs = {"round_": two_option_round, "worker": crowdworker, "image_id": image.pk}
    question = "What colour is the large shape?"
    with pytest.raises(svc.Invalid, match="Write option B"):
        svc.candidate_submit(question=question, options=("red", " "), answer="a", **kwargs)
    with pytest.raises(svc.Invalid, match="must differ"):
        svc.candidate_submit(question=question, options=("Red", "red"), answer="a", **kwargs)
    with pytest.raises(svc.Invalid, match="cannot contain ';'"):
        svc.candidate_submit(question=question, options=("red; B:x", "blue"), answer="a", **kwargs)
    with pytest.raises(svc.Invalid, match="A or B"):
        svc.candidate_submit(question=question, options=("red", "blue"), answer="yes", **kwargs)
    assert not HuntCandidate.objects.filter(round=two_option_round).exists()


def test_the_parquet_export_needs_a_published_version_of_the_round(hunt_round):
    params = publish.export_params(hunt_round, {"fmt": "parquet"}, {})
    assert params == {"fmt": "parquet", "version_id": None}
    with pytest.raises(svc.Invalid, match="Publish a version first"):
        publish.export_check(hunt_round, params)
    for bad in ("abc", "99999999"):
        with pytest.raises(svc.Invalid, match="not one of this round's"):
            publish.export_params(hunt_round, {"fmt": "parquet"}, {"version_id": bad})
    assert publish.export_unknown({"fmt": "csv"}) == "Unknown export format."
