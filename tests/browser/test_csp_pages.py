"""The app's own pages satisfy its Content-Security-Policy in a real browser (issue 13, item 7).

Each role logs in through the login page and opens its main pages; any console error (chromium
reports a CSP refusal as "Refused to execute inline script…", "Refused to apply inline style…")
or uncaught JavaScript error fails the test. Requests to any other host are blocked and listed,
so Swagger UI and ReDoc are shown to work offline, from the app's static files.
"""

import pytest
from django.urls import reverse

from annotator import services
from annotator.platform import roles
from evaluation import importers
from evaluation import services as eval_services
from evaluation.families.naturalbench import demo as nb_demo
from tests.browser.conftest import new_page
from tests.browser.test_keyboard_workspace import png_data_url
from tests.factories import PASSWORD, ProjectFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def build_world():
    worker = UserFactory(username="cspworker", role=roles.CROWDWORKER)
    researcher = UserFactory(username="cspresearcher", role=roles.RESEARCHER)
    curator = UserFactory(username="cspcurator", role=roles.CURATOR)
    UserFactory(username="cspadmin", is_staff=True, is_superuser=True)
    project = ProjectFactory(members=[worker, researcher, curator])
    queue = services.queue_create(
        project=project,
        kind="pair_verify",
        title="Pairs",
        config={},
        redundancy=1,
        max_redundancy=1,
        instructions="Use the **keys**.",
    )
    payload = {
        "images": [
            {"url": png_data_url("red"), "caption": "a red cube"},
            {"url": png_data_url("blue"), "caption": "a blue ball"},
        ]
    }
    services.tasks_bulk_create(queue=queue, rows=[services.TaskRow(payload)] * 2)
    benchmark = eval_services.benchmark_get_or_create(
        family="naturalbench", name="NaturalBench", project=project
    )
    rows = importers.parse_items("naturalbench", nb_demo.naturalbench_items(16))
    version = eval_services.version_create(benchmark=benchmark, label="v1", rows=rows)
    for name, accuracy, seed in (("Alpha", 0.9, 1), ("Beta", 0.6, 2)):
        preds = importers.parse_predictions(
            "naturalbench", nb_demo.naturalbench_predictions(16, accuracy=accuracy, seed=seed)
        )
        run = eval_services.run_import(version=version, model_name=name, rows=preds)
        eval_services.metrics_compute(run=run, rounds=30)
    return project, queue, version


def pages_by_role(project, queue, version):
    """(user name, [(url, selector that shows the page worked)]) for each role."""
    home = (reverse("home"), "main h1")
    leaderboard = (reverse("eval-leaderboard", args=[version.pk]), "svg.plot")
    swagger = (reverse("api-docs"), ".swagger-ui .opblock")
    return [
        (
            "cspworker",
            [
                home,
                (reverse("work", args=[queue.pk]), "#task-area[data-task-id]"),
                (reverse("token"), "#api-token"),
            ],
        ),
        ("cspresearcher", [home, leaderboard, (reverse("eval-benchmarks"), "main h1"), swagger]),
        (
            "cspcurator",
            [
                home,
                (reverse("curator-project", args=[project.pk]), "main h1"),
                (reverse("curator-queue", args=[queue.pk]), "main h1"),
                (reverse("curator-queue-new", args=[project.pk]), "#id_config"),
                (reverse("curator-jobs"), "main h1"),
                # each curation area with its own stylesheet
                (reverse("curator-corpora"), "main h1"),
                (reverse("curator-scorers"), "main h1"),
                (reverse("curator-llm-providers"), "main h1"),
                (reverse("curator-nb-pipelines"), "main h1"),
                (reverse("curator-vhx-sets"), "main h1"),
                (reverse("curator-visit-pipelines"), "main h1"),
                (reverse("curator-vlind-benches"), "main h1"),
                leaderboard,
                swagger,
                (reverse("api-redoc"), ".api-content h1"),
            ],
        ),
        (
            "cspadmin",
            [
                home,
                ("/admin/", "#content h1"),
                ("/admin/auth/user/", "#result_list"),
                ("/admin/auth/user/add/", "#user_form"),
                swagger,
            ],
        ),
    ]


def log_in(page, base: str, username: str) -> None:
    page.goto(base + reverse("login"))
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    with page.expect_navigation():
        page.click("button[type=submit]")
    assert page.url.rstrip("/") == base.rstrip("/"), username


def test_every_role_sees_its_pages_without_a_csp_refusal_or_js_error(
    live_server, transactional_db, chromium
):
    project, queue, version = build_world()
    base = live_server.url
    for username, pages in pages_by_role(project, queue, version):
        page = new_page(chromium)
        page.set_default_timeout(20000)
        foreign: list[str] = []

        def offline(route, foreign=foreign):
            if route.request.url.startswith((base, "data:", "blob:")):
                route.continue_()
            else:
                foreign.append(route.request.url)
                route.abort()

        page.context.route("**/*", offline)
        log_in(page, base, username)
        for url, ready in pages:
            response = page.goto(base + url)
            assert response.status == 200, (username, url, response.status)
            page.wait_for_selector(ready)
            page.wait_for_timeout(300)  # deferred scripts, htmx's first swap
        # (ReDoc's page included: its logo comes from the app, not Redocly's CDN)
        assert page.console_errors == [], username
        assert page.js_errors == [], username
        assert foreign == [], username
        page.context.close()
