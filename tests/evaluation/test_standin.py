"""Offline stand-ins and the demo's model runs (issue 27, item 5: every demo leaderboard has rows
and plots): a stand-in answers every call of the family's runner with the family's offline rule
seeded by the call's images, its outputs read by the family as a model's; ``demo_runs_add`` adds
the blind baseline through the real runner and two stand-ins, all labelled as not models."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from evaluation import services
from evaluation.families.naturalbench import parse as nb_parse
from evaluation.families.vlind import demo as vlind_demo
from evaluation.families.vlind import parse as vlind_parse
from evaluation.models import ModelRun
from evaluation.runners import STANDIN_NOTE, demo_runs_add, standin_run
from evaluation.runners.standin import DEMO_STANDINS, standin_rows, standin_seed
from tests.evaluation.helpers import eval_project, eval_version
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def nb_record(index: int, question: str, i0: str, i1: str) -> dict:
    return {
        "Index": index,
        "Image_0": i0,
        "Image_1": i1,
        "Question_0": question,
        "Image_0_Question_0": "Yes",
        "Image_1_Question_0": "No",
        "Question_1": f"Not {question}",
        "Image_0_Question_1": "No",
        "Image_1_Question_1": "Yes",
        "Question_Type": "yes_no",
        "Source": "test",
    }


@pytest.fixture
def nb_version(db):
    records = [
        nb_record(k, f"Is shape {k % 3} red?", f"images/{k:064x}.png", f"images/{k + 99:064x}.png")
        for k in range(24)
    ]
    content = "\n".join(json.dumps(r) for r in records)
    return eval_version("naturalbench", "NB stand-ins", nb_parse.parse_items(content))


def _outputs(rows) -> list:
    return [row.raw_output for row in rows]


def test_a_stand_in_is_deterministic_and_changes_with_the_image(nb_version):
    # when the same stand-in answers twice, and a second stand-in once
    first, again = standin_rows(nb_version, seed=1), standin_rows(nb_version, seed=1)
    other = standin_rows(nb_version, seed=2)
    # then one prediction per kept item, in the family's answer vocabulary
    assert len(first) == 24
    assert {v for row in first for v in row.raw_output.values()} <= {"Yes", "No", "Yes.", "No."}
    assert _outputs(first) == _outputs(again)
    assert _outputs(first) != _outputs(other)
    # and the same question on the two images is not always answered alike (it is not blind)
    differs = [
        row.raw_output["q0_i0"] != row.raw_output["q0_i1"] for row in first if row.raw_output
    ]
    assert any(differs) and not all(differs)


def test_the_seed_comes_from_the_images_and_the_stand_ins_own_seed():
    assert standin_seed(("a.png",), 1) == standin_seed(("a.png",), 1)
    assert standin_seed(("a.png",), 1) != standin_seed(("b.png",), 1)
    assert standin_seed(("a.png",), 1) != standin_seed(("a.png",), 2)


def test_a_stand_in_run_is_labelled_and_has_metrics(nb_version):
    run = standin_run(version=nb_version, name="Stand-in X (offline rule, not a model)", seed=3)
    assert run.status == ModelRun.Status.SUCCEEDED
    assert run.prediction_count == 24
    assert run.prompt_settings["standin"] is True
    assert run.prompt_settings["note"] == STANDIN_NOTE
    metrics = {m.metric: m.value for m in run.metric_results.all()}
    assert {"acc", "q_acc", "i_acc", "g_acc"} <= set(metrics)
    assert 0 <= metrics["acc"] <= 1


def test_demo_runs_add_the_blind_baseline_and_two_stand_ins_once(nb_version, media):
    curator = UserFactory(username="demo-runs-curator")
    made = demo_runs_add(version=nb_version, created_by=curator)
    assert len(made) == 3
    runs = {r.model.name: r for r in nb_version.runs.select_related("model")}
    blind = [r for r in runs.values() if r.prompt_settings.get("blind_baseline")]
    assert len(blind) == 1 and blind[0].status == ModelRun.Status.SUCCEEDED
    assert blind[0].source == ModelRun.Source.RUNNER
    assert {name for name, _ in DEMO_STANDINS} <= set(runs)
    assert all(r.metrics_computed_at is not None for r in runs.values())
    # the blind baseline answers both images alike: group accuracy 0 (naturalbench.txt Sec. 4)
    g_acc = blind[0].metric_results.get(metric="g_acc").value
    assert g_acc == 0.0
    # a second call adds nothing
    assert demo_runs_add(version=nb_version, created_by=curator) == []
    assert nb_version.runs.count() == 3


@pytest.fixture
def vlind_version(db):
    content = vlind_demo.vlind_data(6)
    return eval_version("vlind", "VLind stand-ins", vlind_parse.parse_items(content, "data.json"))


def test_vlind_gets_the_blind_baseline_and_stand_ins_too(vlind_version, media):
    made = demo_runs_add(version=vlind_version)
    assert len(made) == 3
    for run in made:
        run.refresh_from_db()
        assert run.status == ModelRun.Status.SUCCEEDED and run.metrics_computed_at
        assert run.metric_results.filter(metric="lp").exists()


def test_without_baselines_only_the_metrics_of_imported_runs_are_computed(vlind_version):
    # given a run imported without its metrics (as a recipe's demo imports real responses)
    imported = services.run_import(
        version=vlind_version, model_name="Imported", rows=standin_rows(vlind_version, seed=5)
    )
    assert imported.metrics_computed_at is None
    # when the demo adds its runs without baselines
    assert demo_runs_add(version=vlind_version, baselines=False) == []
    # then nothing new, and the imported run has its metrics
    imported.refresh_from_db()
    assert vlind_version.runs.count() == 1 and imported.metrics_computed_at is not None


def test_the_leaderboard_says_what_a_stand_in_is(client, nb_version):
    researcher = UserFactory(username="board-reader", role="researcher")
    eval_project().members.add(researcher)
    standin_run(version=nb_version, name="Stand-in Y (offline rule, not a model)", seed=4)
    client.force_login(researcher)
    page = client.get(reverse("eval-leaderboard", args=[nb_version.pk])).content.decode()
    assert 'data-testid="standin-note"' in page
    assert "offline stand-in, not a model" in page
    assert "Stand-in Y (offline rule, not a model)" in page
    assert "<svg" in page  # the family's plots
