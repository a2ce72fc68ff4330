"""Bad input to the API: a clear 4xx with a message, nothing written, never a 500.

APIClient re-raises unhandled exceptions, so a 500 would fail these tests loudly.
"""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from annotator import services
from annotator.models import Annotation, Assignment, Enrollment, Task, TaskQueue
from tests.annotator.helpers import session_api as as_user
from tests.factories import TaskFactory, pair_payload, vqa_payload


def counts() -> dict:
    return {
        "queues": list(TaskQueue.objects.order_by("id").values()),
        "tasks": Task.objects.count(),
        "task_rows": list(Task.objects.order_by("id").values()),
        "assignments": list(Assignment.objects.order_by("id").values()),
        "annotations": Annotation.objects.count(),
        "enrollments": Enrollment.objects.count(),
    }


@pytest.fixture
def refused():
    """Asserts a 4xx with a message and that nothing was written."""

    class Check:
        def __init__(self):
            self.before = None

        def __enter__(self):
            self.before = counts()
            return self

        def __exit__(self, *exc):
            return False

        def __call__(self, response, status=400):
            assert response.status_code == status, response.content
            body = response.json()
            assert isinstance(body["message"], str) and body["message"]
            assert counts() == self.before
            return body

    return Check()


@pytest.fixture
def held(queue, crowdworker):
    """A task the crowdworker holds a live lease on."""
    task = TaskFactory(queue=queue)
    services.assignment_claim(queue=queue, annotator=crowdworker)
    return task


# --------------------------------------------------------------------------------------------
# Malformed JSON
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "body",
    [
        '{"response": {"answer": "Yes"',
        "{'response': 1}",
        "",
        "NaN",
        '{"response": NaN}',
        "[" * 5000,
    ],
    ids=["truncated", "single-quotes", "empty", "nan", "nan-inside", "deep"],
)
def test_malformed_json_on_submit(held, crowdworker, refused, body):
    with refused:
        response = as_user(crowdworker).post(
            f"/api/tasks/{held.id}/submit/", body, content_type="application/json"
        )
        body = refused(response)
    assert Assignment.objects.get(task=held).state == "leased"


def test_malformed_json_message_is_clear(held, crowdworker, refused):
    with refused:
        response = as_user(crowdworker).post(
            f"/api/tasks/{held.id}/submit/", "{bad", content_type="application/json"
        )
        body = refused(response)
    assert body["message"].startswith("Malformed request body: JSON parse error")


def test_malformed_json_on_bulk_create(queue, curator, refused):
    with refused:
        refused(
            as_user(curator).post(
                f"/api/queues/{queue.id}/tasks/", "[{", content_type="application/json"
            )
        )


def test_bulk_create_wants_a_list(queue, curator, refused):
    with refused:
        body = refused(
            as_user(curator).post(f"/api/queues/{queue.id}/tasks/", {"a": 1}, format="json")
        )
    assert "JSON list" in body["message"]


def test_unsupported_content_type(queue, curator, refused):
    with refused:
        body = refused(
            as_user(curator).post(
                f"/api/queues/{queue.id}/tasks/", "<tasks/>", content_type="application/xml"
            ),
            status=415,
        )
    assert "application/xml" in body["message"]


# --------------------------------------------------------------------------------------------
# Malformed JSONL, with line numbers
# --------------------------------------------------------------------------------------------
def test_malformed_jsonl_names_lines(queue, curator, refused):
    body = "\n".join(
        [
            json.dumps(vqa_payload(1)),
            '{"image": ',
            "",
            "[1, 2]",
            json.dumps({"payload": vqa_payload(2), "extra": 1}),
            '{"question": NaN}',
            '{"n": 1e400}',
        ]
    )
    with refused:
        out = refused(
            as_user(curator).post(
                f"/api/queues/{queue.id}/tasks/", body, content_type="application/x-ndjson"
            )
        )
    # read errors and the schema errors of the readable lines come in one answer, by line
    assert out["message"] == "5 line(s) have problems; nothing was imported."
    assert [e["line"] for e in out["errors"]] == [2, 4, 5, 6, 7]
    assert out["errors"][0]["error"].startswith("not valid JSON: Expecting value")
    assert out["errors"][1] == {"line": 4, "error": "each line must be a JSON object"}
    assert out["errors"][2] == {"line": 5, "error": "unexpected keys: extra"}


def test_jsonl_schema_violations_are_all_or_nothing(queue, curator, refused):
    bad = {**vqa_payload(3), "choices": ["only one"]}
    body = "\n".join(
        [
            json.dumps(vqa_payload(1)),
            json.dumps({"question": "no image", "choices": ["a", "b"]}),
            json.dumps(bad),
            json.dumps({"payload": vqa_payload(4), "gold": {"answer": "Maybe"}}),
        ]
    )
    with refused:
        out = refused(
            as_user(curator).post(
                f"/api/queues/{queue.id}/tasks/", body, content_type="application/x-ndjson"
            )
        )
    assert out["message"] == (
        "3 of 4 task(s) do not fit the vqa_choice kind; nothing was imported."
    )
    assert out["errors"] == [
        {"line": 2, "error": "payload: 'image' is a required property"},
        {"line": 3, "error": "payload.choices: ['only one'] is too short"},
        {"line": 4, "error": "gold.answer: 'Maybe' is not one of ['Yes', 'No', 'Unanswerable']"},
    ]


def test_wrong_kind_payload_in_a_json_list_names_the_index(queue, curator, refused):
    with refused:
        out = refused(
            as_user(curator).post(
                f"/api/queues/{queue.id}/tasks/",
                [vqa_payload(1), pair_payload(2)],
                format="json",
            )
        )
    assert [e["index"] for e in out["errors"]] == [1]  # a JSON list names the 0-based index
    assert out["errors"][0]["error"].startswith("payload: 'image' is a required property")


def test_json_list_read_errors_name_the_index(queue, curator, refused):
    with refused:
        out = refused(
            as_user(curator).post(
                f"/api/queues/{queue.id}/tasks/", [vqa_payload(1), "text", 3], format="json"
            )
        )
    assert out["errors"] == [
        {"index": 1, "error": "each line must be a JSON object"},
        {"index": 2, "error": "each line must be a JSON object"},
    ]


@pytest.mark.parametrize(
    "body, content_type",
    [
        ("", "application/x-ndjson"),
        ("\n\n", "text/plain"),
        ([], "application/json"),
        (b"\xff\xfe{", "application/x-ndjson"),
    ],
    ids=["empty", "blank-lines", "empty-list", "not-utf8"],
)
def test_empty_or_unreadable_uploads(queue, curator, refused, body, content_type):
    client = as_user(curator)
    url = f"/api/queues/{queue.id}/tasks/"
    with refused:
        if content_type == "application/json":
            response = client.post(url, body, format="json")
        else:
            response = client.post(url, body, content_type=content_type)
        refused(response)


def test_nul_characters_cannot_be_stored(queue, curator, refused):
    payload = {**vqa_payload(1), "question": "Is it\u0000red?"}
    with refused:
        out = refused(
            as_user(curator).post(f"/api/queues/{queue.id}/tasks/", [payload], format="json")
        )
    # The API's JSON parser refuses it before the view, naming the JSON path (platform/edge.py).
    assert out["errors"] == [{"field": "0.question", "error": "contains a NUL character"}]


# --------------------------------------------------------------------------------------------
# Submitting: schema violations, wrong kind, foreign ids, expired leases
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "body, message",
    [
        ({"response": {"decision": "keep"}}, "response: 'answer' is a required property"),
        ({"response": {"answer": "Maybe"}}, "response.answer: 'Maybe' is not one of"),
        ({"response": {}}, "response: 'answer' is a required property"),
        ({"response": "Yes"}, "Invalid input: response: Expected a JSON object."),
        ({}, "Invalid input: response: This field is required."),
        (
            {"response": {"answer": "Yes"}, "duration_ms": "soon"},
            "Invalid input: duration_ms: A valid integer is required.",
        ),
        (
            {"response": {"answer": "Yes"}, "duration_ms": -5},
            "Invalid input: duration_ms: Ensure this value is greater than or equal to 0.",
        ),
        ([1, 2], "Invalid input: Invalid data. Expected a dictionary, but got list."),
    ],
    ids=[
        "wrong-kind",
        "not-a-choice",
        "missing-answer",
        "not-object",
        "no-response",
        "duration-text",
        "duration-negative",
        "list-body",
    ],
)
def test_bad_responses(held, crowdworker, refused, body, message):
    with refused:
        out = refused(
            as_user(crowdworker).post(f"/api/tasks/{held.id}/submit/", body, format="json")
        )
    assert out["message"].startswith(message), out["message"]
    assert Assignment.objects.get(task=held).state == "leased"


def test_validation_errors_list_fields(held, crowdworker):
    out = (
        as_user(crowdworker)
        .post(f"/api/tasks/{held.id}/submit/", {"duration_ms": "x"}, format="json")
        .json()
    )
    assert out["errors"] == [
        {"field": "response", "error": "This field is required."},
        {"field": "duration_ms", "error": "A valid integer is required."},
    ]


def test_write_text_with_nul_character(project, crowdworker, refused):
    from tests.factories import QueueFactory

    queue = QueueFactory(project=project, kind="write_text")
    task = TaskFactory(queue=queue, payload={"prompt": "Write"})
    services.assignment_claim(queue=queue, annotator=crowdworker)
    with refused:
        refused(
            as_user(crowdworker).post(
                f"/api/tasks/{task.id}/submit/", {"response": {"text": "a\u0000b"}}, format="json"
            )
        )


@pytest.mark.parametrize("path", ["submit", "skip", "report", "heartbeat"])
def test_foreign_and_unknown_task_ids(queue, crowdworker, other_worker, refused, path):
    theirs = TaskFactory(queue=queue)
    services.assignment_claim(queue=queue, annotator=other_worker)
    client = as_user(crowdworker)
    body = {"response": {"answer": "Yes"}, "reason": "broken"}
    with refused:
        for task_id in (theirs.id, 10**9, 10**30):
            out = refused(
                client.post(f"/api/tasks/{task_id}/{path}/", body, format="json"), status=404
            )
            assert out == {"message": "No such task."}


def test_expired_lease_submit_is_409(queue, crowdworker, held, refused):
    Assignment.objects.filter(task=held).update(expires_at=timezone.now() - timedelta(seconds=1))
    client = as_user(crowdworker)
    with refused:
        out = refused(
            client.post(
                f"/api/tasks/{held.id}/submit/", {"response": {"answer": "Yes"}}, format="json"
            ),
            status=409,
        )
        assert out["message"].startswith("Your lease on this task expired at")
        for path in ("skip", "heartbeat"):
            refused(client.post(f"/api/tasks/{held.id}/{path}/"), status=409)
        refused(
            client.post(f"/api/tasks/{held.id}/report/", {"reason": "unclear"}, format="json"),
            status=409,
        )


def test_submit_after_skip_is_409(queue, crowdworker, held):
    client = as_user(crowdworker)
    client.post(f"/api/tasks/{held.id}/skip/")
    response = client.post(
        f"/api/tasks/{held.id}/submit/", {"response": {"answer": "Yes"}}, format="json"
    )
    assert response.status_code == 409
    assert response.json() == {"message": "You skipped this task; it can no longer be answered."}
    assert not Annotation.objects.exists()


@pytest.mark.parametrize("reason", ["", "   ", None, "a" * 2001, "x\u0000y", "nonsense-code"])
def test_report_needs_a_reason(held, crowdworker, refused, reason):
    with refused:
        refused(
            as_user(crowdworker).post(
                f"/api/tasks/{held.id}/report/", {"reason": reason}, format="json"
            )
        )


# --------------------------------------------------------------------------------------------
# Unknown queues, bad queue settings, bad formats
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "method, path, role",
    [
        ("get", "", "crowdworker"),
        ("patch", "", "curator"),
        ("post", "status/", "curator"),
        ("get", "tasks/", "curator"),
        ("post", "tasks/", "curator"),
        ("post", "next/", "crowdworker"),
        ("get", "outcomes/?format=csv", "curator"),
        ("get", "annotations/?as=jsonl", "researcher"),
    ],
)
def test_unknown_queue(project, crowdworker, curator, researcher, refused, method, path, role):
    user = {"crowdworker": crowdworker, "curator": curator, "researcher": researcher}[role]
    with refused:
        out = refused(
            getattr(as_user(user), method)(f"/api/queues/999999/{path}", {}, format="json"),
            status=404,
        )
    assert out == {"message": "Not found."}
    assert out  # and it is JSON even when a CSV was asked for


@pytest.mark.parametrize(
    "body, field",
    [
        ({"kind": "no_such_kind"}, "kind"),
        ({"redundancy": 0}, "redundancy"),
        ({"redundancy": 40000}, "redundancy"),
        ({"lease_ttl": 0}, "lease_ttl"),
        ({"gold_rate": 1.5}, "gold_rate"),
        ({"rule": "bogus"}, "rule"),
        ({"title": ""}, "title"),
        ({"title": "a\u0000b"}, "title"),
        ({"config": [1]}, "config"),
        ({"project": 999999}, "project"),
        ({"project": "x"}, "project"),
    ],
)
def test_queue_create_rejects(project, curator, refused, body, field):
    data = {"project": project.id, "kind": "vqa_choice", "title": "T", **body}
    with refused:
        out = refused(as_user(curator).post("/api/queues/", data, format="json"))
    assert field in [e["field"] for e in out["errors"]]


@pytest.mark.parametrize(
    "body, message",
    [
        ({"kind": "skill_tags"}, "config: 'taxonomy' is a required property"),
        ({"redundancy": 3, "max_redundancy": 2}, "The escalation maximum must be at least"),
        ({"outcome_handler": "nope"}, "Unknown outcome handler nope."),
    ],
)
def test_queue_create_domain_rules(project, curator, refused, body, message):
    data = {"project": project.id, "kind": "vqa_choice", "title": "T", **body}
    with refused:
        out = refused(as_user(curator).post("/api/queues/", data, format="json"))
    assert out["message"].startswith(message)


@pytest.mark.parametrize(
    "body",
    [{"max_redundancy": 1}, {"rule": "bogus"}, {"lease_ttl": -1}, {"status": "gone"}, [1]],
)
def test_queue_update_rejects(queue, curator, refused, body):
    with refused:
        refused(as_user(curator).patch(f"/api/queues/{queue.id}/", body, format="json"))


@pytest.mark.parametrize("body", [{"status": "archived"}, {}, {"status": None}])
def test_queue_status_rejects(queue, curator, refused, body):
    with refused:
        refused(as_user(curator).post(f"/api/queues/{queue.id}/status/", body, format="json"))


def test_unknown_export_format(queue, curator):
    client = as_user(curator)
    response = client.get(f"/api/queues/{queue.id}/outcomes/?format=xml")
    assert response.status_code == 406
    assert response.json() == {
        "message": "Unknown format 'xml'; this endpoint offers: json, jsonl, csv."
    }
    response = client.get(f"/api/queues/{queue.id}/annotations/?as=xml")
    assert response.status_code == 400
    assert response.json()["message"] == (
        "Invalid input: as: Unknown format 'xml'; use json, jsonl or csv."
    )
    response = client.get("/api/queues/?format=csv")
    assert response.status_code == 406
    assert response.json()["message"].startswith("Unknown format 'csv'")


def test_method_not_allowed_is_json(queue, curator):
    response = as_user(curator).delete(f"/api/queues/{queue.id}/")
    assert response.status_code == 405
    assert response.json() == {"message": 'Method "DELETE" not allowed.'}
