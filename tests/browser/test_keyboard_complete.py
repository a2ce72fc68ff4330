"""No keyboard dead end (issue 28): with eleven queues a crowdworker reaches queue 10 by typing
1 then 0 and any queue by name (g), answers every kind by keyboard alone while the header shows
the queue's progress and the next task's images are preloaded, undoes a redundancy-1 answer with
u, and goes on with n after the curator withdraws the task on screen. Screenshots of each step
go to $BLINDSPOT_SCREENSHOTS (else the test's tmp folder)."""

import pytest
from django.urls import reverse
from PIL import Image

from annotator import services
from annotator.models import Annotation, Task, TaskQueue
from annotator.platform import roles
from tests.browser.test_curator_desk import shots
from tests.browser.test_fonts import log_in
from tests.browser.test_keyboard_workspace import KEYSTROKES, build_queues
from tests.factories import ProjectFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def press_all(page, strokes) -> None:
    for stroke in strokes:
        if stroke.startswith("type:"):
            page.keyboard.type(stroke[5:])
        elif stroke.startswith("wait:"):
            page.wait_for_selector(stroke[5:])
        else:
            page.keyboard.press(stroke)


def next_task_shown(page, before: str) -> None:
    # …and confirmed: a task painted ahead (lookahead.js) is pending until the answer is in
    page.wait_for_function(
        "(id) => { const a = document.querySelector('#task-area'); return a && !a.dataset.pending"
        " && (a.dataset.taskId ? a.dataset.taskId !== id : !!a.querySelector('.empty')); }",
        arg=before,
    )


@pytest.fixture
def photos(settings, tmp_path):
    """Two image files under MEDIA_ROOT/demo/ (readable by anyone signed in)."""
    settings.MEDIA_ROOT = tmp_path / "media"
    folder = settings.MEDIA_ROOT / "demo" / "kb"
    folder.mkdir(parents=True)
    urls = []
    for i, color in enumerate(["orange", "purple"]):
        Image.new("RGB", (80, 60), color).save(folder / f"{i}.png")
        urls.append(f"/media/demo/kb/{i}.png")
    return urls


def test_every_kind_a_withdrawal_and_queue_ten_by_keyboard_only(
    live_server, transactional_db, browser_page, photos, tmp_path
):
    folder = shots(tmp_path)
    worker = UserFactory(username="kbfull", role=roles.CROWDWORKER)
    curator = UserFactory(username="kbfullcurator", role=roles.CURATOR)
    # A name without digits: the finder matches words of a card's title, project and kind, so a
    # factory name such as "Project 211" would match "11" on every card.
    project = ProjectFactory(name="Keyboard lab", members=[worker, curator])
    kinds = build_queues(project)  # priorities 100..95: keys 1..6
    fillers = []
    for n in range(7, 12):  # queues 7..11; queue 10 holds two tasks with real image files
        queue = services.queue_create(
            project=project,
            kind="vqa_choice",
            title=f"Filler queue number {n}",
            config={},
            redundancy=1,
            max_redundancy=1,
            priority=100 - n,
        )
        rows = [
            services.TaskRow(
                {"image": {"url": url}, "question": f"Q{n}.{i}?", "choices": ["Yes", "No"]}
            )
            for i, url in enumerate(photos if n == 10 else photos[:1])
        ]
        services.tasks_bulk_create(queue=queue, rows=rows)
        fillers.append(queue)
    ten = fillers[10 - 7]
    page = browser_page
    page.set_default_timeout(15000)
    log_in(page, live_server.url, "kbfull")

    # 1 then 0 opens queue 10 (not queue 1)
    page.wait_for_selector("[data-queue-key='11']")
    page.keyboard.press("1")
    page.wait_for_selector("[data-queue-card].is-typed [data-queue-key='1']")
    page.screenshot(path=str(folder / "kb-home-typed-1.png"), full_page=True)
    with page.expect_navigation():
        page.keyboard.press("0")
    assert page.url.endswith(reverse("work", args=[ten.pk]))
    page.wait_for_selector("#task-area[data-task-id]")
    # the header tells the queue's progress; the next task's image is already being loaded
    assert "0 / 2 tasks done" in page.inner_text("#queue-progress")
    first = page.get_attribute("#task-area", "data-task-id")
    first_task = Task.objects.get(pk=first)
    other_url = next(u for u in photos if u != first_task.payload["image"]["url"])
    assert page.get_attribute("#task-area", "data-prefetch") == other_url
    page.screenshot(path=str(folder / "kb-queue-10.png"), full_page=True)
    page.keyboard.press("1")
    page.keyboard.press("Enter")
    next_task_shown(page, first)
    page.wait_for_function(
        "() => document.querySelector('#queue-progress').innerText.includes('1 / 2 tasks done')"
    )
    assert "your answers: 1 (100% of all)" in page.inner_text("#queue-progress")

    # u takes a redundancy-1 answer back: the decided task is reopened and on screen again
    page.keyboard.press("u")
    page.wait_for_function(
        "(id) => document.querySelector('#task-area').dataset.taskId === id", arg=first
    )
    assert "taken back" in page.inner_text("#task-alert")
    assert Task.objects.get(pk=first).state == Task.State.OPEN
    page.screenshot(path=str(folder / "kb-undone.png"), full_page=True)
    page.keyboard.press("2")
    page.keyboard.press("Enter")
    next_task_shown(page, first)
    assert Annotation.objects.get(task_id=first).response == {"answer": "No"}

    # The curator withdraws the task on screen; Enter is refused inline, n opens the next one
    held = page.get_attribute("#task-area", "data-task-id")
    services.tasks_cancel(queue=TaskQueue.objects.get(pk=ten.pk), task_ids=[int(held)])
    page.keyboard.press("1")
    page.keyboard.press("Enter")
    page.wait_for_selector("#task-alert [data-status='409'] [data-next-task]")
    page.screenshot(path=str(folder / "kb-withdrawn.png"), full_page=True)
    page.keyboard.press("n")
    page.wait_for_selector("#task-area .empty")
    assert "No more tasks" in page.inner_text("#task-area")

    # g finds a queue by words of its title
    with page.expect_navigation():
        page.keyboard.press("h")
    page.keyboard.press("g")
    page.keyboard.type("number 11")
    assert page.locator("[data-queue-card]:visible").count() == 1
    page.screenshot(path=str(folder / "kb-home-finder.png"), full_page=True)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url.endswith(reverse("work", args=[fillers[-1].pk]))

    # Every kind by keyboard. 1 could begin 10 or 11, so it waits for a second digit (Enter
    # opens queue 1 at once); 2 to 6 open at once.
    for index, queue in enumerate(kinds, start=1):
        with page.expect_navigation():
            page.keyboard.press("h")
        if index == 1:
            page.keyboard.press("1")
        with page.expect_navigation():
            page.keyboard.press("Enter" if index == 1 else str(index))
        assert page.url.endswith(reverse("work", args=[queue.pk]))
        page.wait_for_selector("#task-area[data-task-id]")
        shown = page.get_attribute("#task-area", "data-task-id")
        press_all(page, KEYSTROKES[queue.kind])
        next_task_shown(page, shown)
        assert "No more tasks" in page.inner_text("#task-area")
        if queue.kind == "review":
            page.screenshot(path=str(folder / "kb-review-done.png"), full_page=True)
        assert Task.objects.get(queue=queue).state == Task.State.DECIDED, queue.kind

    assert page.js_errors == []
    expected_refusals = ("status of 409", "status of 400")  # the withdrawal, the unticked accept
    assert [e for e in page.console_errors if not any(r in e for r in expected_refusals)] == []
