"""The next task painted at the keydown (issue 28): Enter shows the task rendered ahead at once
and the submit's answer confirms it; a task someone else took meanwhile is replaced by the one
the server handed out; keys pressed on the painted task before its confirmation are kept."""

import pytest
from django.urls import reverse

from annotator import services
from annotator.models import Annotation, Assignment, Task
from annotator.platform import roles
from tests.browser.test_curator_desk import shots
from tests.browser.test_fonts import log_in
from tests.browser.test_keyboard_workspace import png_data_url
from tests.factories import ProjectFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# Every #task-area the page shows, in order, with whether it was painted ahead (pending).
WATCH = """() => {
  window.__shown = [];
  const seen = new Set();
  const note = () => {
    const a = document.querySelector('#task-area');
    if (!a || seen.has(a)) return;
    seen.add(a);
    window.__shown.push([a.dataset.taskId || '', !!a.dataset.pending]);
  };
  new MutationObserver(note).observe(document.body, { childList: true, subtree: true });
  note();
}"""
CONFIRMED = (
    "(id) => { const a = document.querySelector('#task-area');"
    " return a && a.dataset.taskId === id && !a.dataset.pending; }"
)


def _world(username: str, n: int = 4):
    worker = UserFactory(username=username, role=roles.CROWDWORKER)
    other = UserFactory(username=username + "2", role=roles.CROWDWORKER)
    project = ProjectFactory(members=[worker, other])
    queue = services.queue_create(
        project=project, kind="vqa_choice", title="Look-ahead queue", config={}, redundancy=1
    )
    image = png_data_url("teal")
    services.tasks_bulk_create(
        queue=queue,
        rows=[
            services.TaskRow({"image": {"url": image}, "question": f"Q{i}?", "choices": ["Y", "N"]})
            for i in range(n)
        ],
    )
    ids = Task.objects.filter(queue=queue).order_by("id").values_list("pk", flat=True)
    tasks = [str(pk) for pk in ids]
    return worker, other, queue, tasks


def test_a_painted_task_taken_meanwhile_gives_way_to_the_one_handed_out(
    live_server, transactional_db, browser_page, tmp_path
):
    worker, other, queue, tasks = _world("ahead")
    page = browser_page
    page.set_default_timeout(15000)
    log_in(page, live_server.url, "ahead")
    page.goto(live_server.url + reverse("work", args=[queue.pk]))
    page.wait_for_selector("#task-area[data-task-id]")
    page.evaluate(WATCH)
    assert page.get_attribute("#task-area", "data-task-id") == tasks[0]
    # Someone else claims the task this page rendered ahead
    assert str(services.assignment_claim(queue=queue, annotator=other).task.pk) == tasks[1]

    page.keyboard.press("1")
    page.keyboard.press("Enter")
    page.wait_for_function(CONFIRMED, arg=tasks[2])

    # The page painted task 2 at once, then showed task 3, which the server handed out
    assert page.evaluate("window.__shown") == [
        [tasks[0], False],
        [tasks[1], True],
        [tasks[2], False],
    ]
    assert not Assignment.objects.filter(task_id=tasks[1], annotator=worker).exists()
    assert Annotation.objects.get(task_id=tasks[0]).response == {"answer": "Y"}
    page.screenshot(path=str(shots(tmp_path) / "look-ahead-replaced.png"), full_page=True)


def test_keys_pressed_on_a_painted_task_before_its_confirmation_are_kept(
    live_server, transactional_db, browser_page, tmp_path
):
    worker, _other, queue, tasks = _world("quick")
    page = browser_page
    page.set_default_timeout(15000)
    log_in(page, live_server.url, "quick")
    page.goto(live_server.url + reverse("work", args=[queue.pk]))
    page.wait_for_selector("#task-area[data-task-id]")
    page.evaluate(WATCH)

    # Two answers typed straight through, and s on the third: no wait for any response
    for key in ["1", "Enter", "2", "Enter", "s"]:
        page.keyboard.press(key)
    page.wait_for_function(CONFIRMED, arg=tasks[3])

    answers = dict(Annotation.objects.filter(annotator=worker).values_list("task_id", "response"))
    assert answers == {int(tasks[0]): {"answer": "Y"}, int(tasks[1]): {"answer": "N"}}
    skipped = Assignment.objects.get(task_id=tasks[2], annotator=worker)
    assert skipped.state == Assignment.State.SKIPPED
    shown = page.evaluate("window.__shown")
    assert [task for task, _ahead in shown] == tasks
    assert [ahead for _task, ahead in shown] == [False, True, True, False]
    assert "2" in page.inner_text("[data-session-done]")
    page.screenshot(path=str(shots(tmp_path) / "look-ahead-kept-keys.png"), full_page=True)
