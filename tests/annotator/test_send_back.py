"""Send back: a curator rejects one person's answer with a note; the task asks for another."""

import pytest
from rest_framework.test import APIClient

from annotator import selectors, services
from annotator.models import Annotation, Assignment, SentBackAnnotation, Task, TaskQueue
from annotator.platform import roles
from annotator.platform.errors import Conflict, Invalid, NotFound
from annotator.platform.models import Webhook
from tests.factories import QueueFactory, TaskFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def third(project):
    person = UserFactory(username="worker3", role=roles.CROWDWORKER)
    project.members.add(person)
    return person


def answer(queue, person, value):
    claim = services.assignment_claim(queue=queue, annotator=person)
    services.annotation_submit(task_id=claim.task.pk, annotator=person, response={"answer": value})
    return claim.task


def test_an_open_tasks_answer_goes_back_and_another_person_answers(
    project, crowdworker, other_worker, third, curator
):
    # Given a task with two slots and one answer
    queue = QueueFactory(project=project, redundancy=2, max_redundancy=2)
    task = TaskFactory(queue=queue)
    assert answer(queue, crowdworker, "Yes") == task

    # When the curator sends it back with a note
    record = services.annotation_send_back(
        queue=queue, task_id=task.pk, annotator="worker", by=curator, note="Look at the sign"
    )

    # Then the answer is kept aside, marked, and no longer an answer of the task
    assert (record.annotator, record.response, record.note) == (
        crowdworker,
        {"answer": "Yes"},
        "Look at the sign",
    )
    assert (record.sent_back_by, record.withdrawn_outcome) == (curator, None)
    assert not Annotation.objects.filter(task=task).exists()
    assignment = Assignment.objects.get(task=task, annotator=crowdworker)
    assert assignment.state == Assignment.State.SENT_BACK
    task.refresh_from_db()
    assert (task.state, task.active_count, task.done_count, task.required) == ("open", 0, 0, 2)
    # the person who was sent back is not served it again; two others answer it
    assert services.assignment_claim(queue=queue, annotator=crowdworker).task is None
    answer(queue, other_worker, "No")
    answer(queue, third, "No")
    task.refresh_from_db()
    assert (task.state, task.outcome["label"], task.agreement) == ("decided", "No", 1.0)


def test_a_decided_task_without_handler_reopens_with_its_outcome_withdrawn(
    project, crowdworker, other_worker, third, curator, django_capture_on_commit_callbacks
):
    queue = QueueFactory(project=project, redundancy=2, max_redundancy=2)
    hook = Webhook.objects.create(
        project=project, url="https://h.example.org/", events=["task.sent_back"], secret="s"
    )
    task = TaskFactory(queue=queue)
    answer(queue, crowdworker, "Yes")
    answer(queue, other_worker, "No")
    task.refresh_from_db()
    assert task.state == "undecided"  # a tie at the last escalation
    closed_outcome = task.outcome

    with django_capture_on_commit_callbacks() as callbacks:
        record = services.annotation_send_back(
            queue=queue, task_id=task.pk, annotator="worker2", by=curator, note="Wrong object"
        )

    task.refresh_from_db()
    assert (task.state, task.outcome, task.decided_at) == ("open", None, None)
    assert (task.active_count, task.done_count, task.agreement) == (1, 1, 1.0)
    assert record.withdrawn_outcome == closed_outcome
    assert len(callbacks) == 1  # task.sent_back, told after commit
    callbacks[0]()
    delivery = hook.deliveries.get()
    assert delivery.event == "task.sent_back"
    data = delivery.payload["data"]
    assert (data["task"], data["annotator"], data["note"], data["reopened"]) == (
        task.pk,
        "worker2",
        "Wrong object",
        True,
    )
    # the new answer decides it again, by the answers that stand
    answer(queue, third, "Yes")
    task.refresh_from_db()
    assert (task.state, task.outcome["label"], task.agreement) == ("decided", "Yes", 1.0)


@pytest.mark.parametrize(
    "case",
    ["gold", "cancelled", "settled", "handler", "no_answer", "no_note", "other_queue"],
)
def test_refusals_change_nothing(case, project, crowdworker, other_worker, curator):
    queue = QueueFactory(project=project, redundancy=1, max_redundancy=1)
    task = TaskFactory(queue=queue)
    answer(queue, crowdworker, "Yes")
    task.refresh_from_db()
    kwargs = {"queue": queue, "task_id": task.pk, "annotator": "worker", "by": curator}
    note = "not right"
    expected: type[Exception] = Conflict
    if case == "gold":
        Task.objects.filter(pk=task.pk).update(is_gold=True, gold={"answer": "No"})
    elif case == "cancelled":
        Task.objects.filter(pk=task.pk).update(state="cancelled")
    elif case == "settled":
        services.task_curator_settle(
            task_id=task.pk, queue=queue, by=curator, method="majority", reason="ok"
        )
    elif case == "handler":
        queue.outcome_handler = "some.handler"
        queue.save()
    elif case == "no_answer":
        kwargs["annotator"] = "worker2"
        expected = Invalid
    elif case == "no_note":
        note = "  "
        expected = Invalid
    elif case == "other_queue":
        kwargs["queue"] = QueueFactory(project=project)
        expected = NotFound
    before = (list(Task.objects.values()), list(Annotation.objects.values()))
    with pytest.raises(expected):
        services.annotation_send_back(note=note, **kwargs)
    assert (list(Task.objects.values()), list(Annotation.objects.values())) == before
    assert not SentBackAnnotation.objects.exists()


def test_the_author_sees_the_note_in_their_history(project, crowdworker, curator):
    queue = QueueFactory(project=project, redundancy=2, max_redundancy=2)
    TaskFactory(queue=queue)
    task = answer(queue, crowdworker, "Yes")
    services.annotation_send_back(
        queue=queue, task_id=task.pk, annotator="worker", by=curator, note="Count again"
    )
    entries = selectors.my_recent_answers(crowdworker, queue)
    sent = [e for e in entries if e.task_id == task.pk]
    assert len(sent) == 1
    assert (sent[0].sent_back_note, sent[0].response) == ("Count again", {"answer": "Yes"})
    assert sent[0].sent_back_at is not None


def test_acceptance_rate_per_person(project, crowdworker, other_worker, curator):
    queue = QueueFactory(project=project, redundancy=2, max_redundancy=2)
    tasks = [TaskFactory(queue=queue) for _ in range(4)]
    for _t in tasks:
        answer(queue, crowdworker, "Yes")
    services.annotation_send_back(
        queue=queue, task_id=tasks[0].pk, annotator="worker", by=curator, note="No"
    )
    rates = selectors.acceptance_by_person(project)
    assert rates[crowdworker.pk] == {"accepted": 3, "sent_back": 1, "rate": 0.75}
    assert other_worker.pk not in rates


def test_send_back_over_the_api(project, crowdworker, curator):
    queue = QueueFactory(project=project, redundancy=1, max_redundancy=1)
    task = TaskFactory(queue=queue)
    answer(queue, crowdworker, "Yes")
    api = APIClient()
    api.force_login(curator)
    url = f"/api/tasks/{task.pk}/send-back/"
    assert api.post(url, {"annotator": "worker"}, format="json").status_code == 400
    done = api.post(url, {"annotator": "worker", "note": "zoom in"}, format="json")
    assert done.status_code == 200, done.content
    body = done.json()
    assert (body["annotator"], body["note"], body["reopened"]) == ("worker", "zoom in", True)
    assert body["withdrawn_outcome"]["label"] == "Yes"
    # nothing left to send back: 400 naming the person
    again = api.post(url, {"annotator": "worker", "note": "zoom in"}, format="json")
    assert again.status_code == 400 and "worker" in again.json()["message"]
    # a queue whose recipe acted on decisions refuses it (409)
    handled = QueueFactory(project=project, redundancy=1, max_redundancy=1)
    other = TaskFactory(queue=handled)
    answer(handled, crowdworker, "No")
    TaskQueue.objects.filter(pk=handled.pk).update(outcome_handler="recipe.handler")
    refused = api.post(
        f"/api/tasks/{other.pk}/send-back/", {"annotator": "worker", "note": "x"}, format="json"
    )
    assert refused.status_code == 409 and "settle" in refused.json()["message"]
    # members show each person's acceptance rate
    members = api.get(f"/api/projects/{project.pk}/members/").json()
    mine = next(m for m in members if m["username"] == "worker")
    assert (mine["accepted"], mine["sent_back"], mine["acceptance_rate"]) == (1, 1, 0.5)
