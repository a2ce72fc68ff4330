"""The VisIT-Bench LLM judge through the gateway (App. F): both orders, the extraction
fallback, judgment_record, resume after failures, the offline judge, and reproducible pairing."""

from __future__ import annotations

import csv
import io
import re

import pytest

from annotator.platform.errors import Conflict, Invalid
from annotator.platform.models import Job
from curation.gateway.providers import provider_offline
from curation.models import Generation
from evaluation import jobs, prompts, runners, services
from evaluation.families.visit import judge
from evaluation.families.visit import parse as visit_parse
from evaluation.families.visit import prompts as visit_prompts
from evaluation.models import JudgmentSet, PairJudgment
from evaluation.parsed import PredictionRow
from tests.evaluation.helpers import eval_version, fake_provider
from tests.fake_openai import reply, status

ROUNDS = 20
REF = judge.REFERENCE_PLAYER
COLUMNS = [
    "instruction_category",
    "image",
    "instruction",
    "instruction_conditioned_caption",
    "gpt4_prediction",
    "human_ratings_gpt4_correct",
    "human_ratings_problem_in_caption",
]


def visit_csv(n: int, dropped: int = 1) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(COLUMNS)
    for k in range(n + dropped):
        writer.writerow(
            [
                "cat",
                f"https://x/{k}.png",
                f"Describe picture {k}.",
                f"Caption of picture {k}.",
                f"Reference answer {k}.",
                "TRUE" if k < n else "FALSE",
                "FALSE",
            ]
        )
    return buffer.getvalue()


def make_version(n: int, models: dict[str, str]):
    """A VisIT-Bench version with ``n`` kept instances (+1 left out) and one imported run per
    model answering every instance with ``"<text> <k>"``."""
    rows = visit_parse.parse_items(visit_csv(n))
    version = eval_version("visit", "VisIT", rows)
    for model, text in models.items():
        services.run_import(
            version=version,
            model_name=model,
            rows=[PredictionRow(r.item_id, f"{text} {k}", k + 1) for k, r in enumerate(rows)],
        )
    return version


@pytest.fixture
def version(db):
    return make_version(3, {"Model A": "A long and detailed answer", "Model B": "Short"})


@pytest.fixture
def judge_provider(fake_openai, fast_llm_backoff, db):
    return fake_provider(fake_openai.base_url, name="fake judge", model="fake-gpt-4", concurrency=2)


def item_id(version, k: int) -> str:
    return version.items.get(position=k).item_id


def shown(body: dict) -> tuple[str, str]:
    text = body["messages"][-1]["content"]
    match = re.search(r"Response A: (.*)\n\nResponse B: (.*)\n\nThink", text, re.DOTALL)
    return match.group(1), match.group(2)


def scripted_judge(body: dict):
    """Model A beats the reference (and says so unclearly when shown second); A vs B
    disagrees between orders; B vs the reference is unclear in one order."""
    system = body["messages"][0]["content"]
    if system.startswith("You are FinalAnswerExtractionGPT"):
        judgment = body["messages"][-1]["content"]
        return reply("Final Answer: Response B" if "second" in judgment else "Unknown.")
    a, b = shown(body)
    if a.startswith("A long") and b.startswith("Reference"):
        return reply("Step 1: ...\nOverall, Response A is better.")
    if a.startswith("Reference") and b.startswith("A long"):
        return reply("Both have merit, but I lean to the second one.")
    if a.startswith("A long") or b.startswith("A long"):
        return reply("Overall, Response A is better.")
    if a.startswith("Short"):
        return reply("Response A is better. Or maybe Response B is better.")
    return reply("Overall, Response A is better.")


def execute(job: Job, *, ok: bool = True):
    jobs.judge.apply(args=[job.pk])
    job.refresh_from_db()
    assert (job.status == Job.Status.SUCCEEDED) is ok, job.error
    return job.result if ok else job.error


def start(version, provider, pairs, label="GPT-4 judge", **kwargs):
    kwargs.setdefault("rounds", ROUNDS)
    kwargs.setdefault("text_metrics", False)
    return judge.judge_start(
        version=version,
        judgment_set_name=label,
        pairs=pairs,
        provider=provider,
        created_by=None,
        **kwargs,
    )


def test_judge_in_both_orders_with_extraction_feeds_judgments(version, judge_provider, fake_openai):
    # Given three pairs on two instances and a scripted judge
    fake_openai.default = scripted_judge
    i0, i1 = item_id(version, 0), item_id(version, 1)
    pairs = [
        {"instance_id": i0, "a_model": "Model A", "b_model": REF},
        {"instance_id": i0, "a_model": "Model A", "b_model": "Model B"},
        {"instance_id": i1, "a_model": "Model B", "b_model": REF},
    ]

    # When the judge job runs
    result = execute(start(version, judge_provider, pairs))

    # Then every pair was asked in both orders with the App. F conversation
    judge_calls = [
        r["body"]
        for r in fake_openai.chat_requests
        if r["body"]["messages"][0]["content"].startswith("You are ImageTaskEvaluationGPT")
    ]
    assert len(judge_calls) == 6
    roles = [m["role"] for m in judge_calls[0]["messages"]]
    assert roles == ["system", "user", "assistant", "user"]
    last = judge_calls[0]["messages"][-1]["content"]
    assert last.startswith("OK. Here is the image description, the instruction, and the two")
    assert "\nImage context: Caption of picture 0.\n\nInstruction:\nDescribe picture 0.\n\n" in last
    assert judge_calls[0]["messages"][2]["content"].startswith("Sure, please provide")
    # And the two unclear orders went through one extraction call each (7 messages of examples)
    extraction_calls = [
        r["body"] for r in fake_openai.chat_requests if r["body"] not in judge_calls
    ]
    assert len(extraction_calls) == 2 and result["extractions"] == 2
    assert [m["role"] for m in extraction_calls[0]["messages"]] == [
        "system",
        *["user", "assistant"] * 3,
        "user",
    ]
    assert extraction_calls[0]["messages"][-1]["content"].endswith(
        "\nPlease extract the final answer from the above text."
    )
    # And the judgments follow the two-order aggregation
    judged = {(j.model_a, j.model_b): j for j in PairJudgment.objects.order_by("position")}
    a_ref = judged[("Model A", REF)]
    assert a_ref.order_winners == ["Model A", "Model A"] and a_ref.winner == "Model A"
    assert a_ref.outputs[0]["extraction_output"] is None
    assert a_ref.outputs[1]["extraction_output"] == "Final Answer: Response B"
    assert (a_ref.outputs[1]["shown_a"], a_ref.outputs[1]["shown_b"]) == (REF, "Model A")
    for output in a_ref.outputs:
        generation = Generation.objects.get(pk=output["generation_id"])
        assert generation.raw_response == output["judge_output"]
        assert generation.template_name == visit_prompts.JUDGE
    assert Generation.objects.get(pk=a_ref.outputs[1]["extraction_generation_id"]).purpose == (
        runners.EXTRACTION_PURPOSE
    )
    a_b = judged[("Model A", "Model B")]
    assert a_b.order_winners == ["Model A", "Model B"] and a_b.winner == "tie"
    b_ref = judged[("Model B", REF)]
    assert b_ref.order_winners == ["tie", REF] and b_ref.winner == "tie"
    # And the set is finished and rated
    judgment_set = JudgmentSet.objects.get()
    assert (judgment_set.status, judgment_set.source, judgment_set.kind) == (
        "succeeded",
        "runner",
        "llm",
    )
    assert judgment_set.judge == "fake-gpt-4" and judgment_set.pair_count == 3
    assert judgment_set.provenance["templates"][visit_prompts.JUDGE]["version"] == 1
    players = {p["player"] for p in judgment_set.results["players"]}
    assert players == {"Model A", "Model B", REF}


def test_reference_backed_prompt_shows_the_reference(version, judge_provider, fake_openai):
    fake_openai.default = reply("Overall, Response A is better.")
    pairs = [{"instance_id": item_id(version, 2), "a_model": "Model A", "b_model": "Model B"}]
    execute(start(version, judge_provider, pairs, with_reference=True))
    body = fake_openai.chat_requests[0]["body"]
    assert "reference output" in body["messages"][0]["content"]
    assert "\n\nHigh quality reference: Reference answer 2.\n\n" in body["messages"][-1]["content"]
    assert JudgmentSet.objects.get().with_reference is True
    # A win needs both orders: A first then B first, each "Response A" → a tie.
    assert PairJudgment.objects.get().winner == "tie"


def test_failed_calls_leave_the_pair_for_a_rerun_with_the_same_label(
    version, judge_provider, fake_openai
):
    # Given an endpoint that fails every call showing Model B's answer first
    def flaky(body):
        if shown(body)[0].startswith("Short"):
            return status(500)
        return reply("Overall, Response A is better.")

    fake_openai.default = flaky
    i0 = item_id(version, 0)
    pairs = [
        {"instance_id": i0, "a_model": "Model A", "b_model": REF},
        {"instance_id": i0, "a_model": "Model A", "b_model": "Model B"},
    ]

    # When the judge runs
    result = execute(start(version, judge_provider, pairs))

    # Then the failed pair is not recorded (no tie invented) and is counted
    assert (result["judged"], result["failed"]) == (1, 1)
    judgment_set = JudgmentSet.objects.get()
    assert judgment_set.pair_count == 1 and judgment_set.provenance["failed_pairs"] == 1
    assert "http_500" in judgment_set.provenance["errors"][0]

    # When the endpoint recovers and the judge runs again with the same label
    fake_openai.default = reply("Overall, Response A is better.")
    before = len(fake_openai.chat_requests)
    result = execute(start(version, judge_provider, pairs))

    # Then only the missing pair is judged (two orders)
    assert len(fake_openai.chat_requests) - before == 2
    assert result["judged"] == 1 and JudgmentSet.objects.get().pair_count == 2
    assert JudgmentSet.objects.count() == 1


def test_every_pair_failing_fails_the_set(version, judge_provider, fake_openai):
    fake_openai.default = status(401)
    pairs = [{"instance_id": item_id(version, 0), "a_model": "Model A", "b_model": REF}]
    error = execute(start(version, judge_provider, pairs), ok=False)
    assert error.startswith("No pair could be judged.") and "http_401" in error
    assert JudgmentSet.objects.get().status == "failed"


def test_offline_judge_runs_without_a_key_and_is_labelled(version):
    # Given the offline provider, Model A longer than the reference, and two equal answers
    make_run = services.run_import
    make_run(
        version=version,
        model_name="Model C",
        rows=[
            PredictionRow(i.item_id, f"Reference answer {i.position}.", 1)
            for i in version.items.filter(kept=True)
        ],
    )
    i0 = item_id(version, 0)
    pairs = [
        {"instance_id": i0, "a_model": "Model A", "b_model": REF},
        {"instance_id": i0, "a_model": "Model C", "b_model": REF},
    ]

    # When the judge runs
    execute(start(version, provider_offline(), pairs))

    # Then the longer response wins both orders; equal lengths go through extraction to a tie
    judgment_set = JudgmentSet.objects.get()
    assert judgment_set.judge == prompts.OFFLINE_JUDGE_LABEL
    assert judgment_set.provenance["offline"] is True
    judged = {j.model_a: j for j in PairJudgment.objects.all()}
    assert judged["Model A"].winner == "Model A"
    assert judged["Model C"].winner == "tie"
    assert judged["Model C"].outputs[0]["extraction_output"] == "Final Answer: Unknown"


def test_pairs_are_checked_before_anything_is_written(version, judge_provider):
    i0 = item_id(version, 0)
    dropped = version.items.get(kept=False).item_id
    bad = [
        {"instance_id": "nope", "a_model": "Model A", "b_model": REF},
        {"instance_id": i0, "a_model": "Model A", "b_model": "Model A"},
        {"instance_id": i0, "a_model": "Model A", "b_model": "Model Z"},
        {"instance_id": dropped, "a_model": "Model A", "b_model": REF},
        {"instance_id": i0, "a_model": "Model B", "b_model": REF},
        {"instance_id": i0, "a_model": REF, "b_model": "Model B"},
        "not a pair",
    ]
    with pytest.raises(Invalid) as caught:
        start(version, judge_provider, bad)
    lines = {e["line"]: e["error"] for e in caught.value.errors}
    assert sorted(lines) == [1, 2, 3, 4, 6, 7]
    assert "unknown instance" in lines[1]
    assert "two players" in lines[2]
    assert "'Model Z' did not answer" in lines[3]
    assert f"'{REF}' did not answer" in lines[4]
    assert "twice" in lines[6]
    assert not JudgmentSet.objects.exists() and not Job.objects.exists()
    with pytest.raises(Invalid, match="at least one pair"):
        start(version, judge_provider, [])


def test_an_imported_set_with_the_label_or_a_running_judge_conflicts(version, judge_provider):
    pairs = [{"instance_id": item_id(version, 0), "a_model": "Model A", "b_model": REF}]
    start(version, judge_provider, pairs)
    with pytest.raises(Conflict, match="still running"):
        start(version, judge_provider, pairs)
    Job.objects.update(status=Job.Status.SUCCEEDED)
    with pytest.raises(Conflict, match="other judge prompt"):
        start(version, judge_provider, pairs, with_reference=True)
    with pytest.raises(Conflict, match="another provider"):
        start(version, provider_offline(), pairs)
    JudgmentSet.objects.update(source=JudgmentSet.Source.IMPORTED)
    with pytest.raises(Conflict, match="imported"):
        start(version, judge_provider, pairs)


def test_pairing_is_reproducible_from_the_seed_and_covers_reference_and_opponents(db):
    # Given twelve instances and four models
    version = make_version(12, {name: f"Answer of {name}" for name in "ABCD"})
    players = judge.judge_players(version)

    # When pairs are drawn twice with one seed, and once with another
    first = judge.judge_pairs_sample(version=version, model="A", n=5, seed=7, players=players)
    again = judge.judge_pairs_sample(version=version, model="A", n=5, seed=7)
    other = judge.judge_pairs_sample(version=version, model="A", n=5, seed=8)

    # Then the same seed gives the same pairs; each drawn instance has A vs the reference and
    # A vs one other model; only kept instances are drawn
    assert first == again
    assert first != other
    assert len(first) == 10
    instances = [p["instance_id"] for p in first[::2]]
    assert len(set(instances)) == 5
    kept = set(version.items.filter(kept=True).values_list("item_id", flat=True))
    assert set(instances) <= kept
    for ref_pair, opponent_pair in zip(first[::2], first[1::2], strict=True):
        assert ref_pair == {"instance_id": ref_pair["instance_id"], "a_model": "A", "b_model": REF}
        assert opponent_pair["instance_id"] == ref_pair["instance_id"]
        assert opponent_pair["b_model"] in {"B", "C", "D"}
    # And the default draws 150 instances, capped by what the model answered
    everything = judge.judge_pairs_sample(version=version, model="A", opponents=False)
    assert judge.DEFAULT_JUDGE_INSTANCES == 150
    assert len(everything) == 12 and {p["b_model"] for p in everything} == {REF}
    with pytest.raises(Invalid, match="not a run"):
        judge.judge_pairs_sample(version=version, model=REF)
