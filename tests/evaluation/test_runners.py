"""Model runs through the gateway against the fake OpenAI server (real ``openai`` client):
NaturalBench end to end with exact metric values, failed calls recorded as failed outputs,
resume, the offline blind baseline, VLind/VH/VisIT prompts, logprob likelihoods and the scorer
runner for NaturalBench-Retrieval."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from PIL import Image as PILImage

from annotator.platform.errors import Conflict, Invalid
from annotator.platform.models import Job
from curation.assets import image_data_url, image_ingest
from curation.gateway.offline import rule_for
from curation.models import Generation, LLMProvider
from evaluation import jobs, prompts, runners
from evaluation.families.naturalbench import parse as nb_parse
from evaluation.families.naturalbench import prompts as nb_prompts
from evaluation.families.naturalbench import runner as nb_runner
from evaluation.families.retrieval import parse as retrieval_parse
from evaluation.families.vhexpansion import parse as vh_parse
from evaluation.families.visit import parse as visit_parse
from evaluation.families.vlind import parse as vlind_parse
from evaluation.models import MetricResult, ModelRun, Prediction
from tests.evaluation.helpers import eval_version, fake_provider
from tests.fake_openai import reply, status

ROUNDS = 20


def png(color: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    PILImage.new("RGB", (8, 8), color).save(buffer, "PNG")
    return buffer.getvalue()


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)  # the same folder as the eager fixture
    return tmp_path


@pytest.fixture
def images(db, media):
    """Two imported images, named in items by the export layout images/<sha256>.png."""
    red, _ = image_ingest(data=png((255, 0, 0)), name="red.png")
    blue, _ = image_ingest(data=png((0, 0, 255)), name="blue.png")
    return {"red": red, "blue": blue}


def ref(image) -> str:
    return f"images/{image.sha256}.png"


def nb_record(index: int, q0: str, q1: str, i0: str, i1: str) -> dict:
    return {
        "Index": index,
        "Image_0": i0,
        "Image_1": i1,
        "Question_0": q0,
        "Image_0_Question_0": "Yes",
        "Image_1_Question_0": "No",
        "Question_1": q1,
        "Image_0_Question_1": "No",
        "Image_1_Question_1": "Yes",
        "Question_Type": "yes_no",
        "Source": "test",
    }


@pytest.fixture
def nb_version(images):
    red, blue = ref(images["red"]), ref(images["blue"])
    records = [
        nb_record(1, "Is the square red?", "Is the square blue?", red, blue),
        nb_record(2, "Is it warm?", "Is it cold?", red, blue),
    ]
    content = "\n".join(json.dumps(r) for r in records)
    return eval_version("naturalbench", "NB test", nb_parse.parse_items(content))


@pytest.fixture
def provider(fake_openai, fast_llm_backoff, db):
    return fake_provider(
        fake_openai.base_url,
        name="fake VLM",
        model="fake-vlm",
        concurrency=1,
        supports_vision=True,
    )


def user_parts(body: dict) -> tuple[str, list[str]]:
    """The text and image URLs of the request's last user message."""
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return content, []
    text = "".join(p["text"] for p in content if p["type"] == "text")
    return text, [p["image_url"]["url"] for p in content if p["type"] == "image_url"]


def answers_by(images: dict, table: dict[tuple[str, str], object]):
    """A fake-server behaviour: the reply for (question text, image name)."""
    names = {image_data_url(image): name for name, image in images.items()}

    def behaviour(body: dict):
        text, urls = user_parts(body)
        question = text.split("Please answer")[0]
        found = table[(question, names[urls[0]] if urls else "")]
        return found if not isinstance(found, str) else reply(found)

    return behaviour


# Sample 1 all correct; sample 2 correct except q0_i1 (ground truth Yes, No, No, Yes).
SCRIPT = {
    ("Is the square red?", "red"): "Yes",
    ("Is the square red?", "blue"): "No.",
    ("Is the square blue?", "red"): "no",
    ("Is the square blue?", "blue"): "Yes, it is.",
    ("Is it warm?", "red"): "Yes",
    ("Is it warm?", "blue"): "Yes",
    ("Is it cold?", "red"): "No",
    ("Is it cold?", "blue"): "Yes",
}


def start(version, provider, user=None, **kwargs):
    kwargs.setdefault("rounds", ROUNDS)
    return runners.run_model_start(version=version, provider=provider, created_by=user, **kwargs)


def execute(job: Job, *, ok: bool = True):
    """Run the job's Celery task in-process, as a worker would; returns the job's result."""
    jobs.run_model.apply(args=[job.pk])
    job.refresh_from_db()
    assert (job.status == Job.Status.SUCCEEDED) is ok, job.error
    return job.result if ok else job.error


def test_naturalbench_run_end_to_end_through_the_job(
    nb_version, provider, fake_openai, images, curator, eager, django_capture_on_commit_callbacks
):
    # Given a two-sample NaturalBench version and a VLM scripted per question and image
    fake_openai.default = answers_by(images, SCRIPT)

    # When a curator runs the model (the Celery job runs in-process)
    with django_capture_on_commit_callbacks(execute=True):
        job = start(nb_version, provider, curator, rounds=ROUNDS)

    # Then the job succeeded and answered 8 prompts with the official no-space prompt and image
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert job.done == job.total == 3
    sent = [user_parts(r["body"]) for r in fake_openai.chat_requests]
    assert len(sent) == 8
    assert sent[0][0] == "Is the square red?Please answer Yes or No."
    assert all(len(urls) == 1 and urls[0].startswith("data:image/png;base64,") for _, urls in sent)
    assert fake_openai.chat_requests[0]["body"]["temperature"] == 0.0
    run = ModelRun.objects.get()
    assert (run.status, run.source, run.prediction_count) == ("succeeded", "runner", 2)
    assert run.model.name == "fake-vlm" and run.job_id == job.pk
    assert run.prompt_settings["provider"] == "fake VLM"
    assert run.prompt_settings["templates"][nb_prompts.YES_NO]["version"] == 1
    # And every raw output is stored with the Generation that produced it
    first = Prediction.objects.get(item__item_id="1")
    assert first.raw_output == {
        "q0_i0": "Yes",
        "q0_i1": "No.",
        "q1_i0": "no",
        "q1_i1": "Yes, it is.",
    }
    assert first.parsed_answer == ["a0", "a1", "a1", "a0"]
    generations = first.scores["provenance"]["generations"]
    assert first.scores["provenance"]["failed"] == {}
    for key, gen_id in generations.items():
        generation = Generation.objects.get(pk=gen_id)
        assert generation.raw_response == first.raw_output[key]
        assert generation.purpose == runners.RUN_PURPOSE and generation.job_id == job.pk
        assert generation.params["images"][0]["sha256"] in (
            images["red"].sha256,
            images["blue"].sha256,
        )
    # And the metrics are computed: Acc 7/8, Q-Acc 3/4, I-Acc 3/4, G-Acc 1/2
    values = dict(MetricResult.objects.filter(run=run).values_list("metric", "value"))
    assert values["acc"] == 0.875
    assert values["q_acc"] == 0.75
    assert values["i_acc"] == 0.75
    assert values["g_acc"] == 0.5
    assert values["unparseable"] == 0.0


def test_concurrency_is_bounded_by_the_provider(nb_version, provider, fake_openai, images):
    # Given a provider allowing three calls in flight and a slow endpoint
    provider.concurrency = 3
    provider.save()
    table = {k: reply(v, delay=0.05) for k, v in SCRIPT.items()}
    fake_openai.default = answers_by(images, table)
    job = start(nb_version, provider)

    # When the run executes
    execute(job)

    # Then calls overlapped but never more than three at once, and results match the script
    assert 2 <= fake_openai.max_in_flight <= 3
    assert Prediction.objects.get(item__item_id="2").parsed_answer == ["a0", "a0", "a1", "a0"]


def test_failed_and_malformed_calls_become_failed_outputs_and_a_rerun_fills_only_them(
    nb_version, provider, fake_openai, images
):
    # Given an endpoint that errors on one prompt and answers another with nothing (malformed)
    table = dict(SCRIPT)
    table[("Is it warm?", "blue")] = status(500)
    table[("Is it cold?", "red")] = reply("   ")
    fake_openai.default = answers_by(images, table)
    job = start(nb_version, provider)
    run = ModelRun.objects.get()

    # When the run executes
    result = execute(job)

    # Then nothing crashed: the two calls are failed outputs (two attempts each), parsed as
    # unparseable, and the metrics count them as wrong
    assert result["failed_calls"] == 2 and result["failed_items"] == 1
    assert len(fake_openai.chat_requests) == 6 + 2 * 2
    second = Prediction.objects.get(item__item_id="2")
    failed = second.scores["provenance"]["failed"]
    assert sorted(failed) == ["q0_i1", "q1_i0"]
    assert "http_500" in failed["q0_i1"] and "malformed" in failed["q1_i0"]
    assert second.raw_output["q0_i1"] == "" and second.parsed_answer == ["a0", None, None, "a0"]
    for key in ("q0_i1", "q1_i0"):
        generation = Generation.objects.get(pk=second.scores["provenance"]["generations"][key])
        assert generation.status == "failed" and generation.attempts == 2
    run.refresh_from_db()
    assert run.status == "succeeded" and run.prompt_settings["failed_items"] == 1
    values = dict(MetricResult.objects.filter(run=run).values_list("metric", "value"))
    assert values["unparseable"] == 2.0
    assert values["acc"] == 6 / 8

    # When the endpoint recovers and the same run is started again
    fake_openai.default = answers_by(images, SCRIPT)
    before = len(fake_openai.chat_requests)
    job = start(nb_version, provider)
    result = execute(job)

    # Then only the two failed calls are made again; the other six outputs are reused
    assert len(fake_openai.chat_requests) - before == 2
    assert result["reused"] == 2 and result["items"] == 1
    second.refresh_from_db()
    assert second.scores["provenance"]["failed"] == {}
    assert second.parsed_answer == ["a0", "a0", "a1", "a0"]
    assert ModelRun.objects.count() == 1 and Prediction.objects.count() == 2
    assert MetricResult.objects.get(run=run, metric="acc").value == 0.875


def test_a_complete_run_started_again_calls_nothing(nb_version, provider, fake_openai, images):
    # Given a finished run
    fake_openai.default = answers_by(images, SCRIPT)
    execute(start(nb_version, provider))

    # When it is started again with the same settings
    job = start(nb_version, provider)
    result = execute(job)

    # Then no call is made and the predictions are unchanged
    assert len(fake_openai.chat_requests) == 8
    assert result["items"] == 0 and result["calls"] == 0


def test_limit_answers_the_first_items_and_a_later_run_fills_the_rest(
    nb_version, provider, fake_openai, images
):
    fake_openai.default = answers_by(images, SCRIPT)
    job = start(nb_version, provider, limit=1)
    run = ModelRun.objects.get()
    execute(job)
    assert list(Prediction.objects.values_list("item__item_id", flat=True)) == ["1"]
    # The unanswered sample counts as missing (wrong) until it is filled.
    assert MetricResult.objects.get(run=run, metric="acc").details["missing_predictions"] == 1

    job = start(nb_version, provider)
    execute(job)
    assert len(fake_openai.chat_requests) == 8
    assert MetricResult.objects.get(run=run, metric="g_acc").value == 0.5


def test_every_call_failing_fails_the_run_with_the_first_error(
    nb_version, provider, fake_openai, images
):
    # Given an endpoint that refuses every request (a bad key)
    fake_openai.default = status(401)
    job = start(nb_version, provider)
    run = ModelRun.objects.get()

    # When the run executes, Then it fails with the reason and no metrics
    error = execute(job, ok=False)
    assert error.startswith("Every call failed; nothing was answered.") and "http_401" in error
    run.refresh_from_db()
    assert run.status == "failed" and run.prediction_count == 2
    assert not MetricResult.objects.exists()


def test_missing_images_are_failed_calls_that_never_reach_the_endpoint(
    provider, fake_openai, media, db
):
    # Given a VHExpansion version whose images were never imported
    content = "\n".join(
        json.dumps(r)
        for r in [
            {
                "id": "c1",
                "pair_id": "p",
                "image": "x.jpg",
                "question": "Is there a cat?",
                "answer": "yes",
                "negated": False,
            },
            {
                "id": "c2",
                "pair_id": "p",
                "image": "x.jpg",
                "question": "Is there no cat?",
                "answer": "no",
                "negated": True,
            },
        ]
    )
    version = eval_version("vhexpansion", "VH", vh_parse.parse_items(content))
    job = start(version, provider)

    # When it runs, Then nothing is sent and every call is failed with what to do
    assert "BLINDSPOT_EVAL_IMAGE_ROOT" in execute(job, ok=False)
    assert fake_openai.chat_requests == []
    generation = Generation.objects.first()
    assert generation.attempts == 0 and "x.jpg" in generation.error


def test_images_are_found_under_the_image_root_and_ingested(
    provider, fake_openai, media, settings, db
):
    # Given a VH version naming a URL whose file lies in BLINDSPOT_EVAL_IMAGE_ROOT
    root = media / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "cat.png").write_bytes(png((0, 255, 0)))
    settings.BLINDSPOT_EVAL_IMAGE_ROOT = str(root)
    rows = [
        {
            "id": "c1",
            "pair_id": "p",
            "image": "https://example.org/sub/cat.png",
            "question": "Is there a cat?",
            "answer": "yes",
            "negated": False,
        },
        {
            "id": "c2",
            "pair_id": "p",
            "image": "../../etc/passwd",
            "question": "Is there no cat?",
            "answer": "no",
            "negated": True,
        },
    ]
    version = eval_version(
        "vhexpansion", "VH", vh_parse.parse_items("\n".join(json.dumps(r) for r in rows))
    )
    fake_openai.default = reply("Yes, there is a cat.")
    job = start(version, provider)

    # When it runs
    execute(job)

    # Then the URL's file is ingested and sent; a path leaving the folder is refused
    assert len(fake_openai.chat_requests) == 1
    text, urls = user_parts(fake_openai.chat_requests[0]["body"])
    assert text == "Is there a cat? Please answer Yes or No." and len(urls) == 1
    answered = Prediction.objects.get(item__item_id="c1")
    assert (answered.raw_output, answered.parsed_answer) == ("Yes, there is a cat.", "yes")
    refused = Prediction.objects.get(item__item_id="c2")
    assert (
        refused.parsed_answer is None
        and "etc/passwd" in refused.scores["provenance"]["failed"]["answer"]
    )


def test_offline_blind_baseline_never_sees_an_image_and_scores_no_question(
    nb_version, images, curator
):
    # Given the offline provider (no API key anywhere)
    from curation.gateway.providers import provider_offline

    offline = provider_offline()
    job = start(nb_version, offline, curator)

    # When it runs
    result = execute(job)

    # Then it is labelled as the blind baseline, sent no image, and the same question got the
    # same answer on both images, so Q-Acc and G-Acc are 0 by construction (NaturalBench Sec. 3)
    run = ModelRun.objects.get()
    assert run.model.name == prompts.BLIND_BASELINE_LABEL
    assert run.prompt_settings["blind_baseline"] is True
    assert result["calls"] == 8
    assert all("images" not in g.params for g in Generation.objects.all())
    for prediction in Prediction.objects.all():
        raw = prediction.raw_output
        assert raw["q0_i0"] == raw["q0_i1"] and raw["q1_i0"] == raw["q1_i1"]
    values = dict(MetricResult.objects.filter(run=run).values_list("metric", "value"))
    assert values["q_acc"] == 0.0 and values["g_acc"] == 0.0


def test_start_refuses_bad_requests_and_writes_nothing(nb_version, provider, db):
    provider.supports_vision = False
    provider.save()
    with pytest.raises(Invalid, match="not marked as accepting images"):
        start(nb_version, provider)
    provider.supports_vision = True
    provider.save()
    with pytest.raises(Invalid, match="at least 1"):
        start(nb_version, provider, limit=0)
    with pytest.raises(Invalid, match="Post-hoc"):
        start(nb_version, provider, options={"post_hoc": True})
    with pytest.raises(Invalid, match="Unknown run options"):
        start(nb_version, provider, options={"temperature": 1})
    assert not ModelRun.objects.exists() and not Job.objects.exists()


def test_same_model_and_label_with_other_settings_or_while_running_conflicts(
    nb_version, provider, db
):
    start(nb_version, provider)
    with pytest.raises(Conflict, match="still|already running"):
        start(nb_version, provider)
    Job.objects.update(status=Job.Status.SUCCEEDED)
    with pytest.raises(Conflict, match="other settings"):
        start(nb_version, provider, options={"space_before_suffix": True})
    # A new label is a new run.
    start(nb_version, provider, label="spaced", options={"space_before_suffix": True})
    assert ModelRun.objects.count() == 2


def test_space_option_and_logprob_likelihoods_feed_the_debiased_metrics(
    nb_version, provider, fake_openai, images
):
    # Given an endpoint returning first-token log-probabilities: P(yes) = 0.8 on image "red",
    # 0.3 on "blue", and for the question alone 0.5 / 0.25
    names = {image_data_url(image): name for name, image in images.items()}

    def behaviour(body):
        _, urls = user_parts(body)
        p_yes = {"red": 0.8, "blue": 0.3}[names[urls[0]]] if urls else 0.5
        p_no = 1 - p_yes if urls else 0.25
        top = [("Yes", np.log(p_yes)), ("No", np.log(p_no))]
        return reply("Yes", logprobs=[("Yes", np.log(p_yes), top)])

    fake_openai.default = behaviour
    options = {"space_before_suffix": True, "logprobs": True, "post_hoc": True}
    job = start(nb_version, provider, options=options)

    # When the run executes
    execute(job)

    # Then prompts carry one space, requests ask for logprobs, and the likelihoods are stored
    first = fake_openai.chat_requests[0]["body"]
    assert user_parts(first)[0] == "Is the square red? Please answer Yes or No."
    assert first["logprobs"] is True and first["top_logprobs"] == 5
    assert len(fake_openai.chat_requests) == 2 * (4 + 2)
    scores = Prediction.objects.get(item__item_id="1").scores
    assert scores["p_a0"] == pytest.approx([0.8, 0.3, 0.8, 0.3])
    assert scores["p_a1"] == pytest.approx([0.2, 0.7, 0.2, 0.7])
    assert scores["p_a0_blind"] == pytest.approx([0.5, 0.5])
    assert scores["p_a1_blind"] == pytest.approx([0.25, 0.25])
    # d = p_a0 - p_a1 = (0.6, -0.4, 0.6, -0.4) per sample: the sample-optimal rule scores q0
    # (0.6 > -0.4) but not q1, and neither image (0.6 > 0.6 fails: strict inequalities)
    values = dict(MetricResult.objects.values_list("metric", "value"))
    assert values["q_acc_sample_tau"] == 0.5
    assert values["i_acc_sample_tau"] == 0.0
    assert values["g_acc_sample_tau"] == 0.0
    assert "g_acc_post_hoc" in values


def test_answer_likelihoods_reads_the_first_token():
    logprobs = {
        "content": [
            {
                "token": " Yes",
                "logprob": np.log(0.6),
                "top_logprobs": [
                    {"token": " Yes", "logprob": np.log(0.6)},
                    {"token": "yes", "logprob": np.log(0.1)},
                    {"token": "No", "logprob": np.log(0.2)},
                    {"token": "Maybe", "logprob": np.log(0.1)},
                ],
            },
            {"token": "No", "logprob": 0.0, "top_logprobs": []},
        ]
    }
    p0, p1 = nb_runner.answer_likelihoods(logprobs, "yes_no")
    assert (p0, p1) == pytest.approx((0.7, 0.2))
    assert nb_runner.answer_likelihoods(None, "yes_no") is None
    assert nb_runner.answer_likelihoods(
        {"content": [{"token": "B", "logprob": 0.0}]}, "multiple_choice"
    ) == (0.0, 1.0)


def test_vlind_run_sends_the_official_prompts_with_the_official_images(
    provider, fake_openai, media, settings, db
):
    # Given a VLind instance with two good images, its files in the official layout
    root = media / "vlind"
    settings.BLINDSPOT_EVAL_IMAGE_ROOT = str(root)
    colours = {"factual/c/1_fact/0.jpg": (1, 1, 1)}
    colours.update({f"counterfactual/c/1_ctx/{k}.jpg": (k * 20, 0, 0) for k in (0, 3, 5)})
    for path, colour in colours.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        PILImage.new("RGB", (8, 8), colour).save(root / path, "JPEG")
    instance = {
        "concept": "c",
        "context_id": 1,
        "context": "ctx",
        "factual_context": "fact",
        "true_statement": "The sun is green.",
        "false_statement": "The sun is yellow.",
        "existent_noun": "a sun",
        "non-existent_noun": "a moon",
        "best_img_id": 3,
        "aggregated_human_label_good_images": {"0": 3, "3": 2, "5": 1},
    }
    version = eval_version("vlind", "VLind", vlind_parse.parse_items(json.dumps([instance])))

    def behaviour(body):
        text, _ = user_parts(body)
        # Answers that pass every test: common sense says yellow, the image and the
        # counterfactual context say green, and the sun is there but no moon.
        if "Based on the common sense" in text:
            true = "yellow" in text
        elif "There is" in text:
            true = "a sun" in text
        else:
            true = "green" in text
        return reply("True." if true else "False")

    fake_openai.default = behaviour
    job = start(version, provider)

    # When it runs
    execute(job)

    # Then 6 single tests + 2 statements × 2 good images were asked, with the official texts
    texts = sorted(user_parts(r["body"])[0] for r in fake_openai.chat_requests)
    assert len(texts) == 10
    assert (
        "Statement: The sun is yellow.\nBased on the common sense, is the given statement true "
        "or false? Only respond in True or False."
    ) in texts
    assert (
        "Context: ctx\nStatement: The sun is green.\nBased on the context, is the given "
        "statement true or false? Forget real-world common sense and just follow the "
        "information provided in the context. Only respond in True or False."
    ) in texts
    prediction = Prediction.objects.get()
    assert prediction.parsed_answer == {
        "a1_image": True,
        "a2_image": False,
        "b1": True,
        "b2": False,
        "c1_image": True,
        "c2_image": False,
        "d1": {"0": True, "3": True},
        "d2": {"0": False, "3": False},
    }
    values = dict(MetricResult.objects.values_list("metric", "value"))
    assert values["s_ck"] == values["s_vp"] == values["s_cb"] == values["s_lp"] == 1.0


def test_visit_run_answers_the_instruction(provider, fake_openai, media, db):
    content = (
        "instruction_category,image,instruction,instruction_conditioned_caption,"
        "gpt4_prediction,human_ratings_gpt4_correct,human_ratings_problem_in_caption\n"
        "cat,https://x/a.png,What is shown?,A cat.,A cat on a mat.,TRUE,FALSE\n"
        "cat,https://x/b.png,Count the dogs.,Two dogs.,There are two dogs.,FALSE,FALSE\n"
    )
    version = eval_version("visit", "VisIT", visit_parse.parse_items(content))
    from curation.gateway.providers import provider_offline

    job = start(version, provider_offline(), text_metrics=False)
    execute(job)
    # Only the kept instance is answered; the blind baseline says it cannot see the image.
    prediction = Prediction.objects.get()
    assert prediction.item.data["instruction"] == "What is shown?"
    assert prediction.raw_output.startswith("I cannot see the image")
    assert MetricResult.objects.filter(metric="mean_length").exists()


def test_every_offline_rule_is_registered_for_its_template():
    for name in prompts.TEMPLATES:
        assert rule_for(name) is not None, name


def test_retrieval_scored_by_a_scorer_gives_winoground_scores(images, db):
    # Given a NaturalBench-Retrieval pair of the two imported images and the tiny scorer
    from curation.scorers import encode_images, encode_texts, scorer_load, scorer_tiny
    from evaluation.metrics import retrieval

    row = {
        "id": "p1",
        "image_0": ref(images["red"]),
        "image_1": ref(images["blue"]),
        "caption_0": "a red square",
        "caption_1": "a blue square",
    }
    missing = {**row, "id": "p2", "image_1": "nowhere.png"}
    version = eval_version(
        "naturalbench_retrieval",
        "R",
        retrieval_parse.parse_items(json.dumps(row) + "\n" + json.dumps(missing)),
    )
    scorer = scorer_tiny()
    with pytest.raises(Invalid, match="scorer"):
        start(version, LLMProvider(name="x"))
    job = runners.score_model_start(version=version, scorer=scorer, created_by=None)

    # When the run executes
    result = execute(job)

    # Then the stored matrix is s[caption][image] from the scorer's own encoders, the pair
    # without its image is left out (counted missing), and the metrics follow App. B
    loaded = scorer_load(scorer)
    pil = [runners.open_pil(images["red"]), runners.open_pil(images["blue"])]
    expected = (
        encode_texts(loaded, ["a red square", "a blue square"])[0] @ encode_images(loaded, pil).T
    )
    prediction = Prediction.objects.get()
    assert np.allclose(prediction.scores, expected, atol=1e-6)
    assert result["failed_items"] == 1
    correct = retrieval.pair_correct(prediction.scores)
    values = dict(MetricResult.objects.values_list("metric", "value"))
    assert values["text"] == float(correct.text)
    assert values["group"] == float(correct.group)
    run = ModelRun.objects.get()
    assert run.prompt_settings["failed_items"] == 1
    assert "nowhere.png" in run.prompt_settings["failures"]["p2"]
