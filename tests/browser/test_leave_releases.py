"""Leaving the workspace releases the held task at once (pagehide → sendBeacon), keyboard only."""

import time

import pytest

from annotator import services
from annotator.models import Assignment
from annotator.platform import roles
from tests.browser.conftest import new_page
from tests.browser.test_fonts import log_in
from tests.browser.test_keyboard_workspace import png_data_url
from tests.factories import ProjectFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def lease_state(task_id: int) -> str:
    return Assignment.objects.get(task_id=task_id).state


def wait_for_state(task_id: int, state: str, seconds: float = 10) -> str:
    deadline = time.monotonic() + seconds
    while (now := lease_state(task_id)) != state and time.monotonic() < deadline:
        time.sleep(0.1)
    return now


def test_h_and_closing_the_tab_release_the_task(live_server, transactional_db, chromium):
    worker = UserFactory(username="leaver", role=roles.CROWDWORKER)
    project = ProjectFactory(members=[worker])
    queue = services.queue_create(
        project=project, kind="vqa_choice", title="Leave queue", config={}, redundancy=1
    )
    red = png_data_url("red")
    services.tasks_bulk_create(
        queue=queue,
        rows=[services.TaskRow({"image": {"url": red}, "question": "Q?", "choices": ["Y", "N"]})],
    )
    page = new_page(chromium)
    page.set_default_timeout(15000)
    log_in(page, live_server.url, "leaver")
    with page.expect_navigation():
        page.keyboard.press("1")
    page.wait_for_selector("#task-area[data-task-id]")
    task_id = int(page.get_attribute("#task-area", "data-task-id"))
    assert lease_state(task_id) == "leased"

    # h goes back to the queues: the task is released at once, not in 10 minutes
    with page.expect_navigation():
        page.keyboard.press("h")
    assert page.url.rstrip("/") == live_server.url.rstrip("/")
    assert wait_for_state(task_id, "expired") == "expired"

    # opened again, then the tab closed: released too
    with page.expect_navigation():
        page.keyboard.press("1")
    page.wait_for_selector("#task-area[data-task-id]")
    assert lease_state(task_id) == "leased"
    errors = page.js_errors + page.console_errors
    page.close(run_before_unload=True)
    assert wait_for_state(task_id, "expired") == "expired"
    assert errors == []
