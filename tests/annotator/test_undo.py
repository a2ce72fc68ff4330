"""Undo within the queue's window; the history of answers. (Undo of an answer that decided its
task: test_undo_reopen.py.)"""

import json
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from annotator import selectors, services
from annotator.models import Annotation, Assignment, Task, UndoneAnnotation
from annotator.platform.errors import Conflict
from tests.factories import QueueFactory, TaskFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_tasks(project):
    queue = QueueFactory(project=project, redundancy=2, max_redundancy=2)
    return queue, [TaskFactory(queue=queue), TaskFactory(queue=queue)]


def answer(queue, person, value, now=None):
    claim = services.assignment_claim(queue=queue, annotator=person, now=now)
    return claim.task, services.annotation_submit(
        task_id=claim.task.pk, annotator=person, response={"answer": value}, now=now
    )


def test_undo_gives_the_task_back_as_a_live_lease_and_keeps_the_trail(two_tasks, crowdworker):
    queue, _tasks = two_tasks
    t0 = timezone.now()
    first, result = answer(queue, crowdworker, "Yes", now=t0)
    following = result.next.task
    assert following is not None and following.pk != first.pk

    # When the worker undoes within the window
    t1 = t0 + timedelta(seconds=30)
    assignment = services.annotation_undo(task_id=first.pk, annotator=crowdworker, now=t1)

    # Then the answer is gone from the annotations, kept in the trail, the task is theirs again
    assert not Annotation.objects.filter(task=first).exists()
    undone = UndoneAnnotation.objects.get(task=first)
    assert (undone.annotator, undone.response) == (crowdworker, {"answer": "Yes"})
    assert (undone.answered_at, undone.undone_at) == (result.annotation.created_at, t1)
    assert assignment.state == Assignment.State.LEASED
    assert assignment.expires_at == t1 + queue.lease_ttl
    first.refresh_from_db()
    assert (first.done_count, first.active_count, first.state) == (0, 1, Task.State.OPEN)
    # … and the next task they had been given went back to the pool
    following.refresh_from_db()
    assert following.active_count == 0
    assert Assignment.objects.get(task=following).state == Assignment.State.EXPIRED
    assert services.assignment_claim(queue=queue, annotator=crowdworker, now=t1).task == first

    # A new answer stands; the export (annotations) carries only the final one
    services.annotation_submit(
        task_id=first.pk, annotator=crowdworker, response={"answer": "No"}, now=t1
    )
    assert list(Annotation.objects.filter(task=first).values_list("response", flat=True)) == [
        {"answer": "No"}
    ]
    history = selectors.my_recent_answers(crowdworker, queue, now=t1)
    # (the undo is dated t1, half a minute ahead of the new answer's real clock)
    assert [(e.response, e.undone_at) for e in history] == [
        ({"answer": "Yes"}, t1),
        ({"answer": "No"}, None),
    ]
    standing = next(e for e in history if e.undone_at is None)
    assert standing.undo_until is not None and standing.refusal == ""


def test_undo_refused_after_the_window(two_tasks, crowdworker):
    queue, _tasks = two_tasks
    t0 = timezone.now()
    first, _result = answer(queue, crowdworker, "Yes", now=t0)
    with pytest.raises(Conflict, match="2 min after submitting"):
        services.annotation_undo(
            task_id=first.pk, annotator=crowdworker, now=t0 + timedelta(minutes=2, seconds=1)
        )
    assert Annotation.objects.filter(task=first).count() == 1
    assert not UndoneAnnotation.objects.exists()


def test_undo_refused_when_the_queue_allows_none(project, crowdworker):
    never = QueueFactory(project=project, undo_window=timedelta(0))
    TaskFactory(queue=never)
    held, _result = answer(never, crowdworker, "No")
    with pytest.raises(Conflict, match="cannot be undone"):
        services.annotation_undo(task_id=held.pk, annotator=crowdworker)
    assert not selectors.undo_possible(crowdworker, never)


def test_undo_without_an_answer_is_409_not_a_change(two_tasks, crowdworker):
    queue, _tasks = two_tasks
    claim = services.assignment_claim(queue=queue, annotator=crowdworker)
    with pytest.raises(Conflict, match="no answer to undo"):
        services.annotation_undo(task_id=claim.task.pk, annotator=crowdworker)
    with pytest.raises(Conflict, match="not answered anything"):
        services.annotation_undo_last(queue=queue, annotator=crowdworker)


def test_workspace_u_undoes_the_last_answer_and_history_lists_it(client, two_tasks, crowdworker):
    queue, _tasks = two_tasks
    client.force_login(crowdworker)
    first, _result = answer(queue, crowdworker, "Yes")
    page = client.get(reverse("work", args=[queue.pk])).content.decode()
    assert 'data-key="u"' in page and reverse("work-undo", args=[queue.pk]) in page

    resp = client.post(reverse("work-undo", args=[queue.pk]), HTTP_HX_REQUEST="true")
    html = resp.content.decode()
    assert resp.status_code == 200
    assert f'data-task-id="{first.pk}"' in html
    assert "Your answer was taken back" in html

    history = client.get(reverse("work-history", args=[queue.pk])).content.decode()
    assert "undone at" in history and "answer: Yes" in history


def test_api_undo_and_history(two_tasks, crowdworker):
    queue, _tasks = two_tasks
    api = APIClient()
    api.force_authenticate(crowdworker)
    first, _result = answer(queue, crowdworker, "Yes")
    history = api.get(f"/api/queues/{queue.pk}/history/").json()
    assert [(h["task_id"], h["response"], h["undone_at"]) for h in history] == [
        (first.pk, {"answer": "Yes"}, None)
    ]
    assert history[0]["undo_until"] is not None

    body = api.post(f"/api/tasks/{first.pk}/undo/").json()
    assert body["task"]["id"] == first.pk
    again = api.post(f"/api/tasks/{first.pk}/undo/")
    assert again.status_code == 409
    assert "no answer to undo" in again.json()["message"]


def test_curator_sets_the_window_per_queue(two_tasks, curator):
    queue, _tasks = two_tasks
    api = APIClient()
    api.force_authenticate(curator)
    resp = api.patch(f"/api/queues/{queue.pk}/", {"undo_window": 300}, format="json")
    assert resp.status_code == 200, resp.content
    assert resp.json()["undo_window"] == 300
    queue.refresh_from_db()
    assert queue.undo_window == timedelta(minutes=5)
    bad = api.patch(f"/api/queues/{queue.pk}/", {"undo_window": -1}, format="json")
    assert bad.status_code == 400


def test_curator_task_page_shows_the_trail(client, two_tasks, crowdworker, curator):
    queue, _tasks = two_tasks
    first, _result = answer(queue, crowdworker, "Yes")
    services.annotation_undo(task_id=first.pk, annotator=crowdworker)
    services.annotation_submit(task_id=first.pk, annotator=crowdworker, response={"answer": "No"})
    client.force_login(curator)
    html = client.get(reverse("curator-task", args=[first.pk])).content.decode()
    trail = html[html.index('data-testid="undone"') :]
    assert crowdworker.username in trail and "Yes" in trail
    # the export carries the final answer only
    resp = client.get(f"/api/queues/{queue.pk}/annotations/?format=jsonl")
    rows = [json.loads(line) for line in b"".join(resp.streaming_content).decode().splitlines()]
    assert [r["response"] for r in rows if r["task_id"] == first.pk] == [{"answer": "No"}]


def test_get_on_next_answers_405_naming_post(queue, crowdworker):
    api = APIClient()
    api.force_authenticate(crowdworker)
    resp = api.get(f"/api/queues/{queue.pk}/next/")
    assert resp.status_code == 405
    assert f"POST /api/queues/{queue.pk}/next/" in resp.json()["message"]
    assert "POST" in resp["Allow"]
