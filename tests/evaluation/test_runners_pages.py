"""The "Run a model" and "Run LLM judge" forms, their endpoints and CLI subcommands: what each
role sees, that a refusal writes nothing, progress cards, and a full offline run from the page."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from annotator.platform import roles
from annotator.platform.models import Job
from curation.gateway.providers import provider_offline
from curation.models import LLMProvider
from evaluation import prompts, runners
from evaluation.families.naturalbench import demo as nb_demo
from evaluation.families.naturalbench import parse as nb_parse
from evaluation.families.visit import judge
from evaluation.families.visit import parse as visit_parse
from evaluation.models import JudgmentSet, MetricResult, ModelRun, Prediction
from tests.evaluation.helpers import eval_version, evaluate, login
from tests.evaluation.test_runners_judge import REF, make_version

pytestmark = pytest.mark.django_db


@pytest.fixture
def nb_version(db):
    return eval_version("naturalbench", "NB", nb_parse.parse_items(nb_demo.naturalbench_items(3)))


@pytest.fixture
def visit_version(db):
    return make_version(4, {"Model A": "A long and detailed answer", "Model B": "Short"})


@pytest.fixture
def offline(db):
    return provider_offline()


def counts() -> tuple[int, int, int]:
    return ModelRun.objects.count(), JudgmentSet.objects.count(), Job.objects.count()


def test_version_page_offers_the_run_form_with_the_blind_baseline_labelled(
    client, nb_version, offline
):
    # Given a vision provider besides the offline one
    LLMProvider.objects.create(name="GPT-4o", model="gpt-4o", supports_vision=True)
    login(client, roles.RESEARCHER)

    # When a researcher opens the version page
    response = client.get(reverse("eval-version", args=[nb_version.pk]))

    # Then the form lists both providers, the offline one as the blind baseline
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="run-model"' in html
    assert prompts.BLIND_BASELINE_LABEL in html
    assert "GPT-4o · gpt-4o · vision" in html
    assert "never sees an image" in html
    assert 'name="space_before_suffix"' in html


def test_run_form_starts_a_job_and_the_page_shows_its_progress_card(client, nb_version, offline):
    user = login(client, roles.CURATOR)
    url = reverse("eval-run-model", args=[nb_version.pk])

    response = client.post(url, {"provider": "offline", "seed": 0, "label": "demo"})

    assert response.status_code == 302
    assert response["Location"].endswith(f"/eval/versions/{nb_version.pk}/#active-runs")
    run = ModelRun.objects.get()
    assert (run.label, run.created_by, run.status) == ("demo", user, "pending")
    assert run.job.kind == runners.RUN_JOB and run.job.created_by == user
    page = client.get(reverse("eval-version", args=[nb_version.pk])).content.decode()
    assert 'id="active-runs"' in page and 'id="job-card"' in page
    assert reverse("curator-job", args=[run.job_id]) + "?part=card" in page


def test_run_form_errors_re_render_the_page_with_nothing_written(client, nb_version, offline):
    login(client, roles.CURATOR)
    url = reverse("eval-run-model", args=[nb_version.pk])
    vision_less = LLMProvider.objects.create(name="text only", model="gpt-3.5")

    too_small = client.post(url, {"provider": "offline", "seed": 0, "limit": 0})
    no_vision = client.post(url, {"provider": vision_less.pk, "seed": 0})

    assert too_small.status_code == 400 and 'id="run-model"' in too_small.content.decode()
    assert no_vision.status_code == 400
    assert "not marked as accepting images" in no_vision.content.decode()
    assert counts() == (0, 0, 0)


@pytest.mark.parametrize(
    ("name", "method"),
    [
        ("eval-run-model", "post"),
        ("eval-judge-run", "post"),
        ("api-eval-run-model", "post"),
        ("api-eval-judge", "post"),
    ],
)
def test_crowdworkers_get_404_and_change_nothing(client, visit_version, offline, name, method):
    # Given a crowdworker
    login(client, roles.CROWDWORKER)
    data = {
        "provider": "offline",
        "provider_id": offline.pk,
        "model": "Model A",
        "label": "x",
        "instances": 2,
        "seed": 0,
    }

    # When they call a runner endpoint
    response = getattr(client, method)(reverse(name, args=[visit_version.pk]), data)

    # Then it answers like a missing page and nothing is written
    assert response.status_code == 404
    assert counts() == (2, 0, 0)


def test_anonymous_users_are_sent_to_log_in_or_refused(client, visit_version, offline):
    page = client.post(reverse("eval-run-model", args=[visit_version.pk]), {})
    api = client.post(reverse("api-eval-run-model", args=[visit_version.pk]), {})
    assert page.status_code == 302 and "/login" in page["Location"]
    assert api.status_code in (401, 403)
    assert counts() == (2, 0, 0)


def test_judgments_page_offers_the_judge_form_with_the_offline_judge_labelled(
    client, visit_version, offline
):
    login(client, roles.RESEARCHER)
    page = client.get(reverse("eval-judgments", args=[visit_version.pk])).content.decode()
    assert 'id="run-judge"' in page
    assert prompts.OFFLINE_JUDGE_LABEL in page
    assert '<option value="Model A"' in page and f'<option value="{REF}"' not in page


def test_judge_form_draws_pairs_and_starts_a_job(client, visit_version, offline):
    user = login(client, roles.RESEARCHER)
    url = reverse("eval-judge-run", args=[visit_version.pk])

    response = client.post(
        url,
        {
            "provider": "offline",
            "model": "Model A",
            "label": "Offline judge",
            "instances": 3,
            "seed": 5,
            "opponents": "on",
        },
    )

    assert response.status_code == 302 and response["Location"].endswith("#active-judges")
    judgment_set = JudgmentSet.objects.get()
    assert judgment_set.status == "pending" and judgment_set.created_by == user
    assert judgment_set.provenance["pairing"] == {
        "model": "Model A",
        "instances": 3,
        "seed": 5,
        "opponents": True,
        "drawn": 3,
    }
    expected = judge.judge_pairs_sample(
        version=visit_version, model="Model A", n=3, seed=5, opponents=True
    )
    assert judgment_set.job.params["pairs"] == expected and len(expected) == 6
    page = client.get(reverse("eval-judgments", args=[visit_version.pk])).content.decode()
    assert 'id="active-judges"' in page


def test_judge_form_refusal_shows_the_error(client, visit_version, offline):
    login(client, roles.CURATOR)
    url = reverse("eval-judge-run", args=[visit_version.pk])
    response = client.post(
        url, {"provider": "offline", "model": "Nobody", "label": "x", "instances": 3, "seed": 0}
    )
    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()
    assert counts() == (2, 0, 0)


def test_judge_on_a_version_without_runs_says_what_to_do(client, db):
    from tests.evaluation.test_runners_judge import visit_csv

    version = eval_version("visit", "Empty", visit_parse.parse_items(visit_csv(2)))
    login(client, roles.CURATOR)
    page = client.get(reverse("eval-judgments", args=[version.pk])).content.decode()
    assert "first run or import a model on this version" in page
    response = client.post(reverse("eval-judge-run", args=[version.pk]), {"label": "x"})
    assert response.status_code == 404


def test_api_run_and_judge(client, visit_version, offline):
    login(client, roles.CURATOR)

    run = client.post(
        reverse("api-eval-run-model", args=[visit_version.pk]),
        {"provider_id": offline.pk, "limit": 2},
        content_type="application/json",
    )
    judge = client.post(
        reverse("api-eval-judge", args=[visit_version.pk]),
        {
            "label": "API judge",
            "pairs": [
                {
                    "instance_id": visit_version.items.get(position=0).item_id,
                    "a_model": "Model A",
                    "b_model": REF,
                }
            ],
        },
        content_type="application/json",
    )
    hidden = client.post(
        reverse("api-eval-run-model", args=[visit_version.pk]),
        {"provider_id": 999999},
        content_type="application/json",
    )
    bad_pairs = client.post(
        reverse("api-eval-judge", args=[visit_version.pk]),
        {"label": "bad", "pairs": [{"instance_id": "nope", "a_model": "A", "b_model": "B"}]},
        content_type="application/json",
    )

    assert run.status_code == 202, run.json()
    body = run.json()
    assert body["items"] == 4 and ModelRun.objects.get(pk=body["run_id"]).job_id == body["job_id"]
    assert Job.objects.get(pk=body["job_id"]).params["limit"] == 2
    assert judge.status_code == 202 and judge.json()["pairs"] == 1
    assert hidden.status_code == 404
    assert bad_pairs.status_code == 400
    assert bad_pairs.json()["errors"][0] == {"line": 1, "error": "unknown instance 'nope'"}
    assert JudgmentSet.objects.count() == 1


def test_offline_run_from_the_page_end_to_end(
    client, nb_version, offline, eager, django_capture_on_commit_callbacks
):
    # Given a curator and no API key anywhere
    login(client, roles.CURATOR)

    # When they start the offline run and the job runs
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            reverse("eval-run-model", args=[nb_version.pk]), {"provider": "offline", "seed": 0}
        )

    # Then the blind baseline answered every sample and its metrics are on the leaderboard
    run = ModelRun.objects.get()
    assert run.job.status == Job.Status.SUCCEEDED, run.job.error
    assert Prediction.objects.filter(run=run).count() == 3
    assert MetricResult.objects.get(run=run, metric="q_acc").value == 0.0
    board = client.get(reverse("eval-leaderboard", args=[nb_version.pk])).content.decode()
    assert prompts.BLIND_BASELINE_LABEL in board
    detail = client.get(reverse("eval-run", args=[run.pk])).content.decode()
    assert "offline blind baseline: question text only, no image" in detail


def test_cli_run_and_judge(visit_version, offline, terminal):
    # When a researcher runs the blind baseline and the offline judge from a terminal
    text = evaluate(
        "run", str(visit_version.pk), "--no-text-metrics", "--rounds", "20", stderr=terminal
    )
    assert f"provider: {prompts.BLIND_BASELINE_LABEL}" in text
    assert "4 items answered, 0 failed calls" in text
    run = ModelRun.objects.get(source="runner")
    assert run.job.status == Job.Status.SUCCEEDED
    # the run's job drew its bar on the terminal, to its final count
    bar = terminal.getvalue()
    assert f"job #{run.job.pk} {run.job.kind}" in bar
    assert f"{run.job.total}/{run.job.total}" in bar

    text = evaluate(
        "judge",
        str(visit_version.pk),
        "--model",
        "Model A",
        "--instances",
        "2",
        "--no-text-metrics",
        "--rounds",
        "20",
        stderr=terminal,
    )
    assert f"judge: {prompts.OFFLINE_JUDGE_LABEL}" in text
    assert "4 pairs judged now" in text
    judge_job = Job.objects.order_by("-id").filter(kind=runners.JUDGE_JOB).first()
    assert f"job #{judge_job.pk} {runners.JUDGE_JOB}" in terminal.getvalue()
    judgment_set = JudgmentSet.objects.get()
    assert judgment_set.pair_count == 4 and judgment_set.status == "succeeded"
    assert judgment_set.provenance["pairing"]["instances"] == 2


def test_cli_judge_reads_a_pairs_file(visit_version, offline, tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    first = visit_version.items.get(position=0).item_id
    pairs.write_text(json.dumps({"instance_id": first, "a_model": "Model A", "b_model": REF}))
    evaluate(
        "judge",
        str(visit_version.pk),
        "--pairs",
        str(pairs),
        "--label",
        "file",
        "--no-text-metrics",
        "--rounds",
        "20",
    )
    assert JudgmentSet.objects.get(label="file").pair_count == 1
