"""A multi-image VisIT-Bench caption task worked with the keyboard alone (Debian chromium): the
instance's caption was sent back, so each of its two caption tasks shows both images (the one to
describe marked), the crowdworker writes each caption with e, types, Escape, Ctrl+Enter, and the
instance's combined caption labels the two images (Fig. 4)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotator.platform import roles
from curation.recipes.visit import pipelines
from curation.recipes.visit.models import VisitInstance
from tests.browser.conftest import new_page
from tests.curation.recipes.visit.helpers import multi_image_caption_round_two
from tests.factories import PASSWORD, ProjectFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SHOTS = "/tmp/visit-multi-image-shots"


def login(page, base: str, username: str) -> None:
    page.goto(base + reverse("login"))
    page.keyboard.type(username)
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    with page.expect_navigation():
        page.keyboard.press("Enter")


def test_a_multi_image_caption_task_by_keyboard(
    live_server, transactional_db, chromium, settings, tmp_path
):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.BLINDSPOT_PROTECTED_MEDIA_REDIRECT = ""
    author = UserFactory(username="author", role=roles.CROWDWORKER)
    reviewer = UserFactory(username="reviewer", role=roles.CROWDWORKER)
    captioner = UserFactory(username="captioner", role=roles.CROWDWORKER)
    curator = UserFactory(username="visitcurator", role=roles.CURATOR)
    project = ProjectFactory(members=[author, reviewer, captioner, curator])
    pipeline = pipelines.pipeline_create(project=project, name="Multi", created_by=curator)
    instance = multi_image_caption_round_two(pipeline, curator, author, reviewer)
    base = live_server.url
    page = new_page(chromium)
    page.set_default_timeout(20000)
    login(page, base, "captioner")
    page.goto(base + reverse("work", args=[pipeline.caption_queue.pk]))
    captions = ["The left photo shows four red cubes.", "The right photo shows two red cubes."]
    for k, text in enumerate(captions):
        page.wait_for_selector("#task-area[data-task-id]")
        task_id = page.locator("#task-area").get_attribute("data-task-id")
        # both images are on the page, loaded, in order; one is marked as the one to describe
        shots = page.locator("#task-area .gallery figure")
        assert shots.count() == 2
        page.wait_for_function(
            "[...document.querySelectorAll('#task-area .gallery img')]"
            ".every(img => img.complete && img.naturalWidth > 0)"
        )
        marks = [shots.nth(i).locator("figcaption").inner_text() for i in range(2)]
        assert sum("describe this one" in m for m in marks) == 1
        prompt = page.locator("#task-area .task-question").inner_text()
        n = int(prompt.split("Describe image ")[1][0])
        assert "describe this one" in marks[n - 1]
        page.screenshot(path=f"{SHOTS}-{k + 1}.png", full_page=True)
        page.keyboard.press("e")
        page.keyboard.press("Control+a")
        page.keyboard.type(text * 3)  # the queue asks for at least 80 characters
        page.keyboard.press("Escape")
        page.keyboard.press("Control+Enter")
        page.locator(f'#task-area[data-task-id="{task_id}"]').wait_for(state="detached")
    page.wait_for_selector("#task-area .empty")
    assert page.js_errors == [] and page.console_errors == []
    page.context.close()
    instance.refresh_from_db()
    assert instance.state == VisitInstance.State.DRAFTING
    lines = instance.caption.splitlines()
    assert [line.split(": ")[0] for line in lines] == ["Image 1", "Image 2"]
