"""The reports inbox and send back in Debian's chromium, as a crowdworker and as a curator.

Screenshots land in ``$BLINDSPOT_SCREENSHOTS`` (default: pytest's tmp dir) to be looked at.
"""

import pytest
from django.urls import reverse

from annotator import services
from annotator.models import Annotation, Report, SentBackAnnotation, Task
from annotator.platform import roles
from tests.browser.conftest import new_page
from tests.browser.test_curator_desk import log_in, shots
from tests.browser.test_keyboard_workspace import png_data_url
from tests.factories import ProjectFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.slow]
IS_TASK = "(id) => document.querySelector('#task-area').dataset.taskId === id"
NOT_TASK = (
    "(id) => { const a = document.querySelector('#task-area');"
    " return !a || (a.dataset.taskId !== id && !a.dataset.pending); }"
)


def _queue(project, title, n, redundancy=1):
    queue = services.queue_create(
        project=project,
        kind="vqa_choice",
        title=title,
        config={},
        redundancy=redundancy,
        max_redundancy=redundancy,
    )
    red = png_data_url("red")
    services.tasks_bulk_create(
        queue=queue,
        rows=[
            services.TaskRow(
                {
                    "image": {"url": red},
                    "question": f"Is the square red ({i})?",
                    "choices": ["Yes", "No"],
                }
            )
            for i in range(n)
        ],
    )
    return queue


def test_a_report_reaches_the_inbox_and_is_resolved(
    live_server, transactional_db, chromium, tmp_path
):
    worker = UserFactory(username="reporter", role=roles.CROWDWORKER)
    curator = UserFactory(username="inboxcurator", role=roles.CURATOR)
    project = ProjectFactory(name="Inbox project", members=[worker, curator])
    queue = _queue(project, "Red squares", 2)

    # The crowdworker reports a task from the workspace: "!" opens the form
    page = new_page(chromium)
    page.set_default_timeout(15000)
    log_in(page, live_server, "reporter")
    page.goto(live_server.url + reverse("work", args=[queue.pk]))
    page.wait_for_selector("#task-area[data-task-id]")
    reported = page.get_attribute("#task-area", "data-task-id")
    page.keyboard.press("!")
    page.select_option("#report-reason", "other")
    page.fill("#report-details", "The square is half blue")
    page.click(".report-form button[type=submit]")
    page.wait_for_function(NOT_TASK, arg=reported)
    assert page.js_errors == [] and page.console_errors == []
    page.context.close()

    # The curator sees the count on the project page and opens the inbox
    page = new_page(chromium)
    page.set_default_timeout(15000)
    log_in(page, live_server, "inboxcurator")
    page.goto(live_server.url + reverse("curator-project", args=[project.pk]))
    assert page.inner_text("[data-testid=reports-link]").split() == ["Reports", "1"]
    assert page.inner_text("[data-testid=queue-open-reports]") == "1 report"
    page.screenshot(path=str(shots(tmp_path) / "reports-project.png"), full_page=True)
    with page.expect_navigation():
        page.click("[data-testid=reports-link]")
    row = page.locator(f"[data-testid=reports] tr:has(a[href$='/tasks/{reported}/'])")
    text = row.inner_text()
    assert "reporter" in text and "Something else" in text and "The square is half blue" in text
    page.screenshot(path=str(shots(tmp_path) / "reports-inbox.png"), full_page=True)
    # … resolves it with a note: the open list is empty and says what happens next
    row.locator("input[name=note]").fill("Image replaced")
    with page.expect_navigation():
        row.locator("button[value=resolve]").click()
    assert f"Report {Report.objects.get().pk} resolved." in page.inner_text("body")
    assert "No open reports" in page.inner_text("[data-testid=reports-empty]")
    page.screenshot(path=str(shots(tmp_path) / "reports-empty.png"), full_page=True)
    page.goto(page.url.split("?")[0] + "?status=all")
    assert "Image replaced" in page.inner_text("[data-testid=reports]")
    assert page.js_errors == [] and page.console_errors == []
    report = Report.objects.get(task_id=int(reported))
    assert (report.status, report.handled_by, report.note) == (
        "resolved",
        curator,
        "Image replaced",
    )
    assert report.reason == "other: The square is half blue"
    page.context.close()


def test_an_answer_sent_back_is_answered_again_and_its_author_sees_the_note(
    live_server, transactional_db, chromium, tmp_path
):
    first = UserFactory(username="hasty", role=roles.CROWDWORKER)
    second = UserFactory(username="careful", role=roles.CROWDWORKER)
    curator = UserFactory(username="reviewer", role=roles.CURATOR)
    project = ProjectFactory(name="Review project", members=[first, second, curator])
    queue = _queue(project, "Red squares (review)", 1)
    claim = services.assignment_claim(queue=queue, annotator=first)
    task = claim.task
    services.annotation_submit(task_id=task.pk, annotator=first, response={"answer": "No"})
    task.refresh_from_db()
    assert task.state == "decided"

    # The curator sends hasty's answer back from the task page, with a note
    page = new_page(chromium)
    page.set_default_timeout(15000)
    log_in(page, live_server, "reviewer")
    page.goto(live_server.url + reverse("curator-task", args=[task.pk]))
    page.click("[data-send-back=hasty] summary")
    page.fill("[data-send-back=hasty] textarea[name=note]", "The square is red: look again")
    page.screenshot(path=str(shots(tmp_path) / "send-back-form.png"), full_page=True)
    with page.expect_navigation():
        page.click("[data-send-back=hasty] button[type=submit]")
    sent = page.inner_text("[data-testid=sent-back]")
    assert "hasty" in sent and "The square is red: look again" in sent and "reviewer" in sent
    assert "re-opened" in sent
    page.screenshot(path=str(shots(tmp_path) / "send-back-task.png"), full_page=True)
    # the people page shows hasty's acceptance rate
    page.goto(live_server.url + reverse("curator-project-people", args=[project.pk]))
    assert page.inner_text(f"#person-{first.pk} [data-testid=acceptance]").startswith("0%")
    page.screenshot(path=str(shots(tmp_path) / "send-back-people.png"), full_page=True)
    assert page.js_errors == [] and page.console_errors == []
    page.context.close()

    # hasty sees the note in their history
    page = new_page(chromium)
    page.set_default_timeout(15000)
    log_in(page, live_server, "hasty")
    page.goto(live_server.url + reverse("work-history", args=[queue.pk]))
    note = page.inner_text("[data-testid=sent-back-note]")
    assert "The square is red: look again" in note
    page.screenshot(path=str(shots(tmp_path) / "send-back-history.png"), full_page=True)
    assert page.js_errors == [] and page.console_errors == []
    page.context.close()

    # careful is served the task and answers it by keyboard: decided again
    page = new_page(chromium)
    page.set_default_timeout(15000)
    log_in(page, live_server, "careful")
    page.goto(live_server.url + reverse("work", args=[queue.pk]))
    page.wait_for_function(IS_TASK, arg=str(task.pk))
    page.keyboard.press("1")
    page.keyboard.press("Enter")
    page.wait_for_function(NOT_TASK, arg=str(task.pk))
    assert page.js_errors == [] and page.console_errors == []
    page.context.close()
    task.refresh_from_db()
    answers = list(
        Annotation.objects.filter(task=task).values_list("annotator__username", "response")
    )
    assert [who for who, _r in answers] == ["careful"]
    assert (task.state, task.outcome["label"]) == ("decided", answers[0][1]["answer"])
    assert SentBackAnnotation.objects.get(task=task).withdrawn_outcome["label"] == "No"
    assert Task.objects.get(pk=task.pk).done_count == 1
