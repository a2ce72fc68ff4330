"""The task browser: /curate/queues/{id}/tasks/ and GET /api/queues/{id}/tasks/ share one set of
filters (selectors.task_browse): state, flag, annotator, gold, text; sorts; pages."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotator import selectors
from annotator.models import Annotation, Assignment, Task
from tests.annotator.helpers import session_api
from tests.factories import QueueFactory, TaskFactory


def _answer(task, user, answer):
    now = timezone.now()
    Assignment.objects.create(
        task=task, queue=task.queue, annotator=user, state="submitted", expires_at=now
    )
    Annotation.objects.create(task=task, queue=task.queue, annotator=user, response=answer)


@pytest.fixture
def world(project, crowdworker, other_worker):
    """t_decided (both Yes, agreement 1.0), t_split (Yes/No, escalated, agreement 0.5),
    t_reported (reported by worker2), t_cancelled, t_gold, t_zebra (external id ext-42)."""
    queue = QueueFactory(project=project, redundancy=2, max_redundancy=3)
    now = timezone.now()
    t = {
        name: TaskFactory(queue=queue)
        for name in ("decided", "split", "reported", "cancelled", "gold", "zebra")
    }
    yes, no = {"answer": "Yes"}, {"answer": "No"}
    _answer(t["decided"], crowdworker, yes)
    _answer(t["decided"], other_worker, yes)
    Task.objects.filter(pk=t["decided"].pk).update(
        state="decided",
        done_count=2,
        active_count=2,
        agreement=1.0,
        outcome={"label": "Yes"},
        decided_at=now,
    )
    _answer(t["split"], crowdworker, yes)
    _answer(t["split"], other_worker, no)
    Task.objects.filter(pk=t["split"].pk).update(
        required=3, escalations=1, done_count=2, active_count=2, agreement=0.5
    )
    Assignment.objects.create(
        task=t["reported"],
        queue=queue,
        annotator=other_worker,
        state="reported",
        expires_at=now,
        report_reason="broken_image",
    )
    Task.objects.filter(pk=t["cancelled"].pk).update(
        state="cancelled", decided_at=now - timedelta(hours=1)
    )
    Task.objects.filter(pk=t["gold"].pk).update(is_gold=True, gold={"answer": "Yes"})
    Task.objects.filter(pk=t["zebra"].pk).update(
        external_id="ext-42",
        payload={
            "image": {"url": "/static/demo/z.png"},
            "question": "Is the Zebra striped?",
            "choices": ["Yes", "No"],
        },
    )
    TaskFactory(queue=QueueFactory(project=project))  # another queue's task never shows
    return queue, {k: v.pk for k, v in t.items()}


def browse(queue, **filters):
    return [task.pk for task in selectors.task_browse(queue, selectors.TaskFilter(**filters))]


def test_every_filter(world, crowdworker, other_worker):
    queue, t = world
    everything = [t[k] for k in ("decided", "split", "reported", "cancelled", "gold", "zebra")]
    assert browse(queue) == everything
    assert browse(queue, state="decided") == [t["decided"]]
    assert browse(queue, state="cancelled") == [t["cancelled"]]
    assert browse(queue, state="undecided") == []
    assert browse(queue, flag="escalated") == [t["split"]]
    assert browse(queue, flag="reported") == [t["reported"]]
    assert browse(queue, annotator=crowdworker.username) == [t["decided"], t["split"]]
    assert browse(queue, annotator="nobody") == []
    assert browse(queue, gold=True) == [t["gold"]]
    assert t["gold"] not in browse(queue, gold=False)
    assert browse(queue, text="zebra") == [t["zebra"]]  # case-insensitive, in the payload
    assert browse(queue, text="ext-42") == [t["zebra"]]  # the external id
    assert browse(queue, text="50%_") == []  # LIKE wildcards are plain text
    assert browse(queue, state="open", annotator=other_worker.username) == [t["split"]]


def test_sorts(world):
    queue, t = world
    assert browse(queue, sort="-id")[0] == t["zebra"]
    # least agreement first, tasks without an agreement last (by id)
    assert browse(queue, sort="agreement")[:2] == [t["split"], t["decided"]]
    # recently finished first, unfinished last
    assert browse(queue, sort="-decided_at")[:2] == [t["decided"], t["cancelled"]]


def test_page_filters_and_links_every_task(world, client, curator, django_assert_max_num_queries):
    queue, t = world
    client.force_login(curator)
    url = reverse("curator-queue-tasks", args=[queue.pk])
    with django_assert_max_num_queries(12):
        response = client.get(url, {"flag": "escalated", "sort": "agreement"})
    html = response.content.decode()
    assert response.status_code == 200
    assert reverse("curator-task", args=[t["split"]]) in html
    assert reverse("curator-task", args=[t["decided"]]) not in html
    assert "1 task matches" in html
    assert "Is the cube red?" in html  # the payload's question, not its first choice
    assert 'data-key="/"' in html  # the search field's key


def test_page_htmx_answers_the_results_only(world, client, researcher):
    queue, t = world
    client.force_login(researcher)
    url = reverse("curator-queue-tasks", args=[queue.pk])
    response = client.get(url, {"q": "zebra"}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert "<html" not in html and reverse("curator-task", args=[t["zebra"]]) in html


def test_page_pages_keep_the_filters(world, client, curator):
    queue, _t = world
    TaskFactory.create_batch(60, queue=queue)
    client.force_login(curator)
    url = reverse("curator-queue-tasks", args=[queue.pk])
    first = client.get(url, {"state": "open"}).content.decode()
    assert "Tasks 1–50" in first and "state=open&amp;page=2" in first
    second = client.get(url, {"state": "open", "page": 2}).content.decode()
    assert "Tasks 51–" in second and "page=1" in second


def test_bad_filters_answer_400_and_say_why(world, client, curator):
    queue, _t = world
    client.force_login(curator)
    url = reverse("curator-queue-tasks", args=[queue.pk])
    response = client.get(url, {"state": "exploded", "page": "x"})
    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()
    api = session_api(curator).get(reverse("api-queue-tasks", args=[queue.pk]), {"sort": "evil"})
    assert api.status_code == 400
    assert api.json()["errors"][0]["field"] == "sort"


def test_api_uses_the_same_filters(world, curator, researcher):
    queue, t = world
    url = reverse("api-queue-tasks", args=[queue.pk])
    for user in (curator, researcher):
        body = session_api(user).get(url, {"flag": "reported"}).json()
        assert [r["id"] for r in body["results"]] == [t["reported"]]
        assert (body["count"], body["count_capped"], body["next"]) == (1, False, None)
    body = session_api(curator).get(url, {"q": "ZEBRA", "state": "open"}).json()
    assert [r["id"] for r in body["results"]] == [t["zebra"]]


def test_api_pages_follow_next(world, curator):
    queue, _t = world
    TaskFactory.create_batch(150, queue=queue)
    url = reverse("api-queue-tasks", args=[queue.pk])
    client = session_api(curator)
    body = client.get(url, {"state": "open"}).json()
    assert body["count"] == 154 and len(body["results"]) == 100
    seen = [r["id"] for r in body["results"]]
    body = client.get(body["next"]).json()
    seen += [r["id"] for r in body["results"]]
    assert body["next"] is None and body["previous"]
    assert len(seen) == len(set(seen)) == 154


def test_count_is_capped(world, monkeypatch):
    queue, _t = world
    monkeypatch.setattr(selectors, "COUNT_CAP", 3)
    page = selectors.task_page(queue, selectors.TaskFilter(), number=1, per_page=2)
    assert (page.count, page.count_capped, page.has_next, len(page.tasks)) == (4, True, True, 2)


def test_text_pages_keep_the_sort_when_few_match(world):
    # few matches: ids come from the trigram index, the page is ordered among them
    queue, t = world
    page = selectors.task_page(
        queue, selectors.TaskFilter(text="cube", sort="-id"), number=1, per_page=2
    )
    cubes = [t[k] for k in ("decided", "split", "reported", "cancelled", "gold")]
    assert [task.pk for task in page.tasks] == sorted(cubes, reverse=True)[:2]
    assert (page.count, page.has_next) == (5, True)
