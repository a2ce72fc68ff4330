"""The curator's desk in Debian's chromium: the task browser with the keyboard (issue 27).

Screenshots land in ``$BLINDSPOT_SCREENSHOTS`` (default: pytest's tmp dir) to be looked at.
"""

import os
from pathlib import Path

import pytest
from django.urls import reverse

from annotator import services
from annotator.platform import roles
from tests.browser.test_keyboard_workspace import png_data_url
from tests.factories import PASSWORD, ProjectFactory, QueueFactory, TaskFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def shots(tmp_path) -> Path:
    folder = Path(os.environ.get("BLINDSPOT_SCREENSHOTS", tmp_path))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def log_in(page, live_server, username):
    page.goto(live_server.url + reverse("login"))
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    with page.expect_navigation():
        page.keyboard.press("Enter")


def test_curator_finds_a_task_by_text_and_opens_it_with_the_keyboard(
    live_server, transactional_db, browser_page, tmp_path
):
    curator = UserFactory(username="desk", role=roles.CURATOR)
    project = ProjectFactory(members=[curator])
    queue = QueueFactory(project=project, title="Is it red?")
    TaskFactory.create_batch(60, queue=queue)
    zebra = TaskFactory(
        queue=queue,
        payload={
            "image": {"url": png_data_url("gray")},
            "question": "Is the zebra striped?",
            "choices": ["Yes", "No"],
        },
    )
    expect = pytest.importorskip("playwright.sync_api").expect
    page = browser_page
    page.set_default_timeout(15000)
    log_in(page, live_server, "desk")

    page.goto(live_server.url + reverse("curator-queue-tasks", args=[queue.pk]))
    assert page.locator("[data-row]").count() == 50
    assert "more than 1,000" not in page.content() and "61 tasks match" in page.content()
    page.screenshot(path=str(shots(tmp_path) / "desk-browser.png"), full_page=True)

    page.keyboard.press("/")  # the search field
    page.keyboard.type("zebra")
    expect(page.locator("[data-row]")).to_have_count(1)
    page.wait_for_url("**q=zebra**")  # htmx pushed the filters into the address
    page.keyboard.press("Escape")
    page.keyboard.press("j")
    assert "row-current" in page.locator("[data-row]").first.get_attribute("class")
    page.keyboard.press("Enter")
    page.wait_for_url("**" + reverse("curator-task", args=[zebra.pk]))
    page.screenshot(path=str(shots(tmp_path) / "desk-task.png"), full_page=True)
    assert page.js_errors == [] and page.console_errors == []


def test_curator_settles_a_tie_from_the_task_page(
    live_server, transactional_db, browser_page, tmp_path
):
    curator = UserFactory(username="settler", role=roles.CURATOR)
    ann, bea = (UserFactory(username=n, role=roles.CROWDWORKER) for n in ("ann", "bea"))
    project = ProjectFactory(members=[curator, ann, bea])
    queue = QueueFactory(project=project, title="Is it red?", redundancy=2, max_redundancy=2)
    task = TaskFactory(
        queue=queue,
        payload={
            "image": {"url": png_data_url("red")},
            "question": "Red?",
            "choices": ["Yes", "No"],
        },
    )
    for person, answer in ((ann, "Yes"), (bea, "No")):
        claim = services.assignment_claim(queue=queue, annotator=person)
        services.annotation_submit(
            task_id=claim.assignment.task_id,
            annotator=person,
            response={"answer": answer},
            duration_ms=3000,
        )
    task.refresh_from_db()
    assert task.state == "undecided"
    page = browser_page
    page.set_default_timeout(15000)
    log_in(page, live_server, "settler")

    page.goto(live_server.url + reverse("curator-task", args=[task.pk]))
    page.click("summary:has-text('Settle…')")
    page.check('input[name=pick][value=\'{"answer": "Yes"}\']')
    page.fill("input[name=reason]", "the image is plainly red")
    page.screenshot(path=str(shots(tmp_path) / "desk-settle-form.png"), full_page=True)
    with page.expect_navigation():
        page.click(".settle-form button[type=submit]")
    assert f"Task {task.pk} settled." in page.content()
    assert "curator-settled" in page.content()
    page.screenshot(path=str(shots(tmp_path) / "desk-settled.png"), full_page=True)
    task.refresh_from_db()
    assert (task.state, task.outcome["label"], task.settle_reason) == (
        "decided",
        "Yes",
        "the image is plainly red",
    )
    assert page.js_errors == [] and page.console_errors == []
