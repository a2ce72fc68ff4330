"""A crowdworker undoes an answer with `u` and sees it in their history (`H`), keyboard only."""

import os
from pathlib import Path

import pytest
from django.urls import reverse

from annotator import services
from annotator.models import Annotation, UndoneAnnotation
from annotator.platform import roles
from tests.browser.test_fonts import log_in
from tests.browser.test_keyboard_workspace import png_data_url
from tests.factories import ProjectFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SHOTS = Path(os.environ.get("BLINDSPOT_SHOTS", "/tmp"))
# Functions, not expressions: Playwright evals a bare expression, which the CSP refuses.
IS_TASK = "(id) => document.querySelector('#task-area').dataset.taskId === id"
# another task, confirmed (a task painted ahead is pending until the answer is in)
NOT_TASK = (
    "(id) => { const a = document.querySelector('#task-area');"
    " return a.dataset.taskId !== id && !a.dataset.pending; }"
)


def test_undo_by_key_then_history(live_server, transactional_db, browser_page):
    worker = UserFactory(username="undoworker", role=roles.CROWDWORKER)
    project = ProjectFactory(members=[worker])
    queue = services.queue_create(
        project=project, kind="vqa_choice", title="Undo queue", config={}, redundancy=2
    )
    red = png_data_url("red")
    services.tasks_bulk_create(
        queue=queue,
        rows=[
            services.TaskRow(
                {"image": {"url": red}, "question": f"Q{i}?", "choices": ["Yes", "No"]}
            )
            for i in range(2)
        ],
    )
    page = browser_page
    page.set_default_timeout(15000)
    log_in(page, live_server.url, "undoworker")
    page.goto(live_server.url + reverse("work", args=[queue.pk]))
    page.wait_for_selector("#task-area[data-task-id]")
    first = page.get_attribute("#task-area", "data-task-id")

    # The wrong key: "1" (Yes) and Enter; the next task comes
    page.keyboard.press("1")
    page.keyboard.press("Enter")
    page.wait_for_function(NOT_TASK, arg=first)
    # u takes it back: the first task is there again, with a message
    page.keyboard.press("u")  # at once: the key works before htmx has settled the new task
    page.wait_for_function(IS_TASK, arg=first)
    page.screenshot(path=str(SHOTS / "undo-workspace.png"))
    assert "taken back" in page.inner_text("#task-alert")
    page.screenshot(path=str(SHOTS / "undo-workspace.png"))
    page.keyboard.press("2")
    page.keyboard.press("Enter")
    page.wait_for_function(NOT_TASK, arg=first)

    # H opens the history: the undone answer struck through, the standing one undoable
    with page.expect_navigation():
        page.keyboard.press("H")
    rows = page.locator("[data-testid=history] tbody tr")
    assert rows.count() == 2
    text = page.inner_text("[data-testid=history]")
    assert "answer: No" in text and "answer: Yes" in text and "undone at" in text
    page.screenshot(path=str(SHOTS / "undo-history.png"))
    # b goes back to the task
    with page.expect_navigation():
        page.keyboard.press("b")
    page.wait_for_selector("#task-area[data-task-id]")
    assert page.js_errors == [] and page.console_errors == []

    assert list(
        Annotation.objects.filter(task_id=int(first)).values_list("response", flat=True)
    ) == [{"answer": "No"}]
    assert UndoneAnnotation.objects.get(task_id=int(first)).response == {"answer": "Yes"}
