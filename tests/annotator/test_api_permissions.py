"""Every API endpoint × {anonymous, crowdworker, curator, researcher}.

Anonymous callers get 401 (token auth comes first, so DRF answers with a WWW-Authenticate
challenge); a signed-in user without the endpoint's role gets 404, like a missing object. A
refused request changes nothing. A crowdworker never receives gold answers or other people's
responses.
"""

import json
from typing import NamedTuple

import pytest
from django.urls import get_resolver
from rest_framework.test import APIClient

from annotator import api_urls, services
from annotator.models import (
    Annotation,
    Assignment,
    Enrollment,
    Report,
    SentBackAnnotation,
    Task,
    TaskQueue,
)
from annotator.platform.models import Job, Webhook, WebhookDelivery
from tests.factories import ProjectFactory, QueueFactory, TaskFactory, UserFactory, vqa_payload

ANON, WORKER, CURATOR, RESEARCHER = "anonymous", "crowdworker", "curator", "researcher"


@pytest.fixture
def world(project, queue, crowdworker, other_worker, curator, researcher):
    """A queue with a task the crowdworker holds, one other worker's answer, a gold item, a job."""
    held = TaskFactory(queue=queue, payload=vqa_payload(1))
    TaskFactory(queue=queue, payload=vqa_payload(2))
    TaskFactory(queue=queue, payload=vqa_payload(3), is_gold=True, gold={"answer": "No"})
    services.assignment_claim(queue=queue, annotator=other_worker)  # takes `held` first
    services.annotation_submit(task_id=held.id, annotator=other_worker, response={"answer": "No"})
    # other_worker now holds `answered`; the crowdworker gets `held` (fullest first)
    assert services.assignment_claim(queue=queue, annotator=crowdworker).task.id == held.id
    # other_worker reports the task they hold: a report for the inbox
    theirs = Assignment.objects.get(annotator=other_worker, state=Assignment.State.LEASED)
    services.assignment_report(
        task_id=theirs.task_id, annotator=other_worker, reason="broken_image"
    )
    job = Job.objects.create(kind="annotator.import_tasks", project=project)
    hook = Webhook.objects.create(
        project=project, url="https://hooks.example.org/in", events=["task.decided"], secret="s"
    )
    return {
        "queue": queue,
        "task": held,
        "job": job,
        "webhook": hook,
        "member": other_worker,
        "report": Report.objects.get(reporter=other_worker),
        "users": {
            ANON: None,
            WORKER: crowdworker,
            CURATOR: curator,
            RESEARCHER: researcher,
        },
    }


def client_as(world, who) -> APIClient:
    client = APIClient()
    if world["users"][who] is not None:
        client.force_login(world["users"][who])
    return client


def snapshot(world) -> dict:
    """Everything a refused request could have changed."""
    queue = TaskQueue.objects.get(pk=world["queue"].pk)
    return {
        "queues": list(TaskQueue.objects.order_by("id").values()),
        "tasks": list(Task.objects.order_by("id").values()),
        "assignments": list(Assignment.objects.order_by("id").values()),
        "annotations": list(Annotation.objects.order_by("id").values_list("id", "response")),
        "sent_back": SentBackAnnotation.objects.count(),
        "reports": list(Report.objects.order_by("id").values("status", "handled_at", "note")),
        "enrollments": list(Enrollment.objects.order_by("id").values()),
        "jobs": Job.objects.count(),
        "webhooks": list(Webhook.objects.order_by("id").values()),
        "deliveries": WebhookDelivery.objects.count(),
        "status": queue.status,
    }


class Endpoint(NamedTuple):
    """One API call, and the roles it serves (`ok`); every other signed-in role gets 404."""

    name: str
    method: str
    url: str
    allowed: tuple[str, ...]
    body: object = None
    ok: int = 200

    def expected(self, who: str) -> int:
        """The status for `who` (ANON always 401)."""
        if who == ANON:
            return 401
        return self.ok if who in self.allowed else 404


# Who an endpoint serves
EVERYONE = (WORKER, CURATOR, RESEARCHER)
STAFF = (CURATOR, RESEARCHER)
CURATORS = (CURATOR,)
WORKERS = (WORKER,)
NEW_QUEUE = {"project": "{project}", "kind": "vqa_choice", "title": "New"}
CANCEL = {"ids": ["{task}"], "reason": "withdrawn"}
QUEUE, TASK = "/api/queues/{queue}/", "/api/tasks/{task}/"
HOOK = "/api/webhooks/{webhook}/"
SETTLE = {"method": "majority", "reason": "settled from the matrix"}
SEND_BACK = {"annotator": "worker2", "note": "look at the left image"}
RESOLVE = {"action": "resolve", "note": "from the matrix"}
ENDPOINTS = [
    Endpoint("queue-list", "get", "/api/queues/", EVERYONE),
    Endpoint("queue-create", "post", "/api/queues/", CURATORS, NEW_QUEUE, ok=201),
    Endpoint("queue-detail", "get", QUEUE, EVERYONE),
    Endpoint("queue-update", "patch", QUEUE, CURATORS, {"priority": 5}),
    Endpoint("queue-status", "post", QUEUE + "status/", CURATORS, {"status": "paused"}),
    Endpoint("task-list", "get", QUEUE + "tasks/", STAFF),
    Endpoint("task-bulk-create", "post", QUEUE + "tasks/", CURATORS, [vqa_payload(9)], ok=201),
    Endpoint("task-cancel", "post", QUEUE + "tasks/cancel/", CURATORS, CANCEL),
    Endpoint("next", "post", QUEUE + "next/", WORKERS),
    Endpoint("submit", "post", TASK + "submit/", WORKERS, {"response": {"answer": "Yes"}}, ok=201),
    Endpoint("skip", "post", TASK + "skip/", WORKERS),
    Endpoint("report", "post", TASK + "report/", WORKERS, {"reason": "broken_image"}),
    Endpoint("heartbeat", "post", TASK + "heartbeat/", WORKERS),
    # the worker holds the task but has not answered it: nothing to undo (409, nothing changes)
    Endpoint("undo", "post", TASK + "undo/", WORKERS, ok=409),
    Endpoint("history", "get", QUEUE + "history/", WORKERS),
    Endpoint("outcomes", "get", QUEUE + "outcomes/?format=jsonl", STAFF),
    Endpoint("annotations", "get", QUEUE + "annotations/?format=csv", STAFF),
    Endpoint("project-members", "get", "/api/projects/{project}/members/", CURATORS),
    Endpoint(
        "project-member-remove", "delete", "/api/projects/{project}/members/{member}/", CURATORS
    ),
    Endpoint("job-list", "get", "/api/jobs/", STAFF),
    Endpoint("job-detail", "get", "/api/jobs/{job}/", STAFF),
    Endpoint("project-list", "get", "/api/projects/", STAFF),
    Endpoint("task-settle", "post", TASK + "settle/", CURATORS, SETTLE),
    Endpoint(
        "queue-tasks-settle", "post", QUEUE + "tasks/settle/", CURATORS, SETTLE | {"filter": {}}
    ),
    Endpoint("queue-agreement", "get", QUEUE + "agreement/", STAFF),
    # review: other_worker answered the held task; they reported the task they hold next
    Endpoint("task-send-back", "post", TASK + "send-back/", CURATORS, SEND_BACK),
    Endpoint("project-reports", "get", "/api/projects/{project}/reports/?status=all", STAFF),
    Endpoint("report-handle", "post", "/api/reports/{report}/handle/", CURATORS, RESOLVE),
    Endpoint("queue-reports", "get", QUEUE + "reports/?format=csv", STAFF),
    Endpoint("webhook-list", "get", "/api/projects/{project}/webhooks/", CURATORS),
    Endpoint("webhook-detail", "patch", HOOK, CURATORS, {"description": "changed"}),
    Endpoint("webhook-test", "post", HOOK + "test/", CURATORS, ok=202),
    Endpoint("webhook-secret", "post", HOOK + "secret/", CURATORS),
    Endpoint("webhook-deliveries", "get", HOOK + "deliveries/", CURATORS),
]
MATRIX = [
    pytest.param(endpoint, who, id=f"{endpoint.name}-{who}")
    for endpoint in ENDPOINTS
    for who in (ANON, WORKER, CURATOR, RESEARCHER)
]


def fill(template, world):
    ids = {
        "queue": world["queue"].pk,
        "task": world["task"].pk,
        "job": world["job"].pk,
        "webhook": world["webhook"].pk,
        "project": world["queue"].project_id,
        "member": world["member"].pk,
        "report": world["report"].pk,
    }
    text = json.dumps(template) if not isinstance(template, str) else template
    for name, value in ids.items():
        text = text.replace('"{' + name + '}"', str(value))  # a JSON number in a body
    for name, value in ids.items():
        text = text.replace("{" + name + "}", str(value))
    return text if isinstance(template, str) else json.loads(text)


def call(client, world, endpoint):
    body = endpoint.body
    kwargs = {"format": "json"} if body is not None else {}
    args = (fill(body, world),) if body is not None else ()
    return getattr(client, endpoint.method)(fill(endpoint.url, world), *args, **kwargs)


def test_matrix_covers_every_api_route():
    routes = {p.pattern._route for p in api_urls.urlpatterns}
    covered = {ep.url.split("?")[0].removeprefix("/api/") for ep in ENDPOINTS}
    covered = {
        c.replace("{queue}", "<int:queue_id>")
        .replace("{task}", "<int:task_id>")
        .replace("{job}", "<int:job_id>")
        .replace("{project}", "<int:project_id>")
        .replace("{member}", "<int:user_id>")
        .replace("{webhook}", "<int:webhook_id>")
        .replace("{report}", "<int:report_id>")
        for c in covered
    }
    assert routes == covered
    # and every view declares its roles
    for pattern in api_urls.urlpatterns:
        assert pattern.callback.cls.roles, pattern.name
    assert get_resolver()  # the API is mounted


@pytest.mark.parametrize("endpoint, who", MATRIX)
def test_permission_matrix(world, endpoint, who):
    expected = endpoint.expected(who)
    before = snapshot(world)
    response = call(client_as(world, who), world, endpoint)
    assert response.status_code == expected
    if expected >= 400:
        assert "message" in response.json()
        # Then nothing changed
        assert snapshot(world) == before


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=[e.name for e in ENDPOINTS])
def test_staff_of_another_project_get_404(world, endpoint):
    # A curator-and-researcher who is not a member of the project
    outsider = UserFactory(role="curator")
    outsider.groups.add(*world["users"][RESEARCHER].groups.all())
    ProjectFactory(members=[outsider])
    client = APIClient()
    client.force_login(outsider)
    before = snapshot(world)
    response = call(client, world, endpoint)
    name = endpoint.name
    if name in ("queue-list", "job-list"):
        assert response.status_code == 200
        assert response.json()["count"] == 0
    elif name == "project-list":  # only the outsider's own project
        assert response.status_code == 200
        own = outsider.projects.get()
        assert [p["id"] for p in response.json()["results"]] == [own.pk]
    elif name == "queue-create":
        assert response.status_code == 400  # the project is not theirs
    else:
        assert response.status_code == 404, name
    assert snapshot(world) == before


@pytest.mark.parametrize(
    "endpoint",
    [e for e in ENDPOINTS if "{task}" in e.url or e.name == "next"],
    ids=lambda e: e.name,
)
def test_crowdworker_outside_the_project_gets_404(world, endpoint):
    stranger = UserFactory(role="crowdworker")
    client = APIClient()
    client.force_login(stranger)
    before = snapshot(world)
    response = call(client, world, endpoint)
    assert response.status_code == 404
    # Exactly what a missing id answers
    missing = call(
        client, {**world, "task": Task(pk=10**9), "queue": TaskQueue(pk=10**9)}, endpoint
    )
    assert (missing.status_code, missing.json()) == (404, response.json())
    assert snapshot(world) == before


@pytest.mark.parametrize("path", ["submit", "skip", "report", "heartbeat"])
def test_someone_elses_task_is_404(world, other_worker, path):
    # The crowdworker acts on the task other_worker holds (and already answered)
    answered = Task.objects.exclude(pk=world["task"].pk).filter(is_gold=False).first()
    assert Assignment.objects.filter(task=answered, annotator=other_worker).exists()
    client = client_as(world, WORKER)
    body = {"response": {"answer": "Yes"}, "reason": "x"}
    before = snapshot(world)
    response = client.post(f"/api/tasks/{answered.pk}/{path}/", body, format="json")
    missing = client.post(f"/api/tasks/{10**9}/{path}/", body, format="json")
    assert response.status_code == 404
    assert response.json() == missing.json() == {"message": "No such task."}
    assert snapshot(world) == before


# --------------------------------------------------------------------------------------------
# A crowdworker never sees gold answers or other people's responses
# --------------------------------------------------------------------------------------------
GOLD_TEXT = "GOLD-ANSWER-7f3a"
OTHER_TEXT = "OTHER-PERSON-ANSWER-91c2"


def test_crowdworker_json_never_holds_gold_or_others_responses(project, crowdworker, other_worker):
    # Given a write_text queue with gold items and another worker's answers
    queue = QueueFactory(project=project, kind="write_text", redundancy=2, max_redundancy=2)
    tasks = [TaskFactory(queue=queue, payload={"prompt": f"Describe {i}"}) for i in range(3)]
    gold = TaskFactory(
        queue=queue, payload={"prompt": "Describe gold"}, is_gold=True, gold={"text": GOLD_TEXT}
    )
    for task in tasks:
        services.assignment_claim(queue=queue, annotator=other_worker)
        services.annotation_submit(
            task_id=task.id, annotator=other_worker, response={"text": f"{OTHER_TEXT} {task.id}"}
        )
    queue.gold_rate = 1.0  # the first item served is the gold one
    queue.save()
    client = APIClient()
    client.force_login(crowdworker)
    bodies = []

    def record(response):
        assert response.status_code < 400, response.content
        bodies.append(response.content.decode())
        return response.json()

    # When the crowdworker uses every endpoint open to them
    record(client.get("/api/queues/"))
    record(client.get(f"/api/queues/{queue.id}/"))
    claim = record(client.post(f"/api/queues/{queue.id}/next/"))
    assert claim["task"]["id"] == gold.id
    record(client.post(f"/api/tasks/{gold.id}/heartbeat/"))
    seen = [gold.id]
    result = record(
        client.post(f"/api/tasks/{gold.id}/submit/", {"response": {"text": "mine"}}, format="json")
    )
    record(
        client.post(f"/api/tasks/{gold.id}/submit/", {"response": {"text": "mine"}}, format="json")
    )
    while result["next"]["task"] is not None:
        task_id = result["next"]["task"]["id"]
        seen.append(task_id)
        result = record(
            client.post(
                f"/api/tasks/{task_id}/submit/", {"response": {"text": "mine"}}, format="json"
            )
        )
    # Then they answered every task, and no body holds a gold answer, a gold flag or
    # another person's response
    assert sorted(seen) == sorted([gold.id, *(t.id for t in tasks)])
    text = "\n".join(bodies)
    assert GOLD_TEXT not in text
    assert OTHER_TEXT not in text
    for body in bodies:
        assert_no_key(json.loads(body), {"gold", "is_gold", "gold_correct", "outcome", "response"})


def assert_no_key(value, keys):
    if isinstance(value, dict):
        assert not keys & set(value), value
        for item in value.values():
            assert_no_key(item, keys)
    elif isinstance(value, list):
        for item in value:
            assert_no_key(item, keys)
