"""The next task already there (a look-ahead that holds no lease, its images preloaded), the
queue's progress in the workspace header, queues 10 and up on the home page, and the keys an
inline message offers (issue 28)."""

import re

import pytest
from django.core.cache import cache
from django.urls import reverse

from annotator import selectors, services
from annotator.models import Assignment, Task
from tests.factories import QueueFactory, TaskFactory, vqa_payload

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def worker_client(client, crowdworker):
    client.force_login(crowdworker)
    return client


def held_id(html: str) -> int:
    return int(re.search(r'data-task-id="(\d+)"', html).group(1))


def prefetched(html: str) -> list[str]:
    match = re.search(r'data-prefetch="([^"]*)"', html)
    return match.group(1).split() if match else []


def test_the_page_names_the_next_tasks_images_without_leasing_them(
    project, worker_client, crowdworker
):
    queue = QueueFactory(project=project, redundancy=1, max_redundancy=1)
    tasks = [TaskFactory(queue=queue, payload=vqa_payload(i)) for i in range(4)]

    html = worker_client.get(reverse("work", args=[queue.pk])).content.decode()

    # The first task is held; the next two in the claim's order are named for preloading
    assert held_id(html) == tasks[0].pk
    assert prefetched(html) == ["/static/demo/img1.png", "/static/demo/img2.png"]
    # …and nothing else is held: one lease, one slot counted
    assert Assignment.objects.filter(annotator=crowdworker).count() == 1
    assert list(Task.objects.order_by("id").values_list("active_count", flat=True)) == [1, 0, 0, 0]

    # The submit hands out exactly the task looked ahead at, and names the ones after it
    after = worker_client.post(
        reverse("work-submit", args=[tasks[0].pk]), {"answer": "Yes"}, **HX
    ).content.decode()
    assert held_id(after) == tasks[1].pk
    assert prefetched(after) == ["/static/demo/img2.png", "/static/demo/img3.png"]
    # one task held on the page, and the next one rendered ahead in a <template>, not held
    live, ahead = after.split("<template data-look-ahead>")
    assert live.count("data-task-id") == 1
    assert held_id(ahead) == tasks[2].pk
    assert Assignment.objects.filter(annotator=crowdworker, state="leased").count() == 1


def test_the_look_ahead_follows_the_claim_order_and_skips_what_others_hold(
    project, crowdworker, other_worker
):
    queue = QueueFactory(project=project, redundancy=2, max_redundancy=2)
    a, b, c = (TaskFactory(queue=queue, payload=vqa_payload(i)) for i in range(3))
    # other_worker answered a: its one free slot makes it the fullest open task for crowdworker
    claim = services.assignment_claim(queue=queue, annotator=other_worker)
    services.annotation_submit(
        task_id=claim.task.pk, annotator=other_worker, response={"answer": "Yes"}
    )
    assert claim.task.pk == a.pk

    ahead = services.tasks_up_next(queue=queue, annotator=crowdworker)
    first = services.assignment_claim(queue=queue, annotator=crowdworker).task

    assert [p["question"] for _id, p in ahead] == [a.payload["question"], b.payload["question"]]
    assert [task_id for task_id, _p in ahead] == [a.pk, b.pk]
    assert first.pk == a.pk  # the claim takes the task the look-ahead named first
    # the person's own lease and answers are never looked ahead at
    after = services.tasks_up_next(queue=queue, annotator=crowdworker)
    assert [p["question"] for _id, p in after] == [
        b.payload["question"],
        c.payload["question"],
    ]


def test_a_closed_queue_looks_ahead_at_nothing(project, crowdworker):
    queue = QueueFactory(project=project, status="closed")
    TaskFactory(queue=queue)
    assert services.tasks_up_next(queue=queue, annotator=crowdworker) == []


def test_workspace_header_shows_the_queue_progress_and_my_share(
    project, worker_client, crowdworker, other_worker
):
    queue = QueueFactory(project=project, redundancy=1, max_redundancy=1)
    tasks = [TaskFactory(queue=queue) for _ in range(4)]
    Task.objects.filter(pk=tasks[3].pk).update(state=Task.State.CANCELLED)
    claim = services.assignment_claim(queue=queue, annotator=other_worker)
    services.annotation_submit(
        task_id=claim.task.pk, annotator=other_worker, response={"answer": "Yes"}
    )

    page = worker_client.get(reverse("work", args=[queue.pk])).content.decode()
    assert 'id="queue-progress"' in page
    assert "<strong data-queue-done>1</strong> / 3 tasks done" in page
    assert "your answers: <strong data-my-answers>0</strong> (0% of all)" in page

    submitted = worker_client.post(
        reverse("work-submit", args=[held_id(page)]), {"answer": "No"}, **HX
    )
    # the answer asks the header to refresh itself (debounced, after the next task is shown)
    assert submitted["HX-Trigger"] == "bs-answered"
    fragment = worker_client.get(reverse("work-progress", args=[queue.pk]), **HX)
    html = fragment.content.decode()
    assert fragment.status_code == 200
    assert "<strong data-queue-done>2</strong> / 3 tasks done" in html
    assert "your answers: <strong data-my-answers>1</strong> (50% of all)" in html
    assert 'hx-trigger="bs-answered from:body delay:1500ms, every 60s"' in html


def test_home_numbers_every_queue_for_two_digit_keys(project, worker_client):
    for n in range(11):
        queue = QueueFactory(project=project, title=f"Queue number {n + 1}", priority=100 - n)
        TaskFactory(queue=queue)
    html = worker_client.get(reverse("home")).content.decode()
    keys = re.findall(r'data-queue-key="(\d+)"', html)
    assert keys == [str(n) for n in range(1, 12)]
    assert "1 then 0 opens queue 10" in html
    assert "data-queue-finder" in html
    assert 'data-key="1"' not in html  # a single key would open queue 1 on the way to 10


def test_a_refused_undo_keeps_the_task_on_screen_answerable(project, worker_client):
    queue = QueueFactory(project=project)
    TaskFactory(queue=queue)
    worker_client.get(reverse("work", args=[queue.pk]))

    refused = worker_client.post(reverse("work-undo", args=[queue.pk]), **HX)

    # 409, inline, without the "Next task" a lost task offers: Enter still submits this one
    html = refused.content.decode()
    assert refused.status_code == 409
    assert "not answered anything" in html
    assert "data-next-task" not in html


def test_a_lost_task_offers_the_next_one_on_enter(project, worker_client, crowdworker):
    queue = QueueFactory(project=project)
    task = TaskFactory(queue=queue)
    worker_client.get(reverse("work", args=[queue.pk]))
    services.tasks_cancel(queue=queue, task_ids=[task.pk])

    lost = worker_client.post(reverse("work-submit", args=[task.pk]), {"answer": "Yes"}, **HX)

    assert lost.status_code == 409
    assert "data-next-task" in lost.content.decode()


def test_the_new_workspace_words_are_translated(project, worker_client):
    queue = QueueFactory(project=project)
    TaskFactory(queue=queue)
    home = worker_client.get(reverse("home"), HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    page = worker_client.get(
        reverse("work", args=[queue.pk]), HTTP_ACCEPT_LANGUAGE="hi"
    ).content.decode()
    assert "前往队列" in home and "没有匹配的队列。" in home
    assert "<strong data-queue-done>0</strong> / 1 कार्य पूरे" in page
    assert "कतारों पर वापस" in page


def test_a_large_queues_counts_are_reused_briefly_and_a_small_ones_are_exact(
    project, crowdworker, monkeypatch, django_assert_num_queries
):
    small, large = QueueFactory(project=project), QueueFactory(project=project)
    TaskFactory(queue=small)
    for _ in range(3):
        TaskFactory(queue=large)
    monkeypatch.setattr(selectors, "PROGRESS_EXACT_UP_TO", 2)
    cache.clear()
    selectors.my_queue_progress(crowdworker, small)
    selectors.my_queue_progress(crowdworker, large)
    with django_assert_num_queries(2):  # the small queue's counts again, the person's own
        assert selectors.my_queue_progress(crowdworker, small)["total"] == 1
    with django_assert_num_queries(1):  # only the person's own count: the queue's are reused
        assert selectors.my_queue_progress(crowdworker, large)["total"] == 3
    cache.clear()
