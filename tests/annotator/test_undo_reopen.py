"""Undo of an answer that decided its task (every answer in a redundancy-1 queue): the task is
reopened when nothing downstream took the decision, refused when an outcome handler or a curator
did."""

import json
from collections import Counter
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotator import selectors, services
from annotator.models import Annotation, Assignment, Task, UndoneAnnotation
from annotator.outcomes import outcome_handler
from annotator.platform import webhooks
from annotator.platform.errors import Conflict
from tests.factories import QueueFactory, TaskFactory
from tests.webhook_receiver import Receiver

pytestmark = pytest.mark.django_db

HANDLED: Counter = Counter()


@outcome_handler("tests.undo_next_stage")
def _next_stage(task, decision):
    HANDLED[(task.pk, str(decision.label))] += 1


@pytest.fixture(autouse=True)
def _handled():
    HANDLED.clear()


def answer(queue, person, value, now=None):
    claim = services.assignment_claim(queue=queue, annotator=person, now=now)
    return claim.task, services.annotation_submit(
        task_id=claim.task.pk, annotator=person, response={"answer": value}, now=now
    )


@pytest.fixture
def single(project):
    """A redundancy-1 queue of two tasks and no outcome handler: every submit decides."""
    queue = QueueFactory(project=project, redundancy=1, max_redundancy=1)
    return queue, [TaskFactory(queue=queue), TaskFactory(queue=queue)]


def test_undo_in_a_redundancy_1_queue_reopens_the_decided_task(
    single, crowdworker, settings, eager, django_capture_on_commit_callbacks
):
    queue, _tasks = single
    settings.BLINDSPOT_WEBHOOK_ALLOW_PRIVATE = True
    settings.BLINDSPOT_WEBHOOK_BACKOFF_S = 0.0
    settings.BLINDSPOT_WEBHOOK_TIMEOUT_S = 2.0
    box = Receiver((200,))
    try:
        webhooks.webhook_create(
            project=queue.project, url=box.url, events=["task.decided", "task.reopened"]
        )
        # Given an answer that decided its task
        t0 = timezone.now()
        with django_capture_on_commit_callbacks(execute=True):
            first, result = answer(queue, crowdworker, "Yes", now=t0)
        first.refresh_from_db()
        assert (first.state, first.outcome["label"]) == (Task.State.DECIDED, "Yes")
        assert selectors.my_recent_answers(crowdworker, queue, now=t0)[0].refusal == ""

        # When the worker undoes it within the window
        t1 = t0 + timedelta(seconds=20)
        with django_capture_on_commit_callbacks(execute=True):
            held = services.annotation_undo_last(queue=queue, annotator=crowdworker, now=t1)
    finally:
        box.close()

    # Then the task is open again, its outcome withdrawn, and theirs as a live lease
    first.refresh_from_db()
    assert (first.state, first.outcome, first.agreement, first.decided_at) == (
        Task.State.OPEN,
        None,
        None,
        None,
    )
    assert (first.done_count, first.active_count) == (0, 1)
    assert (held.task_id, held.state, held.expires_at) == (
        first.pk,
        Assignment.State.LEASED,
        t1 + queue.lease_ttl,
    )
    assert UndoneAnnotation.objects.get(task=first).response == {"answer": "Yes"}
    # the next task they had been given is back in the pool
    following = Task.objects.get(pk=result.next.task.pk)
    assert following.active_count == 0
    # the project's webhooks heard the decision and then its withdrawal
    bodies = [json.loads(r.body) for r in box.received]
    assert [(b["event"], b["data"]["task"], b["data"]["state"]) for b in bodies] == [
        ("task.decided", first.pk, "decided"),
        ("task.reopened", first.pk, "open"),
    ]
    assert bodies[1]["data"]["outcome"] is None

    # And the new answer decides it again, with the new outcome
    services.annotation_submit(
        task_id=first.pk, annotator=crowdworker, response={"answer": "No"}, now=t1
    )
    first.refresh_from_db()
    assert (first.state, first.outcome["label"], first.done_count) == (
        Task.State.DECIDED,
        "No",
        1,
    )
    assert list(Annotation.objects.filter(task=first).values_list("response", flat=True)) == [
        {"answer": "No"}
    ]


def test_undo_of_one_of_two_agreeing_answers_reopens_and_keeps_the_other(
    project, crowdworker, other_worker
):
    queue = QueueFactory(project=project, redundancy=2, max_redundancy=2)
    task = TaskFactory(queue=queue)
    answer(queue, crowdworker, "Yes")
    answer(queue, other_worker, "Yes")
    task.refresh_from_db()
    assert task.state == Task.State.DECIDED

    services.annotation_undo(task_id=task.pk, annotator=crowdworker)

    task.refresh_from_db()
    assert (task.state, task.outcome, task.done_count, task.active_count) == (
        Task.State.OPEN,
        None,
        1,
        2,
    )
    assert list(Annotation.objects.filter(task=task).values_list("annotator", flat=True)) == [
        other_worker.pk
    ]
    # the other person's answer stands, and they may still take it back too
    assert selectors.my_recent_answers(other_worker, queue)[0].refusal == ""


def test_undo_refused_once_an_outcome_handler_took_the_decision(project, crowdworker):
    queue = QueueFactory(
        project=project, redundancy=1, max_redundancy=1, outcome_handler="tests.undo_next_stage"
    )
    task = TaskFactory(queue=queue)
    answer(queue, crowdworker, "Yes")
    assert HANDLED == {(task.pk, "Yes"): 1}

    with pytest.raises(Conflict, match="gone on to the next stage"):
        services.annotation_undo(task_id=task.pk, annotator=crowdworker)

    task.refresh_from_db()
    assert (task.state, task.outcome["label"], task.done_count) == (Task.State.DECIDED, "Yes", 1)
    assert Annotation.objects.filter(task=task).count() == 1
    assert not UndoneAnnotation.objects.exists()
    entry = selectors.my_recent_answers(crowdworker, queue)[0]
    assert (entry.undo_until, "next stage" in entry.refusal) == (None, True)


def test_undo_refused_once_a_curator_settled_the_task(single, crowdworker, curator):
    queue, _tasks = single
    task, _result = answer(queue, crowdworker, "Yes")
    services.task_curator_settle(
        task_id=task.pk,
        queue=queue,
        by=curator,
        method="choice",
        response={"answer": "No"},
        reason="the cube is blue",
    )
    with pytest.raises(Conflict, match="curator settled"):
        services.annotation_undo(task_id=task.pk, annotator=crowdworker)
    task.refresh_from_db()
    assert (task.state, task.outcome["label"]) == (Task.State.DECIDED, "No")


def test_undo_of_a_decided_task_after_the_window_is_refused(single, crowdworker):
    queue, _tasks = single
    t0 = timezone.now()
    task, _result = answer(queue, crowdworker, "Yes", now=t0)
    with pytest.raises(Conflict, match="2 min after submitting"):
        services.annotation_undo(
            task_id=task.pk, annotator=crowdworker, now=t0 + timedelta(minutes=3)
        )
    task.refresh_from_db()
    assert task.state == Task.State.DECIDED


def test_workspace_u_in_a_redundancy_1_queue_shows_the_task_again(client, single, crowdworker):
    queue, _tasks = single
    client.force_login(crowdworker)
    client.get(reverse("work", args=[queue.pk]))
    held = Assignment.objects.get(annotator=crowdworker, state=Assignment.State.LEASED)
    after = client.post(
        reverse("work-submit", args=[held.task_id]), {"answer": "Yes"}, HTTP_HX_REQUEST="true"
    )
    assert 'data-key="u"' in after.content.decode()

    resp = client.post(reverse("work-undo", args=[queue.pk]), HTTP_HX_REQUEST="true")

    assert resp.status_code == 200
    assert f'data-task-id="{held.task_id}"' in resp.content.decode()
    assert Task.objects.get(pk=held.task_id).state == Task.State.OPEN
