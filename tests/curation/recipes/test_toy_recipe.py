"""The toy recipe (tests/curation/recipes/toy/, an app the test settings install), end to end
through the framework: a new method is one app — its table from its own migration, its pages,
jobs, queue, outcome handler, export and publishing from the framework (no URLConf edit), and its
family from the evaluation registry.

Given a curator, two crowdworkers and a researcher in one project: the curator creates a run,
starts ``send``, tries ``freeze`` (refused, nothing changes), the two workers answer through the
real claim and submit services, the curator freezes, exports and publishes ``v1``, and the
researcher imports predictions and computes — the funnel counts are exact at every step, the
export bytes are exact, and the leaderboard row has accuracy 2/3.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from django.urls import reverse

from annotator.models import Task
from annotator.outcomes import HANDLERS
from annotator.platform.models import Job
from annotator.services import annotation_submit, assignment_claim
from curation.recipes.framework import appconfig, registry
from evaluation import registry as families
from evaluation import selectors as evaluation_selectors
from evaluation import services as evaluation_services

from .toy.family import FAMILY
from .toy.models import ToyRun
from .toy.recipe import RECIPE

pytestmark = pytest.mark.django_db(transaction=True)
ANSWERS = {"toy-0": "Yes", "toy-1": "No", "toy-2": "Yes"}
EXPORT = b"id,text,label\ntoy-0,A red cube,Yes\ntoy-1,A blue ball,No\ntoy-2,A green cone,Yes\n"


@pytest.fixture
def toy(eager):
    """The toy recipe (installed by the test settings, so its table, pages, jobs and handler are
    there already) and the toy family, for one test."""
    families.register(FAMILY)
    try:
        yield RECIPE
    finally:
        families.unregister(FAMILY.key)


def _funnel(client, run) -> dict:
    response = client.get(reverse("toy-run", args=[run.pk]))
    assert response.status_code == 200
    return response.context["funnel"]


def _stage(client, run, stage: str):
    return client.post(reverse("toy-stage", args=[run.pk, stage]))


def _answer_everything(queue, worker) -> int:
    answered = 0
    claim = assignment_claim(queue=queue, annotator=worker)
    while claim.task is not None:
        response = {"answer": ANSWERS[claim.task.external_id]}
        annotation_submit(task_id=claim.task.pk, annotator=worker, response=response)
        answered += 1
        claim = assignment_claim(queue=queue, annotator=worker)
    return answered


def _content(response) -> bytes:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content)
    return response.content


def test_a_toy_run_goes_from_creation_to_a_leaderboard(
    toy, client, curator, crowdworker, other_worker, researcher, project
):
    # Given a curator's new run
    client.force_login(curator)
    assert client.get(reverse("toy-runs")).status_code == 200
    response = client.post(reverse("toy-new", args=[project.pk]), {"name": "Run 1"})
    run = ToyRun.objects.get(project=project, name="Run 1")
    assert response.status_code == 302
    assert response.url == reverse("toy-run", args=[run.pk])
    assert _funnel(client, run) == {"sent": 0, "decided": 0, "frozen": 0}

    # freeze is blocked before anything is sent: refused, no job, nothing changed
    response = _stage(client, run, "freeze")
    assert response.status_code == 302
    assert not Job.objects.filter(kind="toy.freeze").exists()
    assert _funnel(client, run) == {"sent": 0, "decided": 0, "frozen": 0}

    # When the curator sends the items, three tasks wait in the run's queue
    _stage(client, run, "send")
    job = Job.objects.get(kind="toy.send")
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert job.params == {"run_id": run.pk}
    assert job.result == {"sent": 3}
    run.refresh_from_db()
    assert run.queue.outcome_handler == "toy.review"
    assert run.queue.title == "Toy: Run 1"
    assert Task.objects.filter(queue=run.queue).count() == 3
    assert _funnel(client, run) == {"sent": 3, "decided": 0, "frozen": 0}

    # freeze is still blocked (the queue is not done); send is blocked now too
    detail = client.get(reverse("toy-run", args=[run.pk]))
    assert detail.context["stages"]["freeze"]["blocker"] == "The queue is not done: 0 of 3 decided."
    assert detail.context["stages"]["send"]["blocker"] == "The items are sent already."
    _stage(client, run, "freeze")
    assert not Job.objects.filter(kind="toy.freeze").exists()

    # Two workers answer through the real claim and submit services
    assert _answer_everything(run.queue, crowdworker) == 3
    assert _funnel(client, run) == {"sent": 3, "decided": 0, "frozen": 0}
    assert _answer_everything(run.queue, other_worker) == 3
    run.refresh_from_db()
    assert run.labels == ANSWERS
    assert _funnel(client, run) == {"sent": 3, "decided": 3, "frozen": 0}

    # Then the curator freezes, exports and publishes v1
    _stage(client, run, "freeze")
    assert Job.objects.get(kind="toy.freeze").status == Job.Status.SUCCEEDED
    assert _funnel(client, run) == {"sent": 3, "decided": 3, "frozen": 1}

    response = client.post(reverse("toy-export", args=[run.pk, "csv"]))
    export = Job.objects.get(kind="toy.export")
    assert response.url == reverse("toy-run", args=[run.pk]) + f"#job-{export.pk}"
    assert export.status == Job.Status.SUCCEEDED, export.error
    assert export.params == {"run_id": run.pk, "fmt": "csv"}
    assert export.result["filename"] == f"toy-{run.pk}.csv"
    assert _content(client.get(reverse("toy-export-file", args=[run.pk, export.pk]))) == EXPORT
    assert _content(client.get(reverse("toy-export", args=[run.pk, "csv"]))) == EXPORT

    response = client.post(reverse("toy-publish", args=[run.pk]), {"label": "v1"})
    assert response.status_code == 302
    run.refresh_from_db()
    assert run.benchmark.family == "toy"
    assert [v.label for v in run.benchmark.versions.all()] == ["v1"]
    version = run.benchmark.versions.get()
    assert version.item_count == 3

    # And a researcher's predictions score 2 of 3 on the leaderboard
    predictions = "\n".join(
        f'{{"id": "{item_id}", "answer": "Yes"}}' for item_id in ("toy-0", "toy-1", "toy-2")
    )
    model_run = evaluation_services.run_import(
        version=version,
        model_name="always-yes",
        rows=FAMILY.parse_predictions(predictions, "predictions.jsonl", ""),
        created_by=researcher,
    )
    evaluation_services.metrics_compute(run=model_run, rounds=10)
    board = evaluation_selectors.leaderboard(version)
    [row] = board["rows"]
    assert row["results"]["accuracy"].value == pytest.approx(2 / 3)

    client.force_login(researcher)
    page = client.get(reverse("eval-version", args=[version.pk]))
    assert page.status_code == 200
    assert b'data-testid="toy-item">A blue ball' in page.content


def test_the_detail_page_is_read_in_a_bounded_number_of_queries(
    toy, client, curator, project, django_assert_max_num_queries
):
    run = ToyRun.objects.create(project=project, name="Run 2", created_by=curator)
    client.force_login(curator)
    _stage(client, run, "send")
    with django_assert_max_num_queries(12):
        response = client.get(reverse("toy-run", args=[run.pk]))
    assert response.status_code == 200
    assert response.context["run"] == run
    assert [s["stage"] for s in response.context["stage_list"]] == ["send", "freeze"]
    assert [label for label, _job in response.context["jobs"]] == ["Send the items"]


def test_a_second_way_in_makes_a_run_or_shows_the_new_page_again_saying_why(
    toy, client, curator, project
):
    client.force_login(curator)
    page = client.get(reverse("toy-new", args=[project.pk]))
    assert not page.context["quick_form"].is_bound
    url = reverse("toy-quick", args=[project.pk])
    assert client.get(url).status_code == 405
    response = client.post(url, {"name": "Quick"}, follow=True)
    run = ToyRun.objects.get(project=project, name="Quick")
    assert response.redirect_chain == [(reverse("toy-run", args=[run.pk]), 302)]
    assert "Toy run created the quick way." in response.content.decode()
    response = client.post(url, {"name": "Quick"})
    assert response.status_code == 400
    assert response.context["error"]["message"] == "A toy run of that name exists in this project."
    assert response.context["quick_form"].is_bound
    assert client.post(url, {"name": ""}).context["quick_form"].errors
    assert ToyRun.objects.filter(project=project).count() == 1


def test_the_toy_pages_answer_other_roles_like_missing_ones(
    toy, client, curator, researcher, project
):
    run = ToyRun.objects.create(project=project, name="Run 3", created_by=curator)
    client.force_login(researcher)
    assert client.get(reverse("toy-run", args=[run.pk])).status_code in (403, 404)
    client.force_login(curator)
    assert client.get(reverse("toy-run", args=[run.pk + 1000])).status_code == 404
    assert client.get(reverse("toy-stage", args=[run.pk, "send"])).status_code == 405
    assert client.post(reverse("toy-stage", args=[run.pk, "nope"])).status_code == 404
    assert not Job.objects.exists()


@pytest.mark.django_db(transaction=False)
def test_a_recipe_key_or_job_kind_registers_once_and_unregisters_cleanly():
    # The toy app registered its recipe when apps were ready (RecipeConfig.ready).
    assert registry.recipe_of("toy") is RECIPE
    assert "toy" in {config.label for config in appconfig.installed()}
    assert HANDLERS["toy.review"] is RECIPE.outcomes["toy.review"]
    assert registry.step_of("toy.freeze") == (RECIPE, RECIPE.stage("freeze"))
    with pytest.raises(ValueError, match="registered twice"):
        registry.register(RECIPE)
    with pytest.raises(ValueError, match="toy.send"):
        registry.register(replace(RECIPE, key="toy2", outcomes={}, exports=()))
    registry.unregister("toy")
    try:
        assert "toy.review" not in HANDLERS
        assert "toy" not in [r.key for r in registry.recipes()]
        with pytest.raises(LookupError):
            registry.step_of("toy.send")
    finally:
        registry.register(RECIPE)
    assert registry.recipe_of("toy") is RECIPE


def test_an_export_is_refused_until_the_run_is_frozen_and_served_only_when_finished(
    toy, client, curator, project
):
    run = ToyRun.objects.create(project=project, name="Run 4", created_by=curator)
    client.force_login(curator)
    page = reverse("toy-run", args=[run.pk])

    response = client.post(reverse("toy-export", args=[run.pk, "csv"]), follow=True)
    assert [str(m) for m in response.context["messages"]] == ["Freeze the run first."]
    assert not Job.objects.filter(kind="toy.export").exists()

    response = client.get(reverse("toy-export", args=[run.pk, "zip"]), follow=True)
    assert response.redirect_chain == [(page + "#export-title", 302)]
    assert [str(m) for m in response.context["messages"]] == ["Unknown export format."]
    response = client.get(reverse("toy-export", args=[run.pk, "csv"]), follow=True)
    assert response.redirect_chain == [(page + "#export-title", 302)]
    assert [str(m) for m in response.context["messages"]] == [
        "No finished CSV export yet: start an export, then download it from its card."
    ]
    assert client.get(reverse("toy-export-file", args=[run.pk, 1])).status_code == 404
