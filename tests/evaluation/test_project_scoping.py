"""Issue 13 items 1 and 12: the evaluation app respects project boundaries, and roles agree.

Two projects, each with a curator and a researcher. Everything of project A (benchmarks,
versions, runs, metrics, judgments, downloads) answers the people of project B exactly like a
missing object (404) and nothing changes; inside their project researchers evaluate (run, judge,
import runs and judgments, compute, download) and curators alone import benchmarks and publish.
"""

from __future__ import annotations

import io
import json
import re
from types import SimpleNamespace

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.urls import reverse

from annotator.platform import roles
from annotator.platform.models import Job, Project
from curation.gateway.providers import provider_offline
from curation.models import LLMProvider
from evaluation import importers, services
from evaluation.families.naturalbench import demo as nb_demo
from evaluation.families.visit import parse as visit_parse
from evaluation.models import (
    Benchmark,
    BenchmarkVersion,
    JudgmentSet,
    MetricResult,
    ModelRun,
    PairJudgment,
    Prediction,
)
from evaluation.parsed import PredictionRow
from tests.evaluation.helpers import member, version_import_data
from tests.evaluation.test_runners_judge import visit_csv
from tests.factories import ProjectFactory, UserFactory

NB_ITEMS = 8


def nb_predictions(seed: int = 1) -> str:
    return nb_demo.naturalbench_predictions(NB_ITEMS, accuracy=0.7, seed=seed)


def judge_file() -> str:
    """One judged pair on the first instance of ``visit_csv`` (the official head-to-head
    layout)."""
    return json.dumps(
        [
            {
                "A_model": "Model A",
                "B_model": "Model B",
                "A": "Model A's answer",
                "B": "Model B's answer",
                "image_url": "https://x/0.png",
                "instruction": "Describe picture 0.",
                "auto_evaluation_result": ["Model A", "Model A"],
                "engine": "gpt-4",
            }
        ]
    )


def project_world(project: Project, prefix: str) -> SimpleNamespace:
    """A NaturalBench version (published, with one computed run), a draft version and a
    VisIT-Bench version with two runs and one judgment set, all in ``project``."""
    nb = services.benchmark_version_create(
        family="naturalbench",
        name=f"{prefix} NB",
        project=project,
        label="v1",
        rows=importers.parse_items("naturalbench", nb_demo.naturalbench_items(NB_ITEMS)),
    )
    draft = services.version_create(
        benchmark=nb.benchmark,
        label="draft",
        rows=importers.parse_items("naturalbench", nb_demo.naturalbench_items(NB_ITEMS)),
        publish=False,
    )
    run = services.run_import(
        version=nb,
        model_name=f"{prefix} model",
        rows=importers.parse_predictions("naturalbench", nb_predictions()),
    )
    services.metrics_compute(run=run, rounds=10)
    rows = visit_parse.parse_items(visit_csv(3))
    visit = services.benchmark_version_create(
        family="visit", name=f"{prefix} VisIT", project=project, label="v1", rows=rows
    )
    for model in ("Model A", "Model B"):
        services.run_import(
            version=visit,
            model_name=model,
            rows=[PredictionRow(r.item_id, f"{model} {k}", k + 1) for k, r in enumerate(rows)],
        )
    services.import_run(
        {
            "target": "judgments",
            "version_id": visit.pk,
            "kind": "llm",
            "label": f"{prefix} judge",
            "content": judge_file(),
            "compute": False,
        }
    )
    return SimpleNamespace(project=project, nb=nb, draft=draft, run=run, visit=visit)


@pytest.fixture
def world(db):
    alpha = ProjectFactory(name="Alpha", slug="alpha")
    beta = ProjectFactory(name="Beta", slug="beta")
    provider_offline()  # made once here, so that the snapshots below compare evaluation rows
    return SimpleNamespace(
        a=project_world(alpha, "Alpha"),
        b=project_world(beta, "Beta"),
        curator_a=member(roles.CURATOR, alpha),
        researcher_a=member(roles.RESEARCHER, alpha),
        curator_b=member(roles.CURATOR, beta),
        researcher_b=member(roles.RESEARCHER, beta),
    )


def snapshot() -> tuple:
    return (
        Benchmark.objects.count(),
        BenchmarkVersion.objects.count(),
        BenchmarkVersion.objects.filter(frozen=True).count(),
        ModelRun.objects.count(),
        Prediction.objects.count(),
        MetricResult.objects.count(),
        JudgmentSet.objects.count(),
        PairJudgment.objects.count(),
        Job.objects.count(),
    )


def payload(name: str):
    """Valid data for each write, so that a refusal can only come from the project boundary or
    the role."""
    return {
        "eval-run-import": {"model": "Page import", "seed": 0, "text": nb_predictions(2)},
        "eval-version-publish": {},
        "eval-run-model": {"provider": "offline", "seed": 0},
        "eval-judge-run": {
            "provider": "offline",
            "model": "Model A",
            "label": "Page judge",
            "instances": 2,
            "seed": 0,
        },
        "eval-judgments-import": {"kind": "llm", "label": "Page import", "text": judge_file()},
        "eval-judgments-compute": {},
        "eval-run-compute": {},
        "api-eval-run-import": {"model": "API import", "content": nb_predictions(2)},
        "api-eval-judgments-import": {
            "kind": "llm",
            "label": "API import",
            "content": judge_file(),
        },
        "api-eval-judgments-compute": {},
        "api-eval-run-model": {"label": "API run"},
        "api-eval-judge": {"label": "API judge", "model": "Model A"},
        "api-eval-compute": {},
    }.get(name)


# Every evaluation URL that names an object: (method, url name, which object of a project, query)
REQUESTS = [
    ("get", "eval-version", "nb", ""),
    ("get", "eval-leaderboard", "nb", ""),
    ("get", "eval-leaderboard", "nb", "format=csv"),
    ("get", "eval-leaderboard", "nb", "format=json"),
    ("get", "eval-run-import", "nb", ""),
    ("post", "eval-run-import", "nb", ""),
    ("post", "eval-version-publish", "draft", ""),
    ("post", "eval-run-model", "nb", ""),
    ("post", "eval-judge-run", "visit", ""),
    ("get", "eval-judgments", "visit", ""),
    ("get", "eval-judgments-import", "visit", ""),
    ("post", "eval-judgments-import", "visit", ""),
    ("post", "eval-judgments-compute", "visit", ""),
    ("get", "eval-rankings", "nb", ""),
    ("get", "eval-run", "run", ""),
    ("post", "eval-run-compute", "run", ""),
    ("get", "api-eval-version", "nb", ""),
    ("get", "api-eval-runs", "nb", ""),
    ("post", "api-eval-run-import", "nb", ""),
    ("get", "api-eval-judgments", "visit", ""),
    ("post", "api-eval-judgments-import", "visit", ""),
    ("post", "api-eval-judgments-compute", "visit", ""),
    ("get", "api-eval-rankings", "nb", ""),
    ("post", "api-eval-run-model", "nb", ""),
    ("post", "api-eval-judge", "visit", ""),
    ("get", "api-eval-run", "run", ""),
    ("get", "api-eval-metrics", "run", ""),
    ("post", "api-eval-compute", "run", ""),
]


def call(client, method: str, name: str, pk: int, query: str = ""):
    url = reverse(name, args=[pk]) + (f"?{query}" if query else "")
    if method == "get":
        return client.get(url)
    if name.startswith("api-"):
        return client.post(url, payload(name), content_type="application/json")
    return client.post(url, payload(name))


@pytest.mark.django_db
@pytest.mark.parametrize("outsider", ["curator_b", "researcher_b"])
@pytest.mark.parametrize("method,name,target,query", REQUESTS)
def test_the_other_projects_people_get_404_like_a_missing_object_and_nothing_changes(
    client, world, outsider, method, name, target, query
):
    # Given a curator or researcher of project B
    client.force_login(getattr(world, outsider))
    before = snapshot()

    # When they call an evaluation URL on an object of project A, and on a missing id
    response = call(client, method, name, getattr(world.a, target).pk, query)
    missing = call(client, method, name, 10**9, query)

    # Then both answer 404, alike, and nothing changed
    assert (response.status_code, missing.status_code) == (404, 404)
    assert as_seen(response) == as_seen(missing)
    assert snapshot() == before


# The 404 page (templates/404.html) differs between two alike answers only where it must: the
# CSRF token, masked anew in every response (Django's BREACH defence), and the page's own path
# (the language form's "next"), which the caller typed.
CSRF_TOKEN = re.compile(rb'("X-CSRFToken": "|name="csrfmiddlewaretoken" value=")[^"]+"')


def as_seen(response) -> bytes:
    content = CSRF_TOKEN.sub(rb"\1-\"", response.content)
    return content.replace(response.request["PATH_INFO"].encode(), b"/the/path/")


@pytest.mark.django_db
def test_the_same_urls_serve_the_projects_own_researcher(client, world):
    # Given project A's researcher (the checks above are not refusing everyone)
    client.force_login(world.researcher_a)
    refused = {"eval-version-publish"}
    for method, name, target, query in REQUESTS:
        # When they call each URL
        response = call(client, method, name, getattr(world.a, target).pk, query)
        # Then they are served, except for publishing (curators only)
        expected = {404} if name in refused else {200, 202, 302}
        assert response.status_code in expected, (name, query, response.status_code)


@pytest.mark.django_db
def test_researchers_evaluate_in_their_project(
    client, world, eager, django_capture_on_commit_callbacks
):
    # Given project A's researcher
    client.force_login(world.researcher_a)
    runs = ModelRun.objects.filter(version=world.a.nb).count()

    # When they import a run, recompute a run's metrics, import and rate judgments,
    # and download the leaderboard
    with django_capture_on_commit_callbacks(execute=True):
        imported = client.post(
            reverse("api-eval-run-import", args=[world.a.nb.pk]),
            {"model": "Researcher's model", "content": nb_predictions(3)},
            content_type="application/json",
        )
    with django_capture_on_commit_callbacks(execute=True):
        computed = client.post(reverse("eval-run-compute", args=[world.a.run.pk]))
    with django_capture_on_commit_callbacks(execute=True):
        judged = client.post(
            reverse("api-eval-judgments-import", args=[world.a.visit.pk]),
            {"kind": "llm", "label": "Researcher's judge", "content": judge_file()},
            content_type="application/json",
        )
    with django_capture_on_commit_callbacks(execute=True):
        rated = client.post(reverse("api-eval-judgments-compute", args=[world.a.visit.pk]))
    csv_file = client.get(reverse("eval-leaderboard", args=[world.a.nb.pk]), {"format": "csv"})

    # Then every action is accepted, its job succeeds, and the results are in project A
    assert (imported.status_code, computed.status_code) == (202, 302)
    assert (judged.status_code, rated.status_code, csv_file.status_code) == (202, 202, 200)
    jobs = Job.objects.filter(created_by=world.researcher_a)
    assert set(jobs.values_list("status", flat=True)) == {Job.Status.SUCCEEDED}
    assert set(jobs.values_list("project", flat=True)) == {world.a.project.pk}
    assert ModelRun.objects.filter(version=world.a.nb).count() == runs + 1
    assert JudgmentSet.objects.filter(version=world.a.visit, label="Researcher's judge").exists()
    assert csv_file.content.decode().splitlines()[0].startswith("rank,model,run_label")


@pytest.mark.django_db
@pytest.mark.parametrize(
    "method,name,data",
    [
        ("get", "eval-import", None),
        ("post", "eval-import", "form"),
        ("post", "api-eval-import", "json"),
        ("post", "eval-version-publish", "draft"),
    ],
)
def test_researchers_never_import_or_publish_benchmarks(client, world, method, name, data):
    # Given project A's researcher
    client.force_login(world.researcher_a)
    before = snapshot()
    payload = version_import_data(
        "naturalbench",
        "Researcher's benchmark",
        project=world.a.project,
        text=nb_demo.naturalbench_items(2),
        content=nb_demo.naturalbench_items(2),
    )

    # When they import a benchmark or publish a draft of their own project
    if data == "draft":
        response = client.post(reverse(name, args=[world.a.draft.pk]))
    elif data == "json":
        response = client.post(reverse(name), payload, content_type="application/json")
    else:
        response = getattr(client, method)(reverse(name), payload if data else None)

    # Then it answers like a missing page and nothing changes
    assert response.status_code == 404
    assert snapshot() == before


@pytest.mark.django_db
def test_curators_publish_their_projects_draft(client, world):
    client.force_login(world.curator_a)
    response = client.post(reverse("eval-version-publish", args=[world.a.draft.pk]))
    assert response.status_code == 302
    world.a.draft.refresh_from_db()
    assert world.a.draft.frozen is True and world.a.draft.published_at is not None


@pytest.mark.django_db
def test_lists_show_only_the_readers_projects(client, world):
    # Given project B's researcher
    client.force_login(world.researcher_b)

    # When they list benchmarks (page, API, CLI)
    page = client.get(reverse("eval-benchmarks")).content.decode()
    api = client.get(reverse("api-eval-benchmarks")).json()
    out = io.StringIO()
    call_command("evaluate", "list", "--user", world.researcher_b.username, stdout=out)

    # Then they see project B's benchmarks and none of project A's
    assert "Beta NB" in page and "Alpha" not in page
    assert sorted(b["name"] for b in api) == ["Beta NB", "Beta VisIT"]
    assert {b["project"] for b in api} == {world.b.project.pk}
    assert "Beta NB" in out.getvalue() and "Alpha" not in out.getvalue()


@pytest.mark.django_db
def test_admins_see_every_project(client, world):
    admin = UserFactory(username="root")
    admin.is_superuser = True
    admin.save()
    client.force_login(admin)
    api = client.get(reverse("api-eval-benchmarks")).json()
    assert sorted(b["name"] for b in api) == ["Alpha NB", "Alpha VisIT", "Beta NB", "Beta VisIT"]
    assert client.get(reverse("eval-version", args=[world.a.nb.pk])).status_code == 200


# --- Benchmark import names its project ----------------------------------------------------------


def api_import(client, **fields):
    body = {
        "family": "naturalbench",
        "benchmark": "Alpha NB",
        "label": "v2",
        "content": nb_demo.naturalbench_items(2),
        **fields,
    }
    return client.post(reverse("api-eval-import"), body, content_type="application/json")


@pytest.mark.django_db
def test_benchmark_import_must_name_a_project_the_caller_curates(client, world):
    # Given project B's curator
    client.force_login(world.curator_b)
    before = snapshot()

    # When they import without a project, into project A, or into a project that does not exist
    missing = api_import(client)
    foreign = api_import(client, project=world.a.project.pk)
    unknown = api_import(client, project=10**9)

    # Then each is a clear 400 on the project field and nothing is written
    assert missing.status_code == 400
    assert missing.json()["errors"] == [{"field": "project", "error": "This field is required."}]
    expected = [{"field": "project", "error": "no such project among the projects you curate"}]
    assert (foreign.status_code, unknown.status_code) == (400, 400)
    assert foreign.json()["errors"] == unknown.json()["errors"] == expected
    assert snapshot() == before


@pytest.mark.django_db
def test_a_version_added_by_name_goes_to_the_callers_project_only(
    client, world, eager, django_capture_on_commit_callbacks
):
    # Given project B's curator naming project A's benchmark "Alpha NB"
    client.force_login(world.curator_b)
    alpha_versions = BenchmarkVersion.objects.filter(benchmark=world.a.nb.benchmark).count()

    # When they import a version of it into their own project
    with django_capture_on_commit_callbacks(execute=True):
        response = api_import(client, project=world.b.project.pk)

    # Then a benchmark of that name is made in project B; project A's is untouched
    assert response.status_code == 202
    assert Job.objects.get(pk=response.json()["job_id"]).status == Job.Status.SUCCEEDED
    made = Benchmark.objects.get(project=world.b.project, name="Alpha NB")
    assert made.versions.get().label == "v2"
    assert BenchmarkVersion.objects.filter(benchmark=world.a.nb.benchmark).count() == alpha_versions
    # and adding one more version by name finds project B's, not project A's
    with django_capture_on_commit_callbacks(execute=True):
        again = api_import(client, project=world.b.project.pk, label="v3")
    assert again.status_code == 202
    assert sorted(made.versions.values_list("label", flat=True)) == ["v2", "v3"]
    assert Benchmark.objects.filter(name="Alpha NB").count() == 2


@pytest.mark.django_db
def test_the_import_form_offers_only_curated_projects(client, world):
    # Given project B's curator on the import form
    client.force_login(world.curator_b)
    page = client.get(reverse("eval-import")).content.decode()
    assert "Beta" in page and "Alpha" not in page
    before = snapshot()

    # When they post project A's id
    response = client.post(
        reverse("eval-import"),
        version_import_data(
            "naturalbench",
            "Alpha NB",
            project=world.a.project,
            label="v9",
            text=nb_demo.naturalbench_items(2),
        ),
    )

    # Then the form refuses the project and nothing is written
    assert response.status_code == 400
    assert "Choose one of the projects you curate." in response.content.decode()
    assert snapshot() == before


@pytest.mark.django_db
def test_recipe_publishing_keeps_names_per_project(world):
    # Given the same benchmark name published by two projects' pipelines
    rows = importers.parse_items("naturalbench", nb_demo.naturalbench_items(2))
    one = services.benchmark_version_create(
        family="naturalbench", name="Shared", project=world.a.project, label="v1", rows=rows
    )
    two = services.benchmark_version_create(
        family="naturalbench", name="Shared", project=world.b.project, label="v1", rows=rows
    )
    # Then each lands in its own project's benchmark
    assert one.benchmark != two.benchmark
    assert (one.benchmark.project, two.benchmark.project) == (world.a.project, world.b.project)


@pytest.mark.django_db
def test_deleting_a_project_deletes_its_evaluation_record_only(world):
    world.a.project.delete()
    assert set(Benchmark.objects.values_list("name", flat=True)) == {"Beta NB", "Beta VisIT"}
    assert ModelRun.objects.filter(version__benchmark__project=world.b.project).count() == 3
    assert ModelRun.objects.count() == 3 and JudgmentSet.objects.count() == 1


@pytest.mark.django_db
def test_another_projects_llm_provider_is_not_spent_on_this_projects_version(client, world):
    # Given a researcher of both projects and an LLM provider of project B
    both = member(roles.RESEARCHER, world.a.project)
    world.b.project.members.add(both)
    provider = LLMProvider.objects.create(
        name="Beta's endpoint", model="m", supports_vision=True, project=world.b.project
    )
    client.force_login(both)
    before = snapshot()

    # When they open project A's version and start a run there with project B's provider
    page = client.get(reverse("eval-version", args=[world.a.nb.pk])).content.decode()
    api = client.post(
        reverse("api-eval-run-model", args=[world.a.nb.pk]),
        {"provider_id": provider.pk},
        content_type="application/json",
    )
    form = client.post(
        reverse("eval-run-model", args=[world.a.nb.pk]), {"provider": provider.pk, "seed": 0}
    )

    # Then it is neither offered nor accepted, and nothing is started
    assert "Beta's endpoint" not in page
    assert api.status_code == 404 and form.status_code == 400
    assert snapshot() == before


# --- Pages offer only what the role may do (item 12) -------------------------------------------


@pytest.mark.django_db
def test_pages_show_researchers_their_actions_and_hide_curators_ones(client, world):
    # Given project A's researcher and curator on the draft version's page
    url = reverse("eval-version", args=[world.a.draft.pk])
    run_url = reverse("eval-run", args=[world.a.run.pk])
    client.force_login(world.researcher_a)
    researcher_page = client.get(url).content.decode()
    researcher_run = client.get(run_url).content.decode()
    researcher_list = client.get(reverse("eval-benchmarks")).content.decode()
    client.force_login(world.curator_a)
    curator_page = client.get(url).content.decode()

    publish = reverse("eval-version-publish", args=[world.a.draft.pk])
    # Then the researcher is offered importing a run, running a model and computing metrics,
    # never publishing or importing a benchmark; the curator is offered publishing
    assert reverse("eval-run-import", args=[world.a.draft.pk]) in researcher_page
    assert 'id="run-model"' in researcher_page
    assert reverse("eval-run-compute", args=[world.a.run.pk]) in researcher_run
    assert publish not in researcher_page
    assert reverse("eval-import") not in researcher_list
    assert publish in curator_page


@pytest.mark.django_db
def test_the_researchers_home_page_does_not_offer_curation(client, world):
    client.force_login(world.researcher_a)
    researcher = client.get(reverse("home")).content.decode()
    client.force_login(world.curator_a)
    curator = client.get(reverse("home")).content.decode()
    assert "Create queues, load tasks" not in researcher
    assert "run models and judges and compute metrics" in researcher
    assert "Create queues, load tasks" in curator


# --- The CLI with a user -----------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    "args,error",
    [
        (["compute", "{run}"], "No run {run}"),
        (["leaderboard", "{nb}"], "No version {nb}"),
        (["leaderboard", "{nb}", "--format", "csv"], "No version {nb}"),
        (["import-run", "{nb}", "{file}", "--model", "X"], "No version {nb}"),
        (["judgments", "{visit}", "--compute"], "No version {visit}"),
        (["rank-correlation", "{nb}"], "No version {nb}"),
        (["run", "{nb}"], "No version {nb}"),
        (["judge", "{visit}", "--model", "Model A"], "No version {visit}"),
        (
            ["import-version", "naturalbench", "{file}", "--project", "alpha", "--benchmark", "X"],
            "No project 'alpha' among the projects you curate.",
        ),
    ],
)
def test_cli_as_someone_outside_the_project_fails_cleanly(world, tmp_path, args, error):
    # Given project B's curator at the terminal, naming project A's objects
    file = tmp_path / "f.jsonl"
    file.write_text(nb_predictions(2))
    ids = {"run": world.a.run.pk, "nb": world.a.nb.pk, "visit": world.a.visit.pk, "file": file}
    before = snapshot()

    # When they run the command as themselves
    with pytest.raises(CommandError) as refused:
        call_command(
            "evaluate",
            *[a.format(**ids) for a in args],
            "--user",
            world.curator_b.username,
            stdout=io.StringIO(),
        )

    # Then it says the object does not exist, and nothing changed
    assert str(refused.value) == error.format(**ids)
    assert snapshot() == before


@pytest.mark.django_db
def test_cli_roles_and_unknown_users(world, tmp_path):
    items = tmp_path / "nb.jsonl"
    items.write_text(nb_demo.naturalbench_items(2))
    importing = ["evaluate", "import-version", "naturalbench", str(items), "--project", "alpha"]
    with pytest.raises(CommandError, match="No project 'alpha' among the projects you curate"):
        call_command(*importing, "--benchmark", "R", "--user", world.researcher_a.username)
    with pytest.raises(CommandError, match="No active user 'nobody'"):
        call_command("evaluate", "list", "--user", "nobody")
    # a researcher of the project computes; its curator imports into it
    out = io.StringIO()
    call_command(
        "evaluate",
        "compute",
        str(world.a.run.pk),
        "--rounds",
        "5",
        "--user",
        world.researcher_a.username,
        stdout=out,
    )
    assert "G-Acc" in out.getvalue()
    call_command(*importing, "--benchmark", "C", "--user", world.curator_a.username, stdout=out)
    made = Benchmark.objects.get(name="C")
    assert (made.project, made.created_by) == (world.a.project, world.curator_a)


# --- The data migration -------------------------------------------------------------------------

BEFORE = [("evaluation", "0001_initial_squashed_0002_judgments")]
AFTER = [("evaluation", "0004_benchmark_project_required")]


@pytest.fixture
def back_to_the_leaves():
    """Whatever a migration test leaves behind, the schema is at every app's latest migration
    again afterwards: the tests after it (transactional ones run last) need the whole schema."""
    leaves = MigrationExecutor(connection).loader.graph.leaf_nodes()
    yield
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(leaves)


@pytest.mark.slow  # migrates the database back and forward
@pytest.mark.django_db(transaction=True)
def test_benchmarks_without_a_project_move_to_the_admins_only_project(back_to_the_leaves):
    # Given the schema before projects were required, a benchmark without a project and one
    # with a project
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    OldProject = old.get_model("annotator", "Project")
    OldBenchmark = old.get_model("evaluation", "Benchmark")
    OldVersion = old.get_model("evaluation", "BenchmarkVersion")
    owned = OldProject.objects.create(name="Owned", slug="owned")
    legacy = OldBenchmark.objects.create(family="vlind", name="Legacy", project=None)
    OldVersion.objects.create(benchmark=legacy, label="v1")
    kept = OldBenchmark.objects.create(family="vlind", name="Kept", project=owned)

    # When the migrations run forward
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(AFTER)

    # Then the orphan is in "Unassigned (admins only)", which has no members, and the other
    # benchmark stays where it was
    unassigned = Project.objects.get(slug="unassigned")
    assert unassigned.name == "Unassigned (admins only)"
    assert unassigned.members.count() == 0
    assert Benchmark.objects.get(pk=legacy.pk).project_id == unassigned.pk
    assert BenchmarkVersion.objects.get(benchmark_id=legacy.pk).label == "v1"
    assert Benchmark.objects.get(pk=kept.pk).project_id == owned.pk
    # and only admins reach it
    researcher = member(roles.RESEARCHER, ProjectFactory())
    from evaluation import selectors

    assert not selectors.benchmarks_visible(researcher).filter(pk=legacy.pk).exists()
