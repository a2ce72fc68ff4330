"""Happy paths of the JSON API: queues, bulk tasks, next/submit/skip/report/heartbeat, exports."""

import json
from datetime import timedelta

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotator import services
from annotator.models import Annotation, Assignment, Task, TaskQueue
from annotator.platform.models import Job
from tests.factories import QueueFactory, TaskFactory, vqa_payload


def client_for(user=None, *, token: bool = True) -> APIClient:
    client = APIClient()
    if user is not None:
        if token:
            key = Token.objects.get_or_create(user=user)[0].key
            client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        else:
            client.force_login(user)
    return client


def iso(dt) -> str:
    return dt.isoformat().replace("+00:00", "Z")


# --------------------------------------------------------------------------------------------
# Queues
# --------------------------------------------------------------------------------------------
def test_token_auth_lists_queues_scoped_for_a_crowdworker(project, queue, crowdworker):
    # Given an open queue, a closed one and one in a project the worker is not a member of
    closed = QueueFactory(project=project, status=TaskQueue.Status.CLOSED)
    QueueFactory()
    # When the crowdworker lists queues with an API token
    response = client_for(crowdworker).get("/api/queues/")
    # Then only the open queue of their project is there, without staff-only fields
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 1
    assert body["results"] == [
        {
            "id": queue.id,
            "project": project.id,
            "kind": "vqa_choice",
            "title": queue.title,
            "instructions": "",
            "config": {},
            "status": "open",
            "report_reasons": [
                {"code": "broken_image", "label": "An image does not load or is broken"},
                {"code": "unclear", "label": "The task is unclear or cannot be answered"},
                {"code": "offensive", "label": "Offensive or private content"},
                {"code": "other", "label": "Something else"},
            ],
        }
    ]
    assert closed.id not in [q["id"] for q in body["results"]]


def test_wrong_token_is_refused(queue):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    response = client.get("/api/queues/")
    assert response.status_code == 401
    assert response.json() == {"message": "Invalid token."}


def test_curator_sees_settings_and_progress(project, queue, curator):
    TaskFactory(queue=queue)
    response = client_for(curator).get(f"/api/queues/{queue.id}/")
    assert response.status_code == 200
    body = response.json()
    assert body["redundancy"] == 2
    assert body["lease_ttl"] == 600
    assert body["progress"]["total"] == 1
    assert body["progress"]["open"] == 1


def test_curator_creates_updates_pauses_and_resumes_a_queue(project, curator):
    client = client_for(curator)
    response = client.post(
        "/api/queues/",
        {
            "project": project.id,
            "kind": "pair_verify",
            "title": "Pairs",
            "redundancy": 3,
            "max_redundancy": 5,
            "lease_ttl": 120,
            "rule": "unanimous",
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    queue = TaskQueue.objects.get(pk=response.json()["id"])
    assert (queue.project, queue.kind, queue.redundancy, queue.max_redundancy) == (
        project,
        "pair_verify",
        3,
        5,
    )
    assert queue.lease_ttl == timedelta(seconds=120)
    assert queue.rule == "unanimous"

    response = client.patch(
        f"/api/queues/{queue.id}/", {"priority": 7, "gold_rate": 0.1}, format="json"
    )
    assert response.status_code == 200
    assert (response.json()["priority"], response.json()["gold_rate"]) == (7, 0.1)
    queue.refresh_from_db()
    assert (queue.priority, queue.gold_rate, queue.redundancy) == (7, 0.1, 3)

    response = client.post(f"/api/queues/{queue.id}/status/", {"status": "paused"}, format="json")
    assert response.status_code == 200
    assert response.json()["status"] == "paused"
    queue.refresh_from_db()
    assert queue.status == "paused"
    client.post(f"/api/queues/{queue.id}/status/", {"status": "open"}, format="json")
    queue.refresh_from_db()
    assert queue.status == "open"


# --------------------------------------------------------------------------------------------
# Tasks
# --------------------------------------------------------------------------------------------
def test_bulk_create_from_json_list(queue, curator):
    rows = [
        vqa_payload(1),
        {"payload": vqa_payload(2), "gold": {"answer": "No"}, "id": "ext-2"},
    ]
    response = client_for(curator).post(f"/api/queues/{queue.id}/tasks/", rows, format="json")
    assert response.status_code == 201
    assert response.json() == {"created": 2}
    tasks = list(Task.objects.filter(queue=queue).order_by("id"))
    assert [t.payload for t in tasks] == [vqa_payload(1), vqa_payload(2)]
    assert [(t.is_gold, t.gold, t.external_id) for t in tasks] == [
        (False, None, ""),
        (True, {"answer": "No"}, "ext-2"),
    ]
    assert [t.required for t in tasks] == [2, 2]


@pytest.mark.parametrize("content_type", ["application/x-ndjson", "text/plain"])
def test_bulk_create_from_jsonl(queue, curator, content_type):
    body = "\n".join(
        [
            json.dumps({"payload": vqa_payload(1), "id": "a"}),
            "",
            json.dumps(vqa_payload(2)),
        ]
    )
    response = client_for(curator).post(
        f"/api/queues/{queue.id}/tasks/", body, content_type=content_type
    )
    assert response.status_code == 201
    assert response.json() == {"created": 2}
    assert list(Task.objects.filter(queue=queue).values_list("external_id", flat=True)) == [
        "a",
        "",
    ]


def test_task_list_is_paginated_with_gold_and_outcome(queue, researcher):
    regular = TaskFactory(queue=queue)
    gold = TaskFactory(queue=queue, is_gold=True, gold={"answer": "Yes"})
    response = client_for(researcher).get(f"/api/queues/{queue.id}/tasks/")
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 2
    assert body["next"] is None
    got = [(t["id"], t["gold"], t["is_gold"], t["state"], t["outcome"]) for t in body["results"]]
    assert got == [
        (regular.id, None, False, "open", None),
        (gold.id, {"answer": "Yes"}, True, "open", None),
    ]


def test_task_list_pages_by_100(queue, curator):
    TaskFactory.create_batch(101, queue=queue)
    client = client_for(curator)
    first = client.get(f"/api/queues/{queue.id}/tasks/").json()
    assert (first["count"], len(first["results"])) == (101, 100)
    second = client.get(first["next"]).json()
    assert len(second["results"]) == 1


# --------------------------------------------------------------------------------------------
# Annotating
# --------------------------------------------------------------------------------------------
def test_next_submit_returns_the_next_task_and_is_idempotent(queue, crowdworker):
    first, second = TaskFactory(queue=queue), TaskFactory(queue=queue)
    client = client_for(crowdworker)
    # When the worker asks for a task
    claim = client.post(f"/api/queues/{queue.id}/next/").json()
    # Then they get the first one with its keys and lease
    assignment = Assignment.objects.get(task=first, annotator=crowdworker)
    assert claim == {
        "task": {
            "id": first.id,
            "queue": queue.id,
            "kind": "vqa_choice",
            "payload": first.payload,
            "keys": [
                {"key": "1", "label": "Yes"},
                {"key": "2", "label": "No"},
                {"key": "3", "label": "Unanswerable"},
            ],
            "expires_at": iso(assignment.expires_at),
        },
        "message": "",
        "retry_after": None,
    }
    # When they submit, twice (a double click)
    url = f"/api/tasks/{first.id}/submit/"
    answer = {"response": {"answer": "Yes"}, "duration_ms": 1234}
    r1 = client.post(url, answer, format="json")
    r2 = client.post(url, answer, format="json")
    # Then one annotation is stored and both answers carry the same next task
    assert (r1.status_code, r2.status_code) == (201, 200)
    b1, b2 = r1.json(), r2.json()
    annotation = Annotation.objects.get(task=first, annotator=crowdworker)
    assert (annotation.response, annotation.duration_ms) == ({"answer": "Yes"}, 1234)
    assert (b1["annotation_id"], b1["created"]) == (annotation.id, True)
    assert (b2["annotation_id"], b2["created"]) == (annotation.id, False)
    assert b1["next"]["task"]["id"] == second.id
    assert b2["next"] == b1["next"]
    assert Annotation.objects.count() == 1
    assert Assignment.objects.filter(annotator=crowdworker, state="leased").count() == 1


def test_next_without_tasks_says_why(queue, crowdworker, other_worker):
    queue.redundancy = queue.max_redundancy = 1
    queue.save()
    TaskFactory(queue=queue, required=1)
    client_for(other_worker).post(f"/api/queues/{queue.id}/next/")
    response = client_for(crowdworker).post(f"/api/queues/{queue.id}/next/")
    assert response.status_code == 200
    body = response.json()
    assert body["task"] is None
    assert body["message"].startswith("1 task(s) are being worked on by others")
    assert 0 < body["retry_after"] <= 600


def test_next_on_an_empty_queue(queue, crowdworker):
    response = client_for(crowdworker).post(f"/api/queues/{queue.id}/next/")
    assert response.json() == {
        "task": None,
        "message": "No more tasks for you in this queue. Thank you!",
        "retry_after": None,
    }


def test_forced_choice_claim_shows_the_candidates_by_side_only(project, crowdworker):
    queue = QueueFactory(project=project, kind="forced_choice")
    payload = {
        "instruction": "Describe the image",
        "candidates": [{"id": "m1", "text": "A cat"}, {"id": "m2", "text": "A dog"}],
    }
    task = TaskFactory(queue=queue, payload=payload)
    body = client_for(crowdworker).post(f"/api/queues/{queue.id}/next/").json()
    assignment = Assignment.objects.get(task=task)
    texts = ["A dog", "A cat"] if assignment.presentation["swapped"] else ["A cat", "A dog"]
    assert body["task"]["payload"] == {
        "instruction": "Describe the image",
        "candidates": [{"side": "left", "text": texts[0]}, {"side": "right", "text": texts[1]}],
    }
    assert "presentation" not in body["task"]
    assert [k["key"] for k in body["task"]["keys"]] == ["a", "b"]


def test_skip_report_and_heartbeat(queue, crowdworker):
    t1, t2, t3 = TaskFactory.create_batch(3, queue=queue)
    client = client_for(crowdworker, token=False)
    client.post(f"/api/queues/{queue.id}/next/")
    # Heartbeat extends the lease
    before = Assignment.objects.get(task=t1).expires_at
    response = client.post(f"/api/tasks/{t1.id}/heartbeat/")
    assert response.status_code == 200
    after = Assignment.objects.get(task=t1).expires_at
    assert after >= before
    assert response.json() == {"task_id": t1.id, "expires_at": iso(after)}
    # Skip releases it
    response = client.post(f"/api/tasks/{t1.id}/skip/")
    assert response.json() == {"task_id": t1.id, "state": "skipped"}
    assert Task.objects.get(pk=t1.pk).active_count == 0
    # Report records the reason and releases the next one
    assert client.post(f"/api/queues/{queue.id}/next/").json()["task"]["id"] == t2.id
    response = client.post(f"/api/tasks/{t2.id}/report/", {"reason": "broken_image"}, format="json")
    assert response.json() == {"task_id": t2.id, "state": "reported"}
    assignment = Assignment.objects.get(task=t2)
    assert (assignment.state, assignment.report_reason) == ("reported", "broken_image")
    # Neither comes back
    assert client.post(f"/api/queues/{queue.id}/next/").json()["task"]["id"] == t3.id


# --------------------------------------------------------------------------------------------
# Exports
# --------------------------------------------------------------------------------------------
@pytest.fixture
def decided(queue, crowdworker, other_worker):
    """One task decided "Yes" by two workers, one open task with an external id."""
    t1 = TaskFactory(queue=queue, payload=vqa_payload(1))
    t2 = TaskFactory(queue=queue, payload=vqa_payload(2), external_id="ext,2")
    for person, ms in ((crowdworker, 1500), (other_worker, 2500)):
        services.assignment_claim(queue=queue, annotator=person)
        services.annotation_submit(
            task_id=t1.id, annotator=person, response={"answer": "Yes"}, duration_ms=ms
        )
    t1.refresh_from_db()
    assert t1.state == "decided"
    return t1, t2


def test_outcomes_export_jsonl(queue, curator, decided):
    t1, t2 = decided
    response = client_for(curator).get(f"/api/queues/{queue.id}/outcomes/?format=jsonl")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-ndjson; charset=utf-8"
    assert response["Content-Disposition"] == (
        f'attachment; filename="queue-{queue.id}-outcomes.jsonl"'
    )
    lines = b"".join(response.streaming_content).decode().splitlines()
    p1, p2 = (json.dumps(vqa_payload(i), sort_keys=True) for i in (1, 2))
    assert lines == [
        f'{{"task_id": {t1.id}, "external_id": "", "state": "decided", "is_gold": false, '
        f'"outcome": {{"counts": {{"Yes": 2}}, "label": "Yes", "n": 2}}, "agreement": 1.0, '
        f'"escalations": 0, "required": 2, "done_count": 2, '
        f'"decided_at": "{iso(t1.decided_at)}", "payload": {p1}, "gold": null, '
        f'"settled_by": null, "settled_at": null, "settle_reason": ""}}',
        f'{{"task_id": {t2.id}, "external_id": "ext,2", "state": "open", "is_gold": false, '
        f'"outcome": null, "agreement": null, "escalations": 0, "required": 2, '
        f'"done_count": 0, "decided_at": null, "payload": {p2}, "gold": null, '
        f'"settled_by": null, "settled_at": null, "settle_reason": ""}}',
    ]


def test_outcomes_export_csv(queue, researcher, decided):
    t1, t2 = decided
    response = client_for(researcher).get(f"/api/queues/{queue.id}/outcomes/?as=csv")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    disposition = f'attachment; filename="queue-{queue.id}-outcomes.csv"'
    assert response["Content-Disposition"] == disposition
    text = b"".join(response.streaming_content).decode()

    def cell(value):
        text = json.dumps(value, separators=(",", ":"), sort_keys=True)
        return '"' + text.replace('"', '""') + '"'

    assert text == (
        "task_id,external_id,state,is_gold,outcome,agreement,escalations,required,done_count,"
        "decided_at,payload,gold,settled_by,settled_at,settle_reason\r\n"
        f'{t1.id},,decided,false,"{{""counts"":{{""Yes"":2}},""label"":""Yes"",""n"":2}}",1.0,'
        f"0,2,2,{iso(t1.decided_at)},{cell(vqa_payload(1))},,,,\r\n"
        f'{t2.id},"ext,2",open,false,,,0,2,0,,{cell(vqa_payload(2))},,,,\r\n'
    )


def test_annotations_export_jsonl_and_csv(queue, curator, crowdworker, other_worker, decided):
    t1, _t2 = decided
    a1, a2 = Annotation.objects.order_by("id")
    client = client_for(curator)
    response = client.get(f"/api/queues/{queue.id}/annotations/?format=jsonl")
    assert response["Content-Disposition"] == (
        f'attachment; filename="queue-{queue.id}-annotations.jsonl"'
    )
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert lines == [
        f'{{"annotation_id": {a1.id}, "task_id": {t1.id}, "external_id": "", '
        f'"annotator": "worker", "response": {{"answer": "Yes"}}, "duration_ms": 1500, '
        f'"created_at": "{iso(a1.created_at)}", "is_gold": false, "gold_correct": null}}',
        f'{{"annotation_id": {a2.id}, "task_id": {t1.id}, "external_id": "", '
        f'"annotator": "worker2", "response": {{"answer": "Yes"}}, "duration_ms": 2500, '
        f'"created_at": "{iso(a2.created_at)}", "is_gold": false, "gold_correct": null}}',
    ]
    response = client.get(f"/api/queues/{queue.id}/annotations/", {"format": "csv"})
    text = b"".join(response.streaming_content).decode()
    assert text == (
        "annotation_id,task_id,external_id,annotator,response,duration_ms,created_at,is_gold,"
        "gold_correct\r\n"
        f'{a1.id},{t1.id},,worker,"{{""answer"":""Yes""}}",1500,{iso(a1.created_at)},false,\r\n'
        f'{a2.id},{t1.id},,worker2,"{{""answer"":""Yes""}}",2500,{iso(a2.created_at)},false,\r\n'
    )


def test_exports_default_to_paginated_json(queue, curator, decided):
    t1, t2 = decided
    client = client_for(curator)
    body = client.get(f"/api/queues/{queue.id}/outcomes/").json()
    assert body["count"] == 2
    assert [(r["task_id"], r["state"]) for r in body["results"]] == [
        (t1.id, "decided"),
        (t2.id, "open"),
    ]
    body = client.get(f"/api/queues/{queue.id}/annotations/?as=json").json()
    assert [(r["annotator"], r["duration_ms"]) for r in body["results"]] == [
        ("worker", 1500),
        ("worker2", 2500),
    ]
    # The same rows whichever format: JSON rows equal the JSON Lines rows
    jsonl = client.get(f"/api/queues/{queue.id}/annotations/?as=jsonl")
    rows = [json.loads(line) for line in b"".join(jsonl.streaming_content).splitlines()]
    assert rows == body["results"]


def test_exports_accept_header(queue, curator, decided):
    response = client_for(curator).get(f"/api/queues/{queue.id}/outcomes/", HTTP_ACCEPT="text/csv")
    assert response["Content-Type"] == "text/csv; charset=utf-8"


# --------------------------------------------------------------------------------------------
# Jobs and schema
# --------------------------------------------------------------------------------------------
def test_jobs_list_and_detail(project, curator):
    job = Job.objects.create(kind="annotator.import_tasks", project=project, done=3, total=4)
    Job.objects.create(kind="annotator.import_tasks")  # not in reach
    client = client_for(curator)
    body = client.get("/api/jobs/").json()
    assert [j["id"] for j in body["results"]] == [job.id]
    detail = client.get(f"/api/jobs/{job.id}/").json()
    assert (detail["status"], detail["done"], detail["total"], detail["percent"]) == (
        "queued",
        3,
        4,
        75,
    )


def test_schema_and_docs(crowdworker):
    client = client_for(crowdworker, token=False)
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    assert "/api/queues/{queue_id}/next/" in paths
    assert "/api/tasks/{task_id}/submit/" in paths
    assert client.get("/api/docs/").status_code == 200


def test_browsable_api_renders_for_a_browser(queue, curator):
    TaskFactory(queue=queue)
    client = client_for(curator, token=False)
    for url in ("/api/queues/", f"/api/queues/{queue.id}/", f"/api/queues/{queue.id}/tasks/"):
        response = client.get(url, HTTP_ACCEPT="text/html")
        assert response.status_code == 200, url
        assert response["Content-Type"].startswith("text/html")


def test_list_queries_do_not_grow_with_rows(project, curator, django_assert_max_num_queries):
    queues = QueueFactory.create_batch(5, project=project)
    for q in queues:
        TaskFactory.create_batch(3, queue=q)
    client = client_for(curator)
    with django_assert_max_num_queries(10):
        assert client.get("/api/queues/").json()["count"] == 5
    with django_assert_max_num_queries(10):
        assert client.get(f"/api/queues/{queues[0].id}/tasks/").json()["count"] == 3


def test_upload_reports_unreadable_lines_and_schema_errors_in_one_answer(queue, curator):
    # line 1 fine, line 2 not JSON, line 3 JSON that does not fit vqa_choice
    body = "\n".join([json.dumps(vqa_payload(1)), "{not json", json.dumps({"question": 3})])
    response = client_for(curator).post(
        f"/api/queues/{queue.id}/tasks/", data=body, content_type="application/x-ndjson"
    )
    assert response.status_code == 400
    assert [e["line"] for e in response.json()["errors"]] == [2, 3]
    # the same as a JSON list: errors name the 0-based index
    items = [vqa_payload(1), "not an object", {"question": 3}]
    response = client_for(curator).post(f"/api/queues/{queue.id}/tasks/", items, format="json")
    assert response.status_code == 400
    assert [e["index"] for e in response.json()["errors"]] == [1, 2]
    assert Task.objects.filter(queue=queue).count() == 0
