"""After a curator withdraws the task on screen, Enter opens the next one (no dead end)."""

import pytest
from django.urls import reverse

from annotator import services
from annotator.models import TaskQueue
from annotator.platform import roles
from tests.browser.test_fonts import log_in
from tests.browser.test_keyboard_workspace import png_data_url
from tests.factories import ProjectFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_withdrawn_task_then_enter_opens_the_next(live_server, transactional_db, browser_page):
    worker = UserFactory(username="withdrawn", role=roles.CROWDWORKER)
    project = ProjectFactory(members=[worker])
    queue = services.queue_create(
        project=project, kind="vqa_choice", title="Withdraw queue", config={}, redundancy=1
    )
    red = png_data_url("red")
    services.tasks_bulk_create(
        queue=queue,
        rows=[
            services.TaskRow({"image": {"url": red}, "question": f"Q{i}?", "choices": ["Y", "N"]})
            for i in range(2)
        ],
    )
    page = browser_page
    page.set_default_timeout(15000)
    log_in(page, live_server.url, "withdrawn")
    page.goto(live_server.url + reverse("work", args=[queue.pk]))
    page.wait_for_selector("#task-area[data-task-id]")
    held = page.get_attribute("#task-area", "data-task-id")

    # The curator withdraws the task on screen
    services.tasks_cancel(queue=TaskQueue.objects.get(pk=queue.pk), task_ids=[int(held)])

    # The answer is refused inline (409) with a keyed Next; Enter opens the next task
    page.keyboard.press("1")
    page.keyboard.press("Enter")
    page.wait_for_selector("#task-alert [data-status='409'] [data-next-task]")
    assert "Enter" in page.inner_text("#task-alert [data-next-task]")
    page.keyboard.press("Enter")
    page.wait_for_function(
        "(id) => { const a = document.querySelector('#task-area');"
        " return a && a.dataset.taskId && a.dataset.taskId !== id; }",
        arg=held,
    )
    refused = [e for e in page.console_errors if "status of 409" in e]
    assert len(refused) == 1
    assert page.js_errors == [] and [e for e in page.console_errors if e not in refused] == []
