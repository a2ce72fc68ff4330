"""Pairwise-judgment and rank-comparison pages, endpoints and CLI: content, query counts, the
role matrix (a refusal changes nothing) and the htmx fragment."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from scipy import stats

from annotator.platform import roles
from annotator.platform.models import Job
from evaluation import importers, services
from evaluation.families.naturalbench import demo as nb_demo
from evaluation.families.visit import demo as visit_demo
from evaluation.families.visit import parse as visit_parse
from evaluation.models import JudgmentSet, PairJudgment
from tests.evaluation.helpers import eval_version, evaluate, login, page
from tests.evaluation.judgment_files import (
    QUALITY,
    ROUNDS,
    first_instances,
    human_file,
    import_llm,
    llm_file,
)
from tests.paths import VISIT_BENCH, needs

pytestmark = needs(VISIT_BENCH)


@pytest.fixture
def rated(visit_version, files):
    """A judge set and a crowd set, rated; text metrics off (METEOR's jar is slow to start)."""
    import_llm(visit_version, llm_file(files, n_instances=30), label="GPT-4 judge")
    services.import_run(
        {
            "target": "judgments",
            "version_id": visit_version.pk,
            "kind": "human",
            "label": "Crowd",
            "content": human_file(files, n_pairs=60),
            "rounds": ROUNDS,
            "text_metrics": False,
        }
    )
    return visit_version


@pytest.mark.django_db
def test_judgments_page_empty_state_says_what_to_do(client, visit_version):
    login(client, roles.CURATOR)
    response = client.get(reverse("eval-judgments", args=[visit_version.pk]))
    assert response.status_code == 200
    text = response.content.decode()
    assert "No judgments yet" in text
    assert "manage.py evaluate import-judgments" in text
    assert reverse("eval-judgments-import", args=[visit_version.pk]) in text


@pytest.mark.django_db
def test_judgments_page_shows_ratings_agreement_and_plots(client, rated):
    # (+1: where the version's reference came from, for the reference row's label)
    response = page(client, roles.RESEARCHER, "eval-judgments", rated.pk, max_queries=9)
    text = response.content.decode()
    judge = JudgmentSet.objects.get(label="GPT-4 judge")
    crowd = JudgmentSet.objects.get(label="Crowd")
    # Both sets with their players, linked to the runs, best first
    assert text.count('class="card judgment-set"') == 2
    assert "LLaVA-13B" in text and "human_verified_reference" in text
    # the reference says where it came from (the published file: GPT-4's, human-verified)
    assert "GPT-4 reference (published, human-verified)" in text
    # each set downloads in the sandbox's head-to-head layout
    assert reverse("eval-judgments-export", args=[rated.pk, judge.pk]) in text
    top = judge.results["players"][0]
    assert top["player"] == "human_verified_reference"
    assert reverse("eval-run", args=[judge.results["players"][1]["run_id"]]) in text
    # Win-rate vs reference with n, the agreement table with strata, three plots
    llava = next(p for p in judge.results["players"] if p["player"] == "llava13b_output")
    assert f"n={llava['win_rate']['n']}" in text
    assert "Agreement with the crowd" in text and "5/5" in text and "Length (longer wins)" in text
    assert crowd.results["agreement"]["pairs"] > 0
    assert text.count("<svg") == 3
    assert "Import judgments" in text  # researchers evaluate: they import judgments


@pytest.mark.django_db
def test_judgments_pages_are_visit_only(client, db):
    login(client, roles.CURATOR)
    version = eval_version(
        "naturalbench", "NB", importers.parse_items("naturalbench", nb_demo.naturalbench_items(2))
    )
    for name in ("eval-judgments", "eval-judgments-import"):
        assert client.get(reverse(name, args=[version.pk])).status_code == 404


@pytest.mark.django_db
def test_import_form_validates_then_runs_the_job(
    client, visit_version, files, eager, django_capture_on_commit_callbacks
):
    login(client, roles.CURATOR)
    url = reverse("eval-judgments-import", args=[visit_version.pk])
    # A bad file: line-numbered errors, status 400, nothing stored
    bad = json.loads(llm_file(files, n_instances=1))
    bad[0]["auto_evaluation_result"] = ["nobody", "tie"]
    response = client.post(
        url,
        {
            "kind": "llm",
            "label": "Judge",
            "text": json.dumps(bad),
            "reference_player": "human_verified_reference",
        },
    )
    assert response.status_code == 400
    assert (
        "must be" in response.content.decode()
        and '<td class="num">1</td>' in response.content.decode()
    )
    assert JudgmentSet.objects.count() == 0 and Job.objects.count() == 0
    # A good one: the job imports and rates it
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            url,
            {
                "kind": "llm",
                "label": "Judge",
                "text": llm_file(files, n_instances=3),
                "reference_player": "human_verified_reference",
                "aliases": "llava13b_output = LLaVA (13B)",
            },
        )
    assert response.status_code == 302
    job = Job.objects.get()
    assert job.status == Job.Status.SUCCEEDED and job.result["pairs"] == 18
    judgment_set = JudgmentSet.objects.get()
    assert judgment_set.results_computed_at is not None
    assert "LLaVA (13B)" in {p["player"] for p in judgment_set.results["players"]}
    # And recomputing runs its own job
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("eval-judgments-compute", args=[visit_version.pk]))
    assert Job.objects.get(kind=services.JUDGMENTS_JOB).status == Job.Status.SUCCEEDED


@pytest.mark.django_db
def test_rankings_page_defaults_to_crowd_vs_judge_elo(client, rated):
    response = page(client, roles.RESEARCHER, "eval-rankings", rated.pk, max_queries=8)
    context = response.context
    judge = JudgmentSet.objects.get(label="GPT-4 judge")
    crowd = JudgmentSet.objects.get(label="Crowd")
    # The crowd first (as in the paper's system-level check), then the judge
    assert (context["key_a"], context["key_b"]) == (f"set:{crowd.pk}:elo", f"set:{judge.pk}:elo")
    # ρ is scipy's over the players both sets rate
    a = {p["model"]: p["elo"] for p in crowd.results["players"]}
    b = {p["model"]: p["elo"] for p in judge.results["players"]}
    shared = sorted(set(a) & set(b))
    expected = stats.spearmanr([a[s] for s in shared], [b[s] for s in shared])
    result = context["result"]
    assert result["n"] == len(shared) == 4
    assert result["rho"] == pytest.approx(float(expected.statistic))
    text = response.content.decode()
    assert "Spearman ρ" in text and f"{result['rho']:.3f}" in text and "<svg" in text


@pytest.mark.django_db
def test_rankings_htmx_fragment_json_and_unknown_keys(client, rated, files):
    login(client, roles.CURATOR)
    url = reverse("eval-rankings", args=[rated.pk])
    judge = JudgmentSet.objects.get(label="GPT-4 judge")
    query = {"a": f"set:{judge.pk}:elo", "b": f"set:{judge.pk}:bt"}
    # htmx asks for the result only
    fragment = client.get(url, query, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in fragment and "Spearman ρ" in fragment
    # JSON
    data = client.get(url, {**query, "format": "json"}).json()
    assert data["n"] == 4 and data["rho"] == pytest.approx(1.0)
    # An unknown key: 400 and says so
    response = client.get(url, {"a": "metric:nope", "b": query["b"]})
    assert response.status_code == 400 and "Unknown ranking" in response.content.decode()


@pytest.mark.django_db
def test_rankings_page_without_two_rankings_says_what_to_do(client, visit_version):
    login(client, roles.RESEARCHER)
    response = client.get(reverse("eval-rankings", args=[visit_version.pk]))
    assert response.status_code == 200
    assert "Two rankings are needed" in response.content.decode()


@pytest.mark.django_db
def test_rankings_on_other_families_compare_leaderboard_metrics(client, db):
    login(client, roles.RESEARCHER)
    version = eval_version(
        "naturalbench", "NB", importers.parse_items("naturalbench", nb_demo.naturalbench_items(12))
    )
    for name, accuracy, seed in (("A", 0.9, 1), ("B", 0.7, 2), ("C", 0.5, 3)):
        preds = importers.parse_predictions(
            "naturalbench", nb_demo.naturalbench_predictions(12, accuracy=accuracy, seed=seed)
        )
        run = services.run_import(version=version, model_name=name, rows=preds)
        services.metrics_compute(run=run, rounds=10)
    response = client.get(
        reverse("eval-rankings", args=[version.pk]), {"a": "metric:acc", "b": "metric:g_acc"}
    )
    assert response.status_code == 200
    assert response.context["result"]["n"] == 3
    assert response.context["result"]["a"] == "Acc"


@pytest.fixture
def small(db, files):
    """Ten real instances and one small judge set: enough for the role matrices."""
    version = eval_version(
        "visit",
        "VisIT-Bench",
        visit_parse.parse_items(first_instances(files[0], n=10)),
        label="small",
    )
    import_llm(version, llm_file(files, n_instances=1), label="Judge", rounds=5)
    return version


# Reading and evaluating (importing and rating judgments) are for curators and researchers, on
# the pages and in the API alike.
JUDGMENT_ENDPOINTS = [
    ("get", "eval-judgments"),
    ("get", "eval-rankings"),
    ("get", "eval-judgments-import"),
    ("post", "eval-judgments-import"),
    ("post", "eval-judgments-compute"),
    ("get", "api-eval-judgments"),
    ("get", "api-eval-rankings"),
    ("post", "api-eval-judgments-import"),
    ("post", "api-eval-judgments-compute"),
]


@pytest.mark.django_db
@pytest.mark.parametrize("role", [roles.CROWDWORKER, roles.RESEARCHER, roles.CURATOR])
@pytest.mark.parametrize("method,name", JUDGMENT_ENDPOINTS)
def test_role_matrix_for_judgment_pages_and_api(client, small, files, role, method, name):
    login(client, role)
    before = (Job.objects.count(), JudgmentSet.objects.count(), PairJudgment.objects.count())
    url = reverse(name, args=[small.pk])
    api = name.startswith("api-")
    if api:
        response = getattr(client, method)(url, {}, content_type="application/json")
    else:
        data = {"kind": "llm", "label": "Another", "text": llm_file(files, n_instances=1)}
        response = getattr(client, method)(url, data if method == "post" else None)
    if role == roles.CROWDWORKER:
        assert response.status_code == 404
        assert before == (
            Job.objects.count(),
            JudgmentSet.objects.count(),
            PairJudgment.objects.count(),
        )
    elif not api:
        assert response.status_code in (200, 302)
    elif method == "get":
        assert response.status_code == 200


@pytest.mark.django_db
def test_api_lists_sets_rankings_and_correlates(client, rated):
    login(client, roles.RESEARCHER)
    sets = client.get(reverse("api-eval-judgments", args=[rated.pk])).json()
    assert [s["label"] for s in sets] == ["GPT-4 judge", "Crowd"] or [s["label"] for s in sets] == [
        "Crowd",
        "GPT-4 judge",
    ]
    judge = next(s for s in sets if s["kind"] == "llm")
    assert judge["results"]["players"][0]["elo"] >= judge["results"]["players"][-1]["elo"]
    url = reverse("api-eval-rankings", args=[rated.pk])
    keys = [r["key"] for r in client.get(url).json()]
    assert f"set:{judge['id']}:elo" in keys and f"set:{judge['id']}:win_rate" in keys
    data = client.get(url, {"a": f"set:{judge['id']}:elo", "b": f"set:{judge['id']}:online"})
    assert data.status_code == 200 and data.json()["n"] == 4
    bad = client.get(url, {"a": "set:0:elo", "b": f"set:{judge['id']}:online"})
    assert bad.status_code == 400


@pytest.mark.django_db
def test_api_import_refuses_bad_files_with_lines(client, rated, files):
    login(client, roles.CURATOR)
    records = json.loads(llm_file(files, n_instances=1))
    records[0]["B_model"] = records[0]["A_model"]
    response = client.post(
        reverse("api-eval-judgments-import", args=[rated.pk]),
        {"kind": "llm", "label": "New", "content": json.dumps(records)},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["line"] == 1
    assert JudgmentSet.objects.count() == 2 and Job.objects.count() == 0
    taken = client.post(
        reverse("api-eval-judgments-import", args=[rated.pk]),
        {"kind": "llm", "label": "Crowd", "content": llm_file(files, n_instances=1)},
        content_type="application/json",
    )
    assert taken.status_code == 409


@pytest.mark.django_db
def test_cli_imports_prints_and_correlates(visit_version, files, tmp_path):
    dataset, models = files
    path = tmp_path / "gpt-4_head2head.json"
    path.write_text(
        visit_demo.visit_llm_judgments(dataset, models, quality=QUALITY, n_instances=10, seed=1)
    )
    text = evaluate(
        "import-judgments",
        str(visit_version.pk),
        str(path),
        "--kind",
        "llm",
        "--label",
        "CLI judge",
        "--alias",
        "panda_gpt_13b_output=PandaGPT-13B",
        "--rounds",
        "20",
        "--no-text-metrics",
    )
    assert "60 pairs" in text and "PandaGPT-13B" in text and "Elo" in text
    judgment_set = JudgmentSet.objects.get()
    out = evaluate("rank-correlation", str(visit_version.pk))
    assert f"set:{judgment_set.pk}:elo" in out
    out = evaluate(
        "rank-correlation",
        str(visit_version.pk),
        f"set:{judgment_set.pk}:elo",
        f"set:{judgment_set.pk}:bt",
    )
    assert "Spearman rho = " in out and "over 4 systems" in out
