"""Pages, endpoints, jobs and the CLI: status, content, query counts and the role matrix."""

import json

import pytest
from django.urls import reverse

from annotator.platform import roles
from annotator.platform.models import Job
from evaluation import importers, services
from evaluation.families.naturalbench import demo as nb_demo
from evaluation.families.retrieval import demo as retrieval_demo
from evaluation.families.vhexpansion import demo as vh_demo
from evaluation.models import BenchmarkVersion, MetricResult, ModelRun
from tests.evaluation.helpers import (
    eval_project,
    eval_version,
    evaluate,
    login,
    page,
    version_import_data,
)


@pytest.fixture
def nb_version(db):
    version = eval_version(
        "naturalbench",
        "NaturalBench",
        importers.parse_items("naturalbench", nb_demo.naturalbench_items(16)),
    )
    for name, accuracy, seed in (("Alpha", 0.9, 1), ("Beta", 0.6, 2)):
        preds = importers.parse_predictions(
            "naturalbench", nb_demo.naturalbench_predictions(16, accuracy=accuracy, seed=seed)
        )
        run = services.run_import(version=version, model_name=name, rows=preds)
        services.metrics_compute(run=run, rounds=30)
    return version


@pytest.mark.django_db
def test_benchmarks_empty_state_says_how_to_import(client):
    login(client, roles.CURATOR)
    response = client.get(reverse("eval-benchmarks"))
    assert response.status_code == 200
    text = response.content.decode()
    assert "No benchmarks yet" in text and "manage.py evaluate import-version" in text
    assert reverse("eval-import") in text


@pytest.mark.django_db
def test_leaderboard_page_table_plots_breakdowns(client, nb_version):
    response = page(client, roles.RESEARCHER, "eval-leaderboard", nb_version.pk, max_queries=12)
    text = response.content.decode()
    assert "Alpha" in text and "Beta" in text and "G-Acc" in text
    assert text.count("<svg") >= 2 and "Q-Acc per skill" in text
    assert "by skill" in text and "by subset" in text
    assert text.index("Alpha") < text.index("Beta")  # sorted by G-Acc, descending
    url = reverse("eval-leaderboard", args=[nb_version.pk])
    asc = client.get(url, {"sort": "g_acc", "dir": "asc"}).content.decode()
    table = asc[asc.index("leaderboard") :]
    assert table.index("Beta") < table.index("Alpha")
    assert "?format=csv" in text  # researchers download leaderboards


@pytest.mark.django_db
def test_leaderboard_downloads(client, nb_version):
    login(client, roles.CURATOR)
    url = reverse("eval-leaderboard", args=[nb_version.pk])
    csv_response = client.get(url, {"format": "csv"})
    assert csv_response["Content-Type"].startswith("text/csv")
    lines = csv_response.content.decode().splitlines()
    assert lines[0].startswith("rank,model,run_label,acc,acc_low,acc_high,acc_n")
    assert lines[1].startswith("1,Alpha")
    data = client.get(url, {"format": "json"}).json()
    assert data["family"] == "naturalbench" and data["items"] == 16
    g = data["rows"][0]["metrics"]["g_acc"]
    assert g["low"] <= g["value"] <= g["high"] and g["details"]["seed"] == 0


@pytest.mark.django_db
def test_version_and_list_pages_query_counts(client, nb_version, django_assert_max_num_queries):
    login(client, roles.CURATOR)
    with django_assert_max_num_queries(10):
        response = client.get(reverse("eval-version", args=[nb_version.pk]))
    assert response.status_code == 200
    assert "16" in response.content.decode() and "Compute metrics" not in response.content.decode()
    with django_assert_max_num_queries(8):
        response = client.get(reverse("eval-benchmarks"))
    assert "NaturalBench" in response.content.decode()
    run = nb_version.runs.first()
    with django_assert_max_num_queries(10):
        assert client.get(reverse("eval-run", args=[run.pk])).status_code == 200


@pytest.mark.django_db
def test_import_form_shows_line_numbered_errors_and_stores_nothing(client):
    login(client, roles.CURATOR)
    bad = nb_demo.naturalbench_items(2).replace(
        '"Question_Type": "yes_no"', '"Question_Type": "open"'
    )
    response = client.post(
        reverse("eval-import"),
        version_import_data("naturalbench", "NB", text=bad),
    )
    assert response.status_code == 400
    text = response.content.decode()
    assert "Question_Type must be" in text and '<td class="num">1</td>' in text
    assert BenchmarkVersion.objects.count() == 0 and Job.objects.count() == 0


@pytest.mark.django_db
def test_import_form_runs_the_job_and_the_run_import_computes(
    client, eager, django_capture_on_commit_callbacks
):
    login(client, roles.CURATOR)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("eval-import"),
            version_import_data("vhexpansion", "VH", publish="on", text=vh_demo.vh_items(6)),
        )
    assert response.status_code == 302
    job = Job.objects.get()
    assert job.status == Job.Status.SUCCEEDED and job.result["items"] == 12
    version = BenchmarkVersion.objects.get()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("eval-run-import", args=[version.pk]),
            {"model": "M1", "seed": 3, "text": vh_demo.vh_predictions(6)},
        )
    assert response.status_code == 302
    run = ModelRun.objects.get()
    assert run.seed == 3 and run.prediction_count == 12 and run.metrics_computed_at
    assert MetricResult.objects.get(run=run, metric="accuracy").details["seed"] == 3
    # The leaderboard explains the two accuracies (Definitions 2-3) and shows the chance rows
    page = client.get(reverse("eval-leaderboard", args=[version.pk])).content.decode()
    assert "the share of the test cases as given (not their negations)" in page
    assert "together with their negated counterpart" in page
    assert "Always “yes”, P(yes) = 1" in page
    assert "Accuracy over cases and their negations" in page  # "More metrics", own label
    # And recomputing goes through its own job
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("eval-run-compute", args=[run.pk]))
    compute_job = Job.objects.get(kind=services.COMPUTE_JOB)
    assert compute_job.status == Job.Status.SUCCEEDED and compute_job.done == 3


# The last column: curators only (researchers evaluate, but never change benchmarks).
PAGES = [
    ("get", "eval-benchmarks", False, None),
    ("get", "eval-version", True, None),
    ("get", "eval-leaderboard", True, None),
    ("get", "eval-run", "run", None),
    ("get", "eval-import", False, "curate"),
    ("get", "eval-run-import", True, None),
    ("post", "eval-run-compute", "run", None),
    ("post", "eval-version-publish", True, "curate"),
]


@pytest.mark.django_db
@pytest.mark.parametrize("role", [None, roles.CROWDWORKER, roles.RESEARCHER, roles.CURATOR])
@pytest.mark.parametrize("method,name,arg,write", PAGES)
def test_role_matrix_for_pages(client, nb_version, role, method, name, arg, write):
    login(client, role)
    run = nb_version.runs.first()
    args = [] if not arg else [run.pk if arg == "run" else nb_version.pk]
    before = (Job.objects.count(), MetricResult.objects.count())
    response = getattr(client, method)(reverse(name, args=args))
    allowed = role == roles.CURATOR or (role == roles.RESEARCHER and not write)
    if allowed:
        assert response.status_code in (200, 302)
    else:
        assert response.status_code == 404
        assert (Job.objects.count(), MetricResult.objects.count()) == before


@pytest.mark.django_db
def test_anonymous_goes_to_login(client, nb_version):
    response = client.get(reverse("eval-leaderboard", args=[nb_version.pk]))
    assert response.status_code == 302 and "login" in response["Location"]


API = [
    ("get", "api-eval-benchmarks", None, False),
    ("get", "api-eval-version", "version", False),
    ("get", "api-eval-runs", "version", False),
    ("get", "api-eval-run", "run", False),
    ("get", "api-eval-metrics", "run", False),
    ("post", "api-eval-import", None, True),
    ("post", "api-eval-run-import", "version", False),
    ("post", "api-eval-compute", "run", False),
]


@pytest.mark.django_db
@pytest.mark.parametrize("role", [roles.CROWDWORKER, roles.RESEARCHER, roles.CURATOR])
@pytest.mark.parametrize("method,name,arg,write", API)
def test_role_matrix_for_api(client, nb_version, role, method, name, arg, write):
    login(client, role)
    run = nb_version.runs.first()
    args = [] if not arg else [run.pk if arg == "run" else nb_version.pk]
    before = (Job.objects.count(), BenchmarkVersion.objects.count(), ModelRun.objects.count())
    response = getattr(client, method)(
        reverse(name, args=args), {}, content_type="application/json"
    )
    allowed = role == roles.CURATOR or (role == roles.RESEARCHER and not write)
    if not allowed:
        assert response.status_code == 404
        assert before == (
            Job.objects.count(),
            BenchmarkVersion.objects.count(),
            ModelRun.objects.count(),
        )
    elif method == "get":
        assert response.status_code == 200


@pytest.mark.django_db
def test_api_reads_and_import_errors(client, nb_version):
    login(client, roles.CURATOR)
    data = client.get(reverse("api-eval-benchmarks")).json()
    assert data[0]["versions"][0]["item_count"] == 16
    runs = client.get(reverse("api-eval-runs", args=[nb_version.pk])).json()
    assert {r["model"] for r in runs} == {"Alpha", "Beta"}
    metrics = {m["metric"]: m for m in runs[0]["metrics"]}
    assert metrics["g_acc"]["interval_low"] <= metrics["g_acc"]["value"]
    bad = '{"Index": 1, "outputs": ["Yes"]}\n{"Index": 999, "outputs": ["Yes", "No", "No", "Yes"]}'
    response = client.post(
        reverse("api-eval-run-import", args=[nb_version.pk]),
        {"model": "Gamma", "content": bad},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["line"] == 1
    assert ModelRun.objects.count() == 2 and Job.objects.count() == 0


@pytest.mark.django_db
def test_api_import_enqueues_a_job(client, eager, django_capture_on_commit_callbacks):
    login(client, roles.CURATOR)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("api-eval-import"),
            version_import_data(
                "naturalbench_retrieval", "Retrieval", content=retrieval_demo.retrieval_items(4)
            ),
            content_type="application/json",
        )
    assert response.status_code == 202 and response.json()["rows"] == 4
    assert Job.objects.get(pk=response.json()["job_id"]).status == Job.Status.SUCCEEDED
    assert BenchmarkVersion.objects.get().item_count == 4


@pytest.mark.django_db
def test_schema_generates(client):
    login(client, roles.CURATOR)
    response = client.get(reverse("api-schema"))
    assert response.status_code == 200
    assert b"/api/eval/runs/{run_id}/metrics/" in response.content


@pytest.mark.django_db
def test_cli_import_compute_and_leaderboard(tmp_path):
    items = tmp_path / "nb.jsonl"
    items.write_text(nb_demo.naturalbench_items(8))
    preds = tmp_path / "p.jsonl"
    preds.write_text(nb_demo.naturalbench_predictions(8, accuracy=0.8))
    project = eval_project()
    out = evaluate(
        "import-version", "naturalbench", str(items), "--project", project.slug, "--benchmark", "NB"
    )
    version = BenchmarkVersion.objects.get()
    assert f"version {version.pk}: 8 items" in out
    text = evaluate("import-run", str(version.pk), str(preds), "--model", "CLI", "--rounds", "20")
    assert "G-Acc" in text and "CLI" in text and "[" in text
    run = ModelRun.objects.get()
    out = evaluate("compute", str(run.pk), "--rounds", "20")
    assert "Acc" in out
    out = evaluate("leaderboard", str(version.pk), "--format", "json")
    assert json.loads(out)["rows"][0]["model"] == "CLI"


@pytest.mark.django_db
def test_leaderboard_shows_chance_and_paper_human_rows_for_reference(client, nb_version):
    # Given a NaturalBench leaderboard
    login(client, roles.RESEARCHER)
    url = reverse("eval-leaderboard", args=[nb_version.pk])
    text = client.get(url).content.decode()
    # Then chance (50 / 25 / 25 / 6.25) and the paper's human row (Table 1) follow the runs,
    # without a rank
    assert text.count('class="reference-row"') == 2
    rows = text[text.index('class="reference-row"') :]
    assert "Random chance" in rows and "Human (paper)" in rows
    for value in ("50.0", "25.0", "6.3", "97.5", "94.6", "95.0", "92.1"):  # 6.25 half up
        assert f'<span class="v">{value}</span>' in rows
    # And the JSON export lists them apart from the runs
    data = client.get(url, {"format": "json"}).json()
    assert [r["label"] for r in data["reference_rows"]] == ["Random chance", "Human (paper)"]
    assert data["reference_rows"][1]["metrics"] == {
        "acc": 0.975,
        "q_acc": 0.946,
        "i_acc": 0.95,
        "g_acc": 0.921,
    }
    assert all(r["rank"] for r in data["rows"])
