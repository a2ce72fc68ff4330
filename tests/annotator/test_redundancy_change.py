"""Changing a queue's redundancy: tasks that already have enough answers are decided.

A task is decided when a submit brings its answers to what it requires. Lowering the redundancy
lowers what open tasks require, so a task may already have enough answers and no submit to come:
``queue_update`` decides it by the queue's rule (in a job when there are many), and a task that
live leases keep above the new N comes down, and is decided, as those leases end.
"""

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from annotator import services
from annotator.models import Assignment, Task
from annotator.outcomes import outcome_handler
from annotator.platform.models import Job
from annotator.services import queues
from tests.annotator.helpers import workers
from tests.factories import QueueFactory, TaskFactory

pytestmark = pytest.mark.django_db

CALLS: list[tuple[int, bool, object, int]] = []


@outcome_handler("tests.redundancy_change")
def record_outcome(task, decision):
    CALLS.append((task.pk, decision.decided, decision.label, sum(decision.counts.values())))


@pytest.fixture(autouse=True)
def _reset_calls():
    CALLS.clear()
    yield
    CALLS.clear()


def holds(queue, person, task, now=None) -> Assignment:
    """``person`` claims and must get ``task``."""
    queue.refresh_from_db()
    queue.project.members.add(person)  # people work in their projects only
    got = services.assignment_claim(queue=queue, annotator=person, now=now)
    assert got.assignment is not None, got.message
    assert got.assignment.task_id == task.pk
    return got.assignment


def give_back(queue) -> None:
    """Let every lease in ``queue`` expire: a submit claims the next task by itself, and an
    expired lease (unlike a skipped one) lets the same person have that task later."""
    services.leases_expire(queue=queue, now=timezone.now() + timedelta(days=1))


def answer(queue, person, task, value: str, now=None) -> None:
    holds(queue, person, task, now=now)
    services.annotation_submit(
        task_id=task.pk, annotator=person, response={"answer": value}, now=now
    )
    give_back(queue)


def reload(task: Task) -> Task:
    task.refresh_from_db()
    return task


@pytest.fixture
def queue3(project):
    return QueueFactory(
        project=project,
        redundancy=3,
        max_redundancy=3,
        rule="majority",
        outcome_handler="tests.redundancy_change",
    )


# --------------------------------------------------------------------------------------------
# Lowering the redundancy decides tasks that already have enough answers
# --------------------------------------------------------------------------------------------
def test_lowering_3_to_2_decides_tasks_with_two_answers(queue3):
    # Given N = 3 (majority, escalation up to 3): one task answered Yes, Yes; one answered
    # Yes, No; one answered once; one not at all
    agree, split, once, fresh = (TaskFactory(queue=queue3) for _ in range(4))
    p1, p2 = workers(2)
    answer(queue3, p1, agree, "Yes")
    answer(queue3, p2, agree, "Yes")
    answer(queue3, p1, split, "Yes")
    answer(queue3, p2, split, "No")
    answer(queue3, p1, once, "Yes")
    assert [reload(t).state for t in (agree, split, once, fresh)] == ["open"] * 4
    assert CALLS == []
    # When the curator lowers the redundancy to 2
    services.queue_update(queue=queue3, redundancy=2)
    # Then the agreeing task is decided Yes on its two answers and the handler ran once for it
    agree = reload(agree)
    assert (agree.state, agree.required, agree.done_count) == ("decided", 2, 2)
    assert agree.outcome == {"label": "Yes", "counts": {"Yes": 2}, "n": 2}
    assert agree.agreement == 1.0
    assert agree.decided_at is not None
    assert CALLS == [(agree.pk, True, "Yes", 2)]
    # the split one has no majority of two: it escalates to a third answer (max 3)
    split = reload(split)
    assert (split.state, split.required, split.escalations) == ("open", 3, 1)
    # and the others now need two answers
    assert (reload(once).state, reload(once).required) == ("open", 2)
    assert (reload(fresh).state, reload(fresh).required) == ("open", 2)


def test_lowering_with_the_maximum_ends_a_split_task_undecided(project):
    # Given N = 3 unanimous, escalation up to 3, and a task answered Yes, No
    queue = QueueFactory(
        project=project,
        redundancy=3,
        max_redundancy=3,
        rule="unanimous",
        outcome_handler="tests.redundancy_change",
    )
    task = TaskFactory(queue=queue)
    p1, p2 = workers(2)
    answer(queue, p1, task, "Yes")
    answer(queue, p2, task, "No")
    # When both the redundancy and the maximum go down to 2
    services.queue_update(queue=queue, redundancy=2, max_redundancy=2)
    # Then there is no more room to escalate: the task ends undecided, the handler is told
    task = reload(task)
    assert (task.state, task.escalations) == ("undecided", 0)
    assert task.outcome == {"label": None, "counts": {"Yes": 1, "No": 1}, "n": 2}
    assert CALLS == [(task.pk, False, None, 2)]


def test_lowering_through_the_api_answers_with_the_settled_progress(queue3, curator):
    # Given a task with two agreeing answers under N = 3
    task = TaskFactory(queue=queue3)
    p1, p2 = workers(2)
    answer(queue3, p1, task, "No")
    answer(queue3, p2, task, "No")
    client = APIClient()
    client.force_login(curator)
    # When a curator PATCHes the redundancy to 2
    response = client.patch(f"/api/queues/{queue3.pk}/", {"redundancy": 2}, format="json")
    # Then the answer already counts the task as decided
    assert response.status_code == 200
    progress = response.json()["progress"]
    assert (progress["decided"], progress["open"], progress["done"]) == (1, 0, 1)
    assert reload(task).outcome["label"] == "No"
    assert Job.objects.count() == 0  # a handful of tasks is settled in the request


def test_gold_items_are_never_decided(queue3):
    # Given a gold item answered by two people (gold answers are not counted as done)
    gold = TaskFactory(queue=queue3, is_gold=True, gold={"answer": "Yes"})
    queue3.gold_rate = 1.0
    queue3.save()
    for person in workers(2):
        answer(queue3, person, gold, "Yes")
    # When the redundancy goes down to 1
    services.queue_update(queue=queue3, redundancy=1)
    # Then the gold item stays open (it is served to everyone) and no handler ran
    assert reload(gold).state == "open"
    assert CALLS == []


# --------------------------------------------------------------------------------------------
# A task with a live lease beyond the new redundancy
# --------------------------------------------------------------------------------------------
@pytest.fixture
def third_lease(queue3):
    """A task answered Yes, Yes under N = 3, a third person holding a live lease, N now 2."""
    task = TaskFactory(queue=queue3)
    p1, p2, p3 = workers(3)
    start = timezone.now()
    answer(queue3, p1, task, "Yes", now=start)
    answer(queue3, p2, task, "Yes", now=start)
    holds(queue3, p3, task, now=start)
    services.queue_update(queue=queue3, redundancy=2)
    return task, p3, start


def test_a_live_third_lease_keeps_the_task_open(third_lease):
    task, _p3, _start = third_lease
    # Then the task still counts the live lease: it waits for that person
    task = reload(task)
    assert (task.state, task.required, task.active_count, task.done_count) == ("open", 3, 3, 2)
    assert CALLS == []


def test_the_third_answer_decides_on_three(third_lease):
    task, p3, start = third_lease
    # When the third person answers
    services.annotation_submit(task_id=task.pk, annotator=p3, response={"answer": "No"}, now=start)
    # Then their answer counts: decided on three answers
    task = reload(task)
    assert (task.state, task.done_count) == ("decided", 3)
    assert task.outcome == {"label": "Yes", "counts": {"Yes": 2, "No": 1}, "n": 3}
    assert CALLS == [(task.pk, True, "Yes", 3)]


@pytest.mark.parametrize("how", ["skip", "report", "expire", "expire-lazily"])
def test_the_third_lease_ending_unanswered_decides_on_two(third_lease, queue3, how):
    task, p3, start = third_lease
    later = start + queue3.lease_ttl + timedelta(seconds=1)
    # When the third lease ends without an answer
    if how == "skip":
        services.assignment_skip(task_id=task.pk, annotator=p3, now=start)
    elif how == "report":
        services.assignment_report(task_id=task.pk, annotator=p3, reason="unclear", now=start)
    elif how == "expire":
        assert services.leases_expire(now=later) == 1  # the beat job
    else:
        # a claim that finds nothing else returns expired leases itself
        got = services.assignment_claim(queue=queue3, annotator=workers(1)[0], now=later)
        assert got.assignment is None
    # Then the task needs only the new N and is decided on its two answers
    task = reload(task)
    assert (task.state, task.required, task.active_count, task.done_count) == (
        "decided",
        2,
        2,
        2,
    )
    assert task.outcome == {"label": "Yes", "counts": {"Yes": 2}, "n": 2}
    assert CALLS == [(task.pk, True, "Yes", 2)]


def test_two_live_leases_come_down_one_at_a_time(queue3):
    # Given N = 3, one answer and two live leases, then N lowered to 2
    task = TaskFactory(queue=queue3)
    p1, p2, p3 = workers(3)
    answer(queue3, p1, task, "Yes")
    holds(queue3, p2, task)
    holds(queue3, p3, task)
    services.queue_update(queue=queue3, redundancy=2)
    assert reload(task).required == 3
    # When one of the two leases is skipped
    services.assignment_skip(task_id=task.pk, annotator=p2)
    # Then the task needs two answers: the one it has and the one still being worked on
    task = reload(task)
    assert (task.state, task.required, task.active_count, task.done_count) == ("open", 2, 2, 1)
    # and that answer decides it
    services.annotation_submit(task_id=task.pk, annotator=p3, response={"answer": "Yes"})
    assert (reload(task).state, reload(task).outcome["n"]) == ("decided", 2)


def test_an_escalated_task_keeps_its_extra_slot_when_a_lease_ends(project):
    # Given N = 2 unanimous with escalation to 3, a split task that escalated, and a third
    # person holding its extra slot
    queue = QueueFactory(project=project, redundancy=2, max_redundancy=3, rule="unanimous")
    task = TaskFactory(queue=queue)
    p1, p2, p3 = workers(3)
    answer(queue, p1, task, "Yes")
    answer(queue, p2, task, "No")
    assert (reload(task).required, reload(task).escalations) == (3, 1)
    holds(queue, p3, task)
    # When that person skips
    services.assignment_skip(task_id=task.pk, annotator=p3)
    # Then the escalation still asks for a third answer
    task = reload(task)
    assert (task.state, task.required, task.active_count) == ("open", 3, 2)


# --------------------------------------------------------------------------------------------
# Raising the redundancy
# --------------------------------------------------------------------------------------------
def test_raising_leaves_decided_tasks_alone(project):
    # Given N = 2: one task decided Yes, one with one answer
    queue = QueueFactory(
        project=project, redundancy=2, max_redundancy=2, outcome_handler="tests.redundancy_change"
    )
    decided, half = TaskFactory(queue=queue), TaskFactory(queue=queue)
    p1, p2 = workers(2)
    answer(queue, p1, decided, "Yes")
    answer(queue, p2, decided, "Yes")
    answer(queue, p1, half, "No")
    before = Task.objects.values().get(pk=decided.pk)
    CALLS.clear()
    # When the curator raises it to 3
    services.queue_update(queue=queue, redundancy=3, max_redundancy=3)
    # Then the decided task is exactly as it was; the open one needs three answers
    assert Task.objects.values().get(pk=decided.pk) == before
    assert (reload(half).state, reload(half).required) == ("open", 3)
    assert CALLS == []


# --------------------------------------------------------------------------------------------
# Many tasks: batches, and a job
# --------------------------------------------------------------------------------------------
def complete_tasks(queue, n: int) -> list[Task]:
    """``n`` tasks answered Yes by the same two people under N = 3."""
    tasks = [TaskFactory(queue=queue) for _ in range(n)]
    for person in workers(2):
        for task in tasks:
            answer(queue, person, task, "Yes")
    return tasks


def test_tasks_settle_works_in_batches_and_is_idempotent(queue3):
    # Given three tasks with two answers each, and N lowered to 2 without settling them (as a
    # crash between the two steps would leave them)
    tasks = complete_tasks(queue3, 3)
    Task.objects.filter(queue=queue3).update(required=2)
    queue3.redundancy = 2
    queue3.save()
    # When they are settled two at a time
    reports = []
    counts = services.tasks_settle(
        queue=queue3, batch_size=2, progress=lambda done, total: reports.append((done, total))
    )
    # Then every one is decided, batch by batch
    assert counts == {"decided": 3, "undecided": 0, "escalated": 0}
    assert reports == [(2, 3), (3, 3)]
    assert [reload(t).state for t in tasks] == ["decided"] * 3
    assert sorted(c[0] for c in CALLS) == sorted(t.pk for t in tasks)
    # and settling again finds nothing to do
    assert services.tasks_settle(queue=queue3) == {"decided": 0, "undecided": 0, "escalated": 0}
    assert len(CALLS) == 3


def test_many_tasks_are_settled_by_a_job_after_commit(
    queue3, curator, eager, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(queues, "SETTLE_INLINE_MAX", 2)
    # Given more complete tasks than are settled in a request
    tasks = complete_tasks(queue3, 3)
    # When the redundancy is lowered
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        services.queue_update(queue=queue3, by=curator, redundancy=2)
    # Then nothing is decided in the request; a job owned by the curator is enqueued
    assert [reload(t).state for t in tasks] == ["open"] * 3
    job = Job.objects.get()
    assert (job.kind, job.params, job.created_by, job.project_id) == (
        "annotator.settle_tasks",
        {"queue_id": queue3.pk},
        curator,
        queue3.project_id,
    )
    assert job.status == Job.Status.QUEUED
    # and once the transaction commits the job decides them all, with its progress
    for callback in callbacks:
        callback()
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert (job.done, job.total) == (3, 3)
    assert job.result == {"queue_id": queue3.pk, "decided": 3, "undecided": 0, "escalated": 0}
    assert [reload(t).state for t in tasks] == ["decided"] * 3
