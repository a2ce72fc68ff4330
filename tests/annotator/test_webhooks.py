"""Webhooks against a real HTTP receiver on 127.0.0.1 (tests/webhook_receiver.py): events
emitted after commit by their producers, signed deliveries verified as the README shows,
retries with backoff, disabling after repeated failures, project boundaries, address safety."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import transaction
from django.db.models import Subquery
from django.urls import reverse

from annotator import services
from annotator.models import Task
from annotator.platform import webhooks
from annotator.platform.models import Job, Webhook, WebhookDelivery
from annotator.platform.webhooks import JOB_SUCCESS_EVENTS, job_event_emit
from evaluation import importers
from evaluation import services as eval_services
from evaluation.families.naturalbench import demo as nb_demo
from tests.annotator.helpers import token_api
from tests.evaluation.test_project_scoping import NB_ITEMS, nb_predictions
from tests.factories import ProjectFactory, QueueFactory, TaskFactory, UserFactory, vqa_payload
from tests.webhook_receiver import Receiver

pytestmark = pytest.mark.django_db


def _readme_verify():
    """The README's five lines (its "Webhooks" section's Python block), run as written."""
    text = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    section = text.split("## Webhooks", 1)[1].split("\n## ", 1)[0]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    lines = [line for line in code.splitlines() if line.strip()]
    assert len(lines) == 6, code  # the import and five lines
    scope: dict = {}
    exec(code, scope)  # noqa: S102 - the README's own example
    return scope["verify"]


verify = _readme_verify()


@pytest.fixture
def hooks_settings(settings, eager):
    """Local receivers allowed, retries without waiting, a small disabling threshold."""
    settings.BLINDSPOT_WEBHOOK_ALLOW_PRIVATE = True
    settings.BLINDSPOT_WEBHOOK_BACKOFF_S = 0.0
    settings.BLINDSPOT_WEBHOOK_TIMEOUT_S = 2.0
    settings.BLINDSPOT_WEBHOOK_MAX_ATTEMPTS = 4
    settings.BLINDSPOT_WEBHOOK_DISABLE_AFTER = 3
    return settings


@pytest.fixture
def receiver():
    made: list[Receiver] = []

    def make(*statuses, **kw) -> Receiver:
        r = Receiver(statuses or (200,), **kw)
        made.append(r)
        return r

    yield make
    for r in made:
        r.close()


def _decide_all(queue, workers, commits, answer="Yes"):
    """Every worker claims and answers every task of the queue (two answers decide each);
    each submit commits (``commits``: django_capture_on_commit_callbacks)."""
    for worker in workers:
        while True:
            claimed = services.assignment_claim(queue=queue, annotator=worker)
            if claimed.assignment is None:
                break
            with commits(execute=True):
                services.annotation_submit(
                    task_id=claimed.assignment.task_id,
                    annotator=worker,
                    response={"answer": answer},
                )


# --------------------------------------------------------------------------------------------
# The done-when: a signed "queue finished" event, verified
# --------------------------------------------------------------------------------------------
def test_queue_finished_reaches_the_receiver_signed(
    hooks_settings,
    receiver,
    project,
    queue,
    curator,
    crowdworker,
    other_worker,
    django_capture_on_commit_callbacks,
):
    # Given a receiver registered over the API for queue.finished, and a queue of two tasks
    box = receiver()
    response = token_api(curator).post(
        f"/api/projects/{project.pk}/webhooks/",
        {"url": box.url, "events": ["queue.finished", "task.decided"]},
        format="json",
    )
    assert response.status_code == 201, response.content
    secret = response.json()["secret"]
    assert secret.startswith("whsec_")
    TaskFactory(queue=queue)
    TaskFactory(queue=queue)
    # When two annotators decide both tasks (each submit commits)
    _decide_all(queue, [crowdworker, other_worker], django_capture_on_commit_callbacks)
    # Then the receiver got two task.decided and one queue.finished, each signed
    events = [json.loads(r.body)["event"] for r in box.received]
    assert sorted(events) == ["queue.finished", "task.decided", "task.decided"]
    for r in box.received:
        assert verify(secret, r.headers, r.body)
        assert not verify(secret.replace("whsec_", "whsec_x"), r.headers, r.body)
        assert r.headers["Blindspot-Event-Id"] == json.loads(r.body)["id"]
    finished = next(json.loads(r.body) for r in box.received if b"queue.finished" in r.body)
    assert finished["project"] == project.pk
    assert finished["data"] == {"queue": queue.pk, "tasks": {"decided": 2}}
    decided = [json.loads(r.body)["data"] for r in box.received if b"task.decided" in r.body]
    assert [d["outcome"]["label"] for d in decided] == ["Yes", "Yes"]
    assert {d["state"] for d in decided} == {"decided"}
    log = WebhookDelivery.objects.filter(webhook__project=project)
    assert set(log.values_list("status", "response_code", "attempts")) == {("succeeded", 200, 1)}


def test_a_rolled_back_decision_emits_nothing(hooks_settings, receiver, project, queue, curator):
    box = receiver()
    webhooks.webhook_create(project=project, url=box.url, events=["task.decided"])
    task = TaskFactory(queue=queue)
    with pytest.raises(RuntimeError):
        with transaction.atomic():
            services.task_event_emit(task=task, event="task.decided")
            raise RuntimeError("rolled back")
    assert box.received == []
    assert not WebhookDelivery.objects.exists()


# --------------------------------------------------------------------------------------------
# Retries, disabling, the test event
# --------------------------------------------------------------------------------------------
def _emit(project, task, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        services.task_event_emit(task=task, event="task.decided")


def test_a_500_is_retried_with_the_same_event_id(
    hooks_settings, receiver, project, queue, django_capture_on_commit_callbacks
):
    box = receiver(500, 200, body=b"oops " * 2000)
    hook = webhooks.webhook_create(project=project, url=box.url, events=["task.decided"])
    _emit(project, TaskFactory(queue=queue), django_capture_on_commit_callbacks)
    assert len(box.received) == 2
    first, second = box.received
    assert first.headers["Blindspot-Event-Id"] == second.headers["Blindspot-Event-Id"]
    assert first.body == second.body
    assert (first.headers["Blindspot-Attempt"], second.headers["Blindspot-Attempt"]) == ("1", "2")
    delivery = WebhookDelivery.objects.get(webhook=hook)
    assert (delivery.status, delivery.attempts, delivery.response_code) == ("succeeded", 2, 200)
    assert len(delivery.response_body) == webhooks.RESPONSE_PREFIX  # a prefix of 10 000
    hook.refresh_from_db()
    assert hook.consecutive_failures == 0


def test_backoff_doubles_up_to_its_cap(settings):
    settings.BLINDSPOT_WEBHOOK_BACKOFF_S = 30
    settings.BLINDSPOT_WEBHOOK_BACKOFF_MAX_S = 200
    assert [webhooks._backoff(a) for a in (1, 2, 3, 4, 5)] == [30, 60, 120, 200, 200]


def test_a_failing_receiver_is_retried_then_disabled(
    hooks_settings, receiver, project, queue, curator, django_capture_on_commit_callbacks, client
):
    box = receiver(500)
    hook = webhooks.webhook_create(project=project, url=box.url, events=["task.decided"])
    _emit(project, TaskFactory(queue=queue), django_capture_on_commit_callbacks)
    # three failed attempts in a row (DISABLE_AFTER) disable the hook, before MAX_ATTEMPTS (4)
    assert len(box.received) == 3
    hook.refresh_from_db()
    assert not hook.is_active and hook.consecutive_failures == 3
    assert "after 3 failed deliveries in a row" in hook.disabled_reason
    delivery = WebhookDelivery.objects.get(webhook=hook)
    assert (delivery.status, delivery.attempts, delivery.response_code) == ("failed", 3, 500)
    # a disabled hook hears nothing more
    _emit(project, TaskFactory(queue=queue), django_capture_on_commit_callbacks)
    assert len(box.received) == 3
    # the page says so, and a curator enables it again by hand
    client.force_login(curator)
    page = client.get(reverse("curator-webhook", args=[hook.pk])).content.decode()
    assert "Disabled automatically after 3 failed deliveries in a row" in page
    assert "Enable again" in page
    box.statuses = [200]
    client.post(reverse("curator-webhook-active", args=[hook.pk]), {"active": "1"})
    hook.refresh_from_db()
    assert hook.is_active and hook.consecutive_failures == 0 and not hook.disabled_reason
    _emit(project, TaskFactory(queue=queue), django_capture_on_commit_callbacks)
    assert len(box.received) == 4


def test_send_test_event_button(
    hooks_settings, receiver, project, curator, client, django_capture_on_commit_callbacks
):
    box = receiver()
    hook = webhooks.webhook_create(project=project, url=box.url, events=["job.failed"])
    client.force_login(curator)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("curator-webhook-test", args=[hook.pk]))
    assert response.status_code == 302
    assert [json.loads(r.body)["event"] for r in box.received] == ["ping"]
    assert verify(hook.secret, box.received[0].headers, box.received[0].body)
    page = client.get(reverse("curator-webhook", args=[hook.pk])).content.decode()
    assert "ping" in page and "Delivered" in page


def test_redirects_are_not_followed(
    hooks_settings, receiver, project, queue, django_capture_on_commit_callbacks
):
    hooks_settings.BLINDSPOT_WEBHOOK_MAX_ATTEMPTS = 1
    box = receiver(302, headers={"Location": "http://127.0.0.1:9/elsewhere"})
    hook = webhooks.webhook_create(project=project, url=box.url, events=["task.decided"])
    _emit(project, TaskFactory(queue=queue), django_capture_on_commit_callbacks)
    assert [r.path for r in box.received] == ["/hook"]
    delivery = WebhookDelivery.objects.get(webhook=hook)
    assert delivery.status == "failed" and delivery.response_code == 302
    assert "Redirects are not followed" in delivery.error


def test_a_slow_receiver_times_out(
    hooks_settings, receiver, project, queue, django_capture_on_commit_callbacks
):
    hooks_settings.BLINDSPOT_WEBHOOK_TIMEOUT_S = 0.2
    hooks_settings.BLINDSPOT_WEBHOOK_MAX_ATTEMPTS = 1
    box = receiver(200, delay=1.0)
    hook = webhooks.webhook_create(project=project, url=box.url, events=["task.decided"])
    _emit(project, TaskFactory(queue=queue), django_capture_on_commit_callbacks)
    delivery = WebhookDelivery.objects.get(webhook=hook)
    assert delivery.status == "failed" and delivery.response_code is None
    assert "timed out" in delivery.error


# --------------------------------------------------------------------------------------------
# Boundaries and safety
# --------------------------------------------------------------------------------------------
def test_no_delivery_for_another_projects_event(
    hooks_settings, receiver, project, queue, django_capture_on_commit_callbacks
):
    box = receiver()
    webhooks.webhook_create(project=project, url=box.url, events=["task.decided"])
    other_queue = QueueFactory(project=ProjectFactory())
    _emit(other_queue.project, TaskFactory(queue=other_queue), django_capture_on_commit_callbacks)
    assert box.received == []
    assert not WebhookDelivery.objects.exists()


def test_only_subscribed_events_are_delivered(
    hooks_settings, receiver, project, queue, django_capture_on_commit_callbacks
):
    box = receiver()
    webhooks.webhook_create(project=project, url=box.url, events=["queue.finished"])
    _emit(project, TaskFactory(queue=queue), django_capture_on_commit_callbacks)
    assert box.received == []


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/hook",
        "http://localhost/hook",
        "http://10.1.2.3/hook",
        "http://192.168.0.10/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/hook",
        "http://0.0.0.0/hook",
    ],
)
def test_private_addresses_are_refused_unless_allowed(settings, project, curator, url):
    settings.BLINDSPOT_WEBHOOK_ALLOW_PRIVATE = False
    response = token_api(curator).post(
        f"/api/projects/{project.pk}/webhooks/",
        {"url": url, "events": ["job.failed"]},
        format="json",
    )
    assert response.status_code == 400
    assert "only sent to public addresses" in response.json()["message"]
    assert not Webhook.objects.exists()


def test_a_hook_turned_private_is_not_called(
    hooks_settings, receiver, project, queue, django_capture_on_commit_callbacks
):
    # Registered while allowed; the installation then forbids private addresses: the attempt
    # is refused before any connection.
    box = receiver()
    hook = webhooks.webhook_create(project=project, url=box.url, events=["task.decided"])
    hooks_settings.BLINDSPOT_WEBHOOK_ALLOW_PRIVATE = False
    hooks_settings.BLINDSPOT_WEBHOOK_MAX_ATTEMPTS = 1
    _emit(project, TaskFactory(queue=queue), django_capture_on_commit_callbacks)
    assert box.received == []
    assert "only sent to public addresses" in WebhookDelivery.objects.get(webhook=hook).error


def test_bad_urls_and_events_are_refused(hooks_settings, project, curator):
    api = token_api(curator)
    url = f"/api/projects/{project.pk}/webhooks/"
    for body, field in [
        ({"url": "ftp://example.org/x", "events": ["job.failed"]}, "url"),
        ({"url": "http://127.0.0.1/x", "events": ["nope"]}, "events.0"),
        ({"url": "http://127.0.0.1/x", "events": []}, "events"),
        ({"url": "http://user:pw@127.0.0.1/x", "events": ["job.failed"]}, ""),
    ]:
        response = api.post(url, body, format="json")
        assert response.status_code == 400, body
        errors = response.json().get("errors", [{"field": ""}])
        assert errors[0]["field"] == field
    assert not Webhook.objects.exists()


# --------------------------------------------------------------------------------------------
# Other producers
# --------------------------------------------------------------------------------------------
def test_job_events_and_export_ready(
    hooks_settings, receiver, project, django_capture_on_commit_callbacks
):
    box = receiver()
    webhooks.webhook_create(
        project=project, url=box.url, events=["job.finished", "job.failed", "export.ready"]
    )
    export_kind = next(k for k, e in JOB_SUCCESS_EVENTS.items() if e == "export.ready")
    done = Job.objects.create(
        kind=export_kind,
        project=project,
        status=Job.Status.SUCCEEDED,
        result={"filename": "x.jsonl", "sha256": "ab" * 32},
    )
    failed = Job.objects.create(
        kind="annotator.import_tasks", project=project, status=Job.Status.FAILED, error="bad"
    )
    with django_capture_on_commit_callbacks(execute=True):
        job_event_emit(job_id=done.pk)
        job_event_emit(job_id=failed.pk)
    got = [(b["event"], b["data"]["job"]) for b in (json.loads(r.body) for r in box.received)]
    assert sorted(got) == sorted(
        [("job.finished", done.pk), ("export.ready", done.pk), ("job.failed", failed.pk)]
    )
    ready = next(json.loads(r.body) for r in box.received if b"export.ready" in r.body)
    assert ready["data"]["result"]["sha256"] == "ab" * 32


def test_whether_a_jobs_project_listens_is_the_orms(project):
    # Given jobs in a project with an active hook, one with only an inactive hook, one with
    # none, and a job of no project
    def orm(job_id):
        of_job = Job.objects.filter(pk=job_id).values("project_id")[:1]
        return Webhook.objects.filter(project_id=Subquery(of_job), is_active=True).exists()

    quiet, silent = ProjectFactory(), ProjectFactory()
    Webhook.objects.create(project=project, url="https://a.example/h", events=["job.finished"])
    Webhook.objects.create(
        project=quiet, url="https://b.example/h", events=["job.failed"], is_active=False
    )
    jobs = [Job.objects.create(kind="x", project=p) for p in (project, quiet, silent, None)]
    # Then the one statement answers as the ORM's query, for each and for a missing job
    for job_id in [j.pk for j in jobs] + [10**9]:
        assert webhooks.job_listened(job_id) == orm(job_id), job_id
    assert [webhooks.job_listened(j.pk) for j in jobs] == [True, False, False, False]


def test_run_job_emits_job_finished(
    hooks_settings, receiver, project, queue, curator, django_capture_on_commit_callbacks
):
    # A real import job, started as the API starts it, run eagerly by Celery.
    box = receiver()
    webhooks.webhook_create(project=project, url=box.url, events=["job.finished"])
    with django_capture_on_commit_callbacks(execute=True):
        response = token_api(curator).post(
            f"/api/queues/{queue.pk}/tasks/", [vqa_payload(i) for i in range(3)], format="json"
        )
    assert response.status_code in (201, 202), response.content
    bodies = [json.loads(r.body) for r in box.received]
    if response.status_code == 202:  # imported by a job
        assert [b["event"] for b in bodies] == ["job.finished"]
        assert bodies[0]["data"]["kind"] == "annotator.import_tasks"
    assert Task.objects.filter(queue=queue).count() == 3


def test_version_published_and_leaderboard_changed(
    hooks_settings, receiver, project, django_capture_on_commit_callbacks
):
    box = receiver()
    webhooks.webhook_create(
        project=project, url=box.url, events=["version.published", "leaderboard.changed"]
    )
    rows = importers.parse_items("naturalbench", nb_demo.naturalbench_items(NB_ITEMS))
    with django_capture_on_commit_callbacks(execute=True):
        version = eval_services.benchmark_version_create(
            family="naturalbench", name="NB", label="v1", rows=rows, project=project
        )
        run = eval_services.run_import(
            version=version,
            model_name="m",
            rows=importers.parse_predictions("naturalbench", nb_predictions()),
        )
        eval_services.metrics_compute(run=run, rounds=10)
    published, changed = [json.loads(r.body) for r in box.received]
    assert published["event"] == "version.published"
    assert published["data"]["version"] == version.pk and published["data"]["label"] == "v1"
    assert changed["event"] == "leaderboard.changed"
    assert changed["data"] == {
        "version": version.pk,
        "benchmark": version.benchmark_id,
        "why": "metrics",
        "run": run.pk,
    }


# --------------------------------------------------------------------------------------------
# The pages and the API
# --------------------------------------------------------------------------------------------
def test_secret_is_shown_once_on_the_page(hooks_settings, project, curator, client):
    client.force_login(curator)
    response = client.post(
        reverse("curator-webhooks", args=[project.pk]),
        {"url": "http://127.0.0.1:9/x", "events": ["queue.finished"], "description": "CI"},
    )
    hook = Webhook.objects.get(project=project)
    assert response.status_code == 302
    first = client.get(response["Location"]).content.decode()
    assert hook.secret in first
    again = client.get(response["Location"]).content.decode()
    assert hook.secret not in again
    listing = client.get(reverse("curator-webhooks", args=[project.pk])).content.decode()
    assert "http://127.0.0.1:9/x" in listing and hook.secret not in listing


def test_api_never_shows_the_secret_again(hooks_settings, project, curator):
    api = token_api(curator)
    made = api.post(
        f"/api/projects/{project.pk}/webhooks/",
        {"url": "http://127.0.0.1:9/x", "events": ["job.failed"]},
        format="json",
    ).json()
    hook_id = made["id"]
    assert "secret" not in api.get(f"/api/webhooks/{hook_id}/").json()
    assert "secret" not in api.get(f"/api/projects/{project.pk}/webhooks/").json()[0]
    rotated = api.post(f"/api/webhooks/{hook_id}/secret/").json()["secret"]
    assert rotated != made["secret"]
    patched = api.patch(f"/api/webhooks/{hook_id}/", {"is_active": False}, format="json").json()
    assert patched["is_active"] is False and patched["disabled_reason"]
    assert api.delete(f"/api/webhooks/{hook_id}/").status_code == 204
    assert not Webhook.objects.exists()


def test_other_curators_and_researchers_see_no_hooks(hooks_settings, project, researcher):
    hook = webhooks.webhook_create(
        project=project, url="http://127.0.0.1:9/x", events=["job.failed"]
    )
    outsider = UserFactory(role="curator")
    assert token_api(outsider).get(f"/api/webhooks/{hook.pk}/").status_code == 404
    assert token_api(researcher).get(f"/api/webhooks/{hook.pk}/").status_code == 404
    assert token_api(outsider).get(f"/api/projects/{project.pk}/webhooks/").status_code == 404


# --------------------------------------------------------------------------------------------
# The outbox: deliveries stored with the change, lost messages sent again by the sweep
# --------------------------------------------------------------------------------------------
def test_the_delivery_is_stored_in_the_producers_transaction(
    hooks_settings, receiver, project, queue, django_capture_on_commit_callbacks
):
    box = receiver()
    hook = webhooks.webhook_create(project=project, url=box.url, events=["task.decided"])
    task = TaskFactory(queue=queue)
    with django_capture_on_commit_callbacks(execute=True):
        with transaction.atomic():
            services.task_event_emit(task=task, event="task.decided")
            # written with the change, sent only after it commits
            assert WebhookDelivery.objects.get(webhook=hook).status == "pending"
            assert box.received == []
    assert len(box.received) == 1
    assert WebhookDelivery.objects.get(webhook=hook).status == "succeeded"


def _age(delivery: WebhookDelivery, seconds: float) -> None:
    past = delivery.created_at - timedelta(seconds=seconds)
    WebhookDelivery.objects.filter(pk=delivery.pk).update(created_at=past)


def test_a_message_lost_at_the_commit_is_sent_by_the_sweep(
    hooks_settings, receiver, project, queue, django_capture_on_commit_callbacks, monkeypatch
):
    box, other = receiver(), receiver()
    hook = webhooks.webhook_create(project=project, url=box.url, events=["task.decided"])
    webhooks.webhook_create(project=project, url=other.url, events=["task.decided"])
    tries = []

    def broker_down(*args, **kwargs):
        tries.append(args)
        raise ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    # Given the broker down when the change commits: the request still succeeds, having asked
    # the broker once (not once per hook)
    with monkeypatch.context() as patched:
        patched.setattr(webhooks.deliver_webhook, "delay", broker_down)
        _emit(project, TaskFactory(queue=queue), django_capture_on_commit_callbacks)
    assert len(tries) == 1
    delivery = WebhookDelivery.objects.get(webhook=hook)
    assert (delivery.status, delivery.attempts, box.received) == ("pending", 0, [])
    # a delivery not yet late is left to its own message
    assert webhooks.sweep_webhooks() == 0
    # When they are late, the beat's sweep queues them again (the broker is back)
    for late in WebhookDelivery.objects.all():
        _age(late, hooks_settings.BLINDSPOT_WEBHOOK_SWEEP_S + 1)
    assert webhooks.sweep_webhooks() == 2
    # Then each is delivered once, with the event's id, and the sweep has nothing more to do
    assert (len(box.received), len(other.received)) == (1, 1)
    assert box.received[0].headers["Blindspot-Event-Id"] == str(delivery.event_id)
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"succeeded"}
    assert webhooks.sweep_webhooks() == 0


def test_a_delivery_being_sent_is_not_sent_again(
    hooks_settings, receiver, project, queue, django_capture_on_commit_callbacks, monkeypatch
):
    box = receiver()
    hook = webhooks.webhook_create(project=project, url=box.url, events=["task.decided"])
    with monkeypatch.context() as patched:
        patched.setattr(webhooks.deliver_webhook, "delay", lambda *a, **k: None)  # lost
        _emit(project, TaskFactory(queue=queue), django_capture_on_commit_callbacks)
    delivery = WebhookDelivery.objects.get(webhook=hook)
    _age(delivery, hooks_settings.BLINDSPOT_WEBHOOK_SWEEP_S + 1)
    # Given one message's attempt under way (it claimed the delivery)
    assert webhooks._claim(delivery.pk)
    # a second message for it, and the sweep, leave it alone
    assert webhooks.delivery_attempt(delivery_id=delivery.pk) is None
    assert webhooks.sweep_webhooks() == 0
    assert box.received == []
    # a delivery that is over is never claimed again
    WebhookDelivery.objects.filter(pk=delivery.pk).update(status="succeeded")
    assert not webhooks._claim(delivery.pk)


def test_the_sweep_runs_on_the_beat(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["sweep-webhooks"]
    assert entry["task"] == webhooks.sweep_webhooks.name == "annotator.sweep_webhooks"
