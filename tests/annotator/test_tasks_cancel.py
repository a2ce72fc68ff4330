"""Cancelling tasks: a curator withdraws open tasks; they are never offered again.

The service (``services.tasks_cancel``), its JSON endpoint, the curator page action, and what
cancelled tasks look like afterwards: claims, submits on a withdrawn lease, progress, exports.
"""

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from annotator import selectors, services
from annotator.models import Annotation, Assignment, Enrollment, Task, TaskQueue
from annotator.platform import roles
from annotator.platform.errors import Invalid
from tests.annotator.helpers import committing_later
from tests.annotator.helpers import session_api as api
from tests.factories import ProjectFactory, QueueFactory, TaskFactory, UserFactory, vqa_payload

pytestmark = pytest.mark.django_db

WITHDRAWN = (
    "This task was withdrawn by the curator and can no longer be answered. "
    "Open the next task to continue."
)


def reload(task: Task) -> Task:
    task.refresh_from_db()
    return task


def snapshot() -> dict:
    """Everything a refused cancel could have changed."""
    return {
        "tasks": list(Task.objects.order_by("id").values()),
        "assignments": list(Assignment.objects.order_by("id").values()),
        "annotations": list(Annotation.objects.order_by("id").values_list("id", "response")),
    }


@pytest.fixture
def held(queue, crowdworker, other_worker):
    """Three tasks: ``held`` answered once and leased by the crowdworker, ``waiting``
    untouched, ``decided`` decided Yes by two people."""
    decided, held, waiting = (TaskFactory(queue=queue, payload=vqa_payload(i)) for i in range(3))
    for person in (crowdworker, other_worker):
        assert services.assignment_claim(queue=queue, annotator=person).task.pk == decided.pk
        services.annotation_submit(task_id=decided.pk, annotator=person, response={"answer": "Yes"})
    # both now hold `held` (their submits claimed it); the other worker answers it
    services.annotation_submit(task_id=held.pk, annotator=other_worker, response={"answer": "No"})
    services.leases_expire(queue=queue, now=timezone.now() + timedelta(days=1))
    assert services.assignment_claim(queue=queue, annotator=crowdworker).task.pk == held.pk
    assert reload(decided).state == "decided"
    held = reload(held)
    assert (held.active_count, held.done_count) == (2, 1)
    return {"held": held, "waiting": waiting, "decided": decided}


# --------------------------------------------------------------------------------------------
# The service
# --------------------------------------------------------------------------------------------
def test_cancel_withdraws_open_tasks_and_ends_their_leases(queue, held, crowdworker):
    now = timezone.now()
    # When the curator cancels the held and the waiting task, naming one twice
    result = services.tasks_cancel(
        queue=queue,
        task_ids=[held["held"].pk, held["waiting"].pk, held["held"].pk],
        reason="  ambiguous image  ",
        now=now,
    )
    # Then both are cancelled, with the reason and the time; the lease on one of them ended
    assert (result.cancelled, result.skipped, result.leases_ended) == (2, 0, 1)
    assert result.message == "2 tasks cancelled."
    for task in (reload(held["held"]), reload(held["waiting"])):
        assert task.state == Task.State.CANCELLED
        assert task.outcome == {"cancelled": True, "reason": "ambiguous image"}
        assert task.decided_at == now
    # the answer already given is kept, and only answers count as taking a slot
    held_task = reload(held["held"])
    assert (held_task.done_count, held_task.active_count) == (1, 1)
    assert Annotation.objects.filter(task=held_task).count() == 1
    lease = Assignment.objects.get(task=held_task, annotator=crowdworker)
    assert (lease.state, lease.finished_at) == (Assignment.State.EXPIRED, now)


def test_finished_tasks_are_skipped_and_counted(queue, held):
    decided = held["decided"]
    before = Task.objects.values().get(pk=decided.pk)
    # When a decided task is cancelled with an open one
    result = services.tasks_cancel(queue=queue, task_ids=[decided.pk, held["waiting"].pk])
    # Then the decided task keeps its decision; the count says so
    assert (result.cancelled, result.skipped) == (1, 1)
    assert result.message == "1 task cancelled. 1 had already finished and was left as it was."
    assert Task.objects.values().get(pk=decided.pk) == before
    # and cancelling again is harmless
    again = services.tasks_cancel(queue=queue, task_ids=[held["waiting"].pk])
    assert (again.cancelled, again.skipped, again.leases_ended) == (0, 1, 0)


@pytest.mark.parametrize(
    "ids, message",
    [
        ([], "Name at least one task."),
        ("12", "Send the task ids as a list of integers."),
        ({"a": 1}, "Send the task ids as a list of integers."),
        (12, "Send the task ids as a list of integers."),
        (["1"], "Task ids must be integers."),
        ([1.0], "Task ids must be integers."),
        ([True], "Task ids must be integers."),
        ([None], "Task ids must be integers."),
    ],
)
def test_ids_that_are_not_a_list_of_integers_are_refused(queue, held, ids, message):
    before = snapshot()
    with pytest.raises(Invalid) as err:
        services.tasks_cancel(queue=queue, task_ids=ids)
    assert err.value.message == message
    assert snapshot() == before


def test_an_id_of_another_queue_refuses_the_whole_call(project, queue, held):
    # Given a task of another queue in the same project
    other = TaskFactory(queue=QueueFactory(project=project))
    before = snapshot()
    # When it is named with an open task of this queue, and ids no task has
    with pytest.raises(Invalid) as err:
        services.tasks_cancel(
            queue=queue, task_ids=[held["waiting"].pk, other.pk, 10**9, 2**70, -3]
        )
    # Then nothing is cancelled and the error names every foreign id
    assert err.value.status == 400
    assert err.value.message == (
        f"4 id(s) are not tasks of this queue: {other.pk}, {10**9}, {2**70}, -3. "
        "Nothing was cancelled."
    )
    assert [e["id"] for e in err.value.errors] == [other.pk, 10**9, 2**70, -3]
    assert snapshot() == before


# --------------------------------------------------------------------------------------------
# Annotators: a withdrawn lease, and claims
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["submit", "skip", "report", "heartbeat"])
def test_acting_on_a_withdrawn_task_answers_409(queue, held, crowdworker, path):
    task = held["held"]
    services.tasks_cancel(queue=queue, task_ids=[task.pk])
    before = snapshot()
    body = {"response": {"answer": "Yes"}, "reason": "broken_image"}
    # When the annotator who held it sends their answer (or skips, reports, extends)
    response = api(crowdworker).post(f"/api/tasks/{task.pk}/{path}/", body, format="json")
    # Then they are told the curator withdrew it, and nothing is stored
    assert response.status_code == 409
    assert response.json() == {"message": WITHDRAWN}
    assert snapshot() == before


def test_the_workspace_says_the_task_was_withdrawn(client, queue, held, crowdworker):
    task = held["held"]
    services.tasks_cancel(queue=queue, task_ids=[task.pk])
    client.force_login(crowdworker)
    response = client.post(
        reverse("work-submit", args=[task.pk]), {"answer": "Yes"}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 409
    assert "withdrawn by the curator" in response.content.decode()
    assert Annotation.objects.filter(task=task, annotator=crowdworker).count() == 0


def test_a_submit_made_before_the_cancel_repeats_idempotently(queue, held, other_worker):
    # The other worker answered `held` before it was cancelled; their retried submit is the
    # same idempotent answer, not an error
    task = held["held"]
    services.tasks_cancel(queue=queue, task_ids=[task.pk])
    again = services.annotation_submit(
        task_id=task.pk, annotator=other_worker, response={"answer": "No"}
    )
    assert again.created is False


def test_claims_never_offer_cancelled_tasks(queue, held, crowdworker):
    # Given the held and the waiting task cancelled
    services.tasks_cancel(queue=queue, task_ids=[held["held"].pk, held["waiting"].pk])
    # Then the annotator who held one is not handed it back, and newcomers get nothing
    people = [crowdworker, *(UserFactory(role=roles.CROWDWORKER) for _ in range(3))]
    for person in people:
        got = services.assignment_claim(queue=queue, annotator=person)
        assert got.assignment is None
        assert got.message == "No more tasks for you in this queue. Thank you!"


def test_claims_skip_cancelled_tasks_for_the_next_open_one(queue, crowdworker):
    first, second = TaskFactory(queue=queue), TaskFactory(queue=queue)
    services.tasks_cancel(queue=queue, task_ids=[first.pk])
    assert services.assignment_claim(queue=queue, annotator=crowdworker).task.pk == second.pk


def test_a_cancelled_gold_item_is_never_served(project, crowdworker):
    # Given a queue that serves gold first, qualifying people on one gold item
    queue = QueueFactory(project=project, gold_rate=1.0, qualification_count=1)
    bad = TaskFactory(queue=queue, is_gold=True, gold={"answer": "Yes"})
    good = TaskFactory(queue=queue, is_gold=True, gold={"answer": "No"})
    regular = TaskFactory(queue=queue)
    services.tasks_cancel(queue=queue, task_ids=[bad.pk])
    # When the person works through the queue
    served = []
    got = services.assignment_claim(queue=queue, annotator=crowdworker)
    while got.assignment is not None:
        served.append(got.assignment.task_id)
        answer = {"answer": "No"}
        got = services.annotation_submit(
            task_id=got.assignment.task_id, annotator=crowdworker, response=answer
        ).next
    # Then they qualified on the good gold item and got the regular task; never the cancelled one
    assert served == [good.pk, regular.pk]
    enrollment = Enrollment.objects.get(queue=queue, annotator=crowdworker)
    assert (enrollment.state, enrollment.gold_answered) == (Enrollment.State.ACTIVE, 1)


# --------------------------------------------------------------------------------------------
# The JSON endpoint
# --------------------------------------------------------------------------------------------
def test_api_cancel(queue, held, curator):
    response = api(curator).post(
        f"/api/queues/{queue.pk}/tasks/cancel/",
        {"ids": [held["held"].pk, held["decided"].pk], "reason": "duplicate"},
        format="json",
    )
    assert response.status_code == 200
    assert response.json() == {
        "cancelled": 1,
        "skipped": 1,
        "leases_ended": 1,
        "message": "1 task cancelled. 1 had already finished and was left as it was.",
    }
    assert reload(held["held"]).outcome == {"cancelled": True, "reason": "duplicate"}


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"reason": "x"},
        {"ids": "1"},
        {"ids": {"1": 1}},
        {"ids": 1},
        {"ids": None},
        {"ids": []},
        {"ids": ["1"]},
        {"ids": [1.5]},
        {"ids": [True]},
        {"ids": [None]},
        {"ids": [[1]]},
        {"ids": [0]},
        {"ids": [2**63]},
        {"ids": [1], "reason": "x" * 2001},
        {"ids": [1], "reason": "nul\x00"},
        {"ids": [1], "reason": ["a"]},
        {"ids": list(range(1, 10_002))},
        [1, 2],
        "ids",
    ],
    ids=lambda b: json.dumps(b)[:40],
)
def test_api_bad_input_is_400_and_writes_nothing(queue, held, curator, body):
    before = snapshot()
    response = api(curator).post(f"/api/queues/{queue.pk}/tasks/cancel/", body, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["message"].startswith("Invalid input: ")
    assert snapshot() == before


def test_api_foreign_ids_are_400_and_write_nothing(project, queue, held, curator):
    other = TaskFactory(queue=QueueFactory(project=project))
    before = snapshot()
    response = api(curator).post(
        f"/api/queues/{queue.pk}/tasks/cancel/",
        {"ids": [held["waiting"].pk, other.pk]},
        format="json",
    )
    assert response.status_code == 400
    assert response.json() == {
        "message": f"1 id(s) are not tasks of this queue: {other.pk}. Nothing was cancelled.",
        "errors": [{"id": other.pk, "error": "not a task of this queue"}],
    }
    assert snapshot() == before


def test_api_malformed_json_is_400(queue, held, curator):
    before = snapshot()
    response = api(curator).post(
        f"/api/queues/{queue.pk}/tasks/cancel/", "{not json", content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["message"].startswith("Malformed request body")
    assert snapshot() == before


# --------------------------------------------------------------------------------------------
# Progress and exports
# --------------------------------------------------------------------------------------------
def test_progress_counts_cancelled_tasks_apart(queue, held):
    services.tasks_cancel(queue=queue, task_ids=[held["waiting"].pk])
    progress = selectors.queue_progress([queue.pk])[queue.pk]
    # Then the cancelled task is counted apart, not among the queue's tasks
    assert {k: progress[k] for k in ("total", "open", "decided", "done", "cancelled")} == {
        "total": 2,
        "open": 1,
        "decided": 1,
        "done": 1,
        "cancelled": 1,
    }
    assert progress["percent"] == 50


def test_outcomes_export_marks_cancelled_tasks(queue, held, curator):
    services.tasks_cancel(queue=queue, task_ids=[held["waiting"].pk], reason="off-topic")
    response = api(curator).get(f"/api/queues/{queue.pk}/outcomes/?format=jsonl")
    rows = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    by_id = {row["task_id"]: row for row in rows}
    assert len(rows) == 3
    assert (by_id[held["waiting"].pk]["state"], by_id[held["waiting"].pk]["outcome"]) == (
        "cancelled",
        {"cancelled": True, "reason": "off-topic"},
    )
    assert by_id[held["decided"].pk]["state"] == "decided"


# --------------------------------------------------------------------------------------------
# The curator pages
# --------------------------------------------------------------------------------------------
def test_disagreement_page_cancels_a_task_and_comes_back(
    client, project, curator, crowdworker, other_worker
):
    # Given a split task on the disagreements page
    queue = QueueFactory(project=project, redundancy=2, max_redundancy=3, rule="unanimous")
    task = TaskFactory(queue=queue)
    for person, answer in ((crowdworker, "Yes"), (other_worker, "No")):
        services.assignment_claim(queue=queue, annotator=person)
        services.annotation_submit(task_id=task.pk, annotator=person, response={"answer": answer})
    client.force_login(curator)
    page_url = reverse("curator-queue-disagreements", args=[queue.pk])
    page = client.get(page_url).content.decode()
    cancel_url = reverse("curator-queue-tasks-cancel", args=[queue.pk])
    assert f'action="{cancel_url}"' in page
    assert f'name="ids" value="{task.pk}"' in page
    # When the curator confirms "Cancel task"
    response = client.post(
        cancel_url, {"ids": str(task.pk), "reason": "two readings", "next": page_url}
    )
    # Then they are back on the page, told so, and the task is gone from the list
    assert response.status_code == 302
    assert response.url == page_url
    page = client.get(page_url)
    assert "1 task cancelled." in page.content.decode()
    assert list(page.context["page"].object_list) == []
    assert reload(task).outcome == {"cancelled": True, "reason": "two readings"}


def test_researchers_see_no_cancel_button(client, queue, held, researcher):
    client.force_login(researcher)
    for url in (
        reverse("curator-task", args=[held["held"].pk]),
        reverse("curator-queue", args=[queue.pk]),
    ):
        page = client.get(url).content.decode()
        assert "tasks/cancel/" not in page


def test_queue_page_cancels_tasks_by_id_and_shows_the_count(client, queue, held, curator):
    client.force_login(curator)
    queue_url = reverse("curator-queue", args=[queue.pk])
    assert 'name="ids"' in client.get(queue_url).content.decode()
    cancel_url = reverse("curator-queue-tasks-cancel", args=[queue.pk])
    ids = f"{held['held'].pk}, {held['waiting'].pk}"
    response = client.post(cancel_url, {"ids": ids, "next": "https://evil.example/"})
    # An outside address is not followed: back to the queue page
    assert (response.status_code, response.url) == (302, queue_url)
    page = client.get(queue_url)
    assert page.context["progress"]["cancelled"] == 2
    assert "2 tasks cancelled." in page.content.decode()


@pytest.mark.parametrize("ids", ["", "abc", "1.5", "3 x", "-4"])
def test_queue_page_bad_ids_write_nothing(client, queue, held, curator, ids):
    client.force_login(curator)
    before = snapshot()
    response = client.post(reverse("curator-queue-tasks-cancel", args=[queue.pk]), {"ids": ids})
    assert response.status_code == 302
    messages = [str(m) for m in response.wsgi_request._messages]
    assert messages and messages[0] in (
        "Task ids are whole numbers, separated by commas or spaces.",
        "Name at least one task.",
    )
    assert snapshot() == before


def test_the_cancel_page_is_post_only_and_closed_queues_still_cancel(client, queue, curator):
    task = TaskFactory(queue=queue)
    client.force_login(curator)
    url = reverse("curator-queue-tasks-cancel", args=[queue.pk])
    assert client.get(url).status_code == 405
    TaskQueue.objects.filter(pk=queue.pk).update(status=TaskQueue.Status.CLOSED)
    client.post(url, {"ids": str(task.pk)})
    assert reload(task).state == Task.State.CANCELLED


# --------------------------------------------------------------------------------------------
# Racing a submit (PostgreSQL: real row locks)
# --------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_cancel_waits_for_a_submit_in_flight_and_keeps_its_decision():
    if connection.vendor != "postgresql":
        pytest.skip("row locks are PostgreSQL's; SQLite serialises writers")
    # Given N = 1 and a person whose submit (deciding `first` and claiming `second`) holds the
    # row locks and has not committed yet
    queue = QueueFactory(project=ProjectFactory(), redundancy=1, max_redundancy=1)
    first, second = TaskFactory(queue=queue), TaskFactory(queue=queue)
    person = UserFactory(role=roles.CROWDWORKER)
    queue.project.members.add(person)
    assert services.assignment_claim(queue=queue, annotator=person).task.pk == first.pk

    def submit() -> None:
        services.annotation_submit(task_id=first.pk, annotator=person, response={"answer": "Yes"})

    # When a curator cancels both tasks meanwhile (the submit commits half a second later)
    with committing_later(submit) as problems:
        result = services.tasks_cancel(queue=queue, task_ids=[first.pk, second.pk])
    # Then the cancel waited: the decided task keeps its decision, the one just claimed is
    # cancelled with its new lease ended, and the counters are exact
    assert problems == []
    assert (result.cancelled, result.skipped, result.leases_ended) == (1, 1, 1)
    assert reload(first).state == Task.State.DECIDED
    second = reload(second)
    assert (second.state, second.active_count, second.done_count) == ("cancelled", 0, 0)
    lease = Assignment.objects.get(task=second, annotator=person)
    assert lease.state == Assignment.State.EXPIRED
