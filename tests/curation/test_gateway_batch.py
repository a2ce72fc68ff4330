"""The batch job: concurrency limit per provider, progress, idempotent re-runs, validation."""

from __future__ import annotations

import json

import pytest
from celery import current_app

from annotator.platform.errors import Invalid
from annotator.platform.jobs import job_enqueue
from annotator.platform.models import Job
from curation import gateway, jobs
from curation.gateway.batch import batch_run
from curation.models import Generation
from tests.fake_openai import fake_provider, reply, status

pytestmark = pytest.mark.django_db


@pytest.fixture
def provider(fake_openai, project):
    return fake_provider(
        project,
        fake_openai,
        is_default=False,
        model="fake-model",
        timeout_s=5,
        max_retries=0,
        concurrency=2,
    )


def _items(n: int) -> list[dict]:
    return [
        {
            "key": f"q{i}",
            "template": "vhexpansion-negation",
            "variables": {"question": f"Is there a cat number {i}?"},
            "seed": i,
        }
        for i in range(n)
    ]


def _echo_question(delay: float = 0.0, fail_on: str = ""):
    """A reply built from the question in the prompt, so each item's output is checkable."""

    def behaviour(body: dict):
        prompt = body["messages"][-1]["content"]
        question = prompt.rsplit("The question is: ", 1)[1].rstrip(".")
        if fail_on and fail_on in question:
            return status(400, {"error": {"message": "refused", "type": "test"}})
        return reply(f"NOT: {question}", delay=delay)

    return behaviour


def test_batch_runs_every_item_with_at_most_concurrency_calls_in_flight(
    fake_openai, provider, project, curator, eager, django_capture_on_commit_callbacks
):
    # given six items and a provider allowing two calls at a time, each call taking 0.2 s
    fake_openai.default = _echo_question(delay=0.2)

    # when the batch is enqueued and run (eager Celery)
    with django_capture_on_commit_callbacks(execute=True):
        job = gateway.generation_batch_enqueue(
            items=_items(6),
            project=project,
            provider=provider,
            purpose="vh.negation",
            created_by=curator,
        )

    # then all six generations exist, never more than two requests overlapped
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED
    assert (job.done, job.total) == (6, 6)
    assert job.result == {
        "ok": 6,
        "failed": 0,
        "skipped": 0,
        "invalid": 0,
        "provider": "fake",
        "failed_keys": [],
    }
    assert fake_openai.max_in_flight == 2
    gens = Generation.objects.filter(job=job).order_by("item_key")
    batch = job.params["batch"]
    assert [g.item_key for g in gens] == [f"{batch}:q{i}" for i in range(6)]
    assert [g.output for g in gens] == [f"NOT: Is there a cat number {i}?" for i in range(6)]
    assert {g.purpose for g in gens} == {"vh.negation"}
    assert [g.seed for g in gens] == list(range(6))
    assert {g.created_by for g in gens} == {curator}


def test_rerunning_skips_items_that_already_succeeded(fake_openai, provider, project, curator):
    # given a first run where item q2 fails
    fake_openai.default = _echo_question(fail_on="number 2")
    job = job_enqueue(
        kind=gateway.BATCH_JOB_KIND,
        params={"batch": "b1", "items": _items(4), "provider_id": provider.pk},
        project=project,
        created_by=curator,
        total=4,
    )
    first = batch_run(job=job)
    assert first == {
        "ok": 3,
        "failed": 1,
        "skipped": 0,
        "invalid": 0,
        "provider": "fake",
        "failed_keys": ["q2"],
    }
    assert len(fake_openai.chat_requests) == 4

    # when the same batch runs again (redelivery, or the jobs page's Retry copying the params)
    fake_openai.default = _echo_question()
    copy = job_enqueue(kind=gateway.BATCH_JOB_KIND, params=job.params, project=project, total=4)
    second = batch_run(job=copy)

    # then only the failed item is called again
    assert second["ok"] == 1 and second["skipped"] == 3 and second["failed"] == 0
    assert len(fake_openai.chat_requests) == 5
    assert "number 2" in json.dumps(fake_openai.chat_requests[-1]["body"]["messages"])
    assert Generation.objects.filter(item_key="b1:q2", status="ok").count() == 1
    assert Generation.objects.filter(item_key="b1:q2", status="failed").count() == 1


def test_celery_task_is_registered_under_its_name():
    assert "curation.generate_batch" in current_app.tasks
    assert jobs.generate_batch.name == "curation.generate_batch"


def test_bad_items_are_refused_with_numbered_errors_and_no_job(project):
    items = [
        {"key": "a", "template": "vhexpansion-negation", "variables": {"question": "Is it?"}},
        {"key": "a", "template": "vhexpansion-negation", "variables": {}},
        {"key": "c", "template": "nope", "variables": {}},
        "not an object",
        {"key": "e", "template": "caption-shorten", "variables": {"caption": "x"}, "seed": "1"},
        {
            "key": "f",
            "template": "caption-shorten",
            "variables": {"caption": "x", "max_chars": 9},
            "image_ids": [999999],
        },
    ]

    with pytest.raises(Invalid) as info:
        gateway.generation_batch_enqueue(items=items, project=project)

    assert info.value.errors == [
        {"line": 2, "error": "duplicate key 'a'"},
        {"line": 2, "error": "missing variables: question"},
        {"line": 3, "error": "unknown template 'nope'"},
        {"line": 4, "error": "each item must be an object"},
        {"line": 5, "error": "missing variables: max_chars"},
        {"line": 5, "error": "seed must be an integer"},
        {"line": 6, "error": "no image with id 999999"},
    ]
    assert str(info.value) == "7 problems in the batch; nothing was started."
    assert Job.objects.count() == 0


def test_offline_batch_needs_no_endpoint(project, eager, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        job = gateway.generation_batch_enqueue(items=_items(3), project=project)

    job.refresh_from_db()
    assert job.result["ok"] == 3 and job.result["provider"] == "Offline drafter"
    outputs = list(
        Generation.objects.filter(job=job).order_by("item_key").values_list("output", flat=True)
    )
    assert outputs == [f"Is there no cat number {i}?" for i in range(3)]
