"""A whole hunt with the keyboard alone (Debian chromium): a worker opens the round from the home
page, writes a question and its answer, sees the models' verdicts, picks a partner image among
the proposed ones and writes the second question; two other people verify the 2 × 2 in the
``vqa_choice`` queue; the curator's dashboard shows the fooling rates with a plot; the validated
item is published as a NaturalBench version and scored by ``manage.py evaluate``."""

from __future__ import annotations

import io

import pytest
from celery import current_app
from django.core.management import call_command
from django.urls import reverse

from annotator.platform import roles
from curation.corpora import demo_corpus
from curation.models import LLMProvider
from curation.recipes.framework.publish import publish_object
from curation.recipes.framework.registry import recipe_of
from curation.recipes.hunt.models import HuntCandidate, HuntCheck
from curation.recipes.hunt.rounds import round_create
from tests.browser.conftest import new_page
from tests.factories import PASSWORD, ProjectFactory, UserFactory
from tests.fake_openai import FakeOpenAI, VLMPlayers

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SHOTS = "/tmp/hunt-shots"


def login(page, base: str, username: str) -> None:
    page.goto(base + reverse("login"))
    page.keyboard.type(username)
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    with page.expect_navigation():
        page.keyboard.press("Enter")


def provider(project, fake, name, model, *, vision=True):
    return LLMProvider.objects.create(
        project=project,
        name=name,
        model=model,
        base_url=fake.base_url,
        api_key="sk-test",
        supports_vision=vision,
        timeout_s=5.0,
        max_retries=1,
    )


@pytest.fixture
def fake():
    server = FakeOpenAI()
    server.default = VLMPlayers(delay=0.05, fixed={"always-yes": "Yes"})
    yield server
    server.close()


def test_a_whole_hunt_by_keyboard(
    live_server, transactional_db, chromium, settings, tmp_path, fake, fast_llm_backoff
):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.BLINDSPOT_PROTECTED_MEDIA_REDIRECT = ""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    current_app.conf.task_always_eager = True
    worker = UserFactory(username="hunter", role=roles.CROWDWORKER)
    checkers = [UserFactory(username=f"checker{k}", role=roles.CROWDWORKER) for k in (1, 2)]
    curator = UserFactory(username="huntcurator", role=roles.CURATOR)
    project = ProjectFactory(members=[worker, *checkers, curator])
    pool = demo_corpus(project=project, created_by=curator)
    round_ = round_create(
        project=project,
        created_by=curator,
        name="Keyboard hunt",
        corpus=pool,
        targets=[provider(project, fake, "Yes-sayer", "always-yes")],
        blind=provider(project, fake, "Blind", "blind-1", vision=False),
    )
    base = live_server.url
    try:
        page = new_page(chromium)
        page.set_default_timeout(20000)
        login(page, base, "hunter")
        # Home → the round (key h) → the question, Tab, "n" for No, Enter
        with page.expect_navigation():
            page.keyboard.press("h")
        assert page.url.endswith(reverse("hunt-work", args=[round_.pk]))
        page.keyboard.type("Is there a purple elephant in this picture?")
        page.keyboard.press("Tab")
        page.keyboard.press("n")
        with page.expect_navigation():
            page.keyboard.press("Enter")
        item = HuntCandidate.objects.get()
        # The verdicts: the yes-sayer is fooled, the blind model answered from the text
        page.wait_for_selector('[data-testid="hunt-item"][data-state="partner"]')
        assert page.locator('[data-testid="answer"]').count() == 2
        assert "fooled" in page.locator('[data-testid="hunt-verdicts"]').inner_text()
        page.screenshot(path=f"{SHOTS}-1-partner.png", full_page=True)
        # Partner: key 1 picks the nearest proposal, q focuses the second question, Ctrl+Enter
        page.keyboard.press("1")
        page.keyboard.press("q")
        page.keyboard.type("Is this picture free of purple elephants?")
        with page.expect_navigation():
            page.keyboard.press("Control+Enter")
        page.wait_for_selector('[data-testid="hunt-result"]')
        assert page.locator('[data-testid="answer"]').count() == 8
        page.screenshot(path=f"{SHOTS}-2-result.png", full_page=True)
        item.refresh_from_db()
        assert item.state == HuntCandidate.State.VERIFYING
        page.context.close()

        # Two other people verify the four (image, question) items by keyboard
        for checker in checkers:
            page = new_page(chromium)
            page.set_default_timeout(20000)
            login(page, base, checker.username)
            with page.expect_navigation():
                page.keyboard.press("1")  # the verification queue is the first listed
            for _ in range(4):
                page.wait_for_selector("#task-area[data-task-id]")
                task_id = int(page.locator("#task-area").get_attribute("data-task-id"))
                intended = HuntCheck.objects.get(task_id=task_id).intended
                page.keyboard.press("1" if intended == "Yes" else "2")
                page.keyboard.press("Enter")
                page.locator(f'#task-area[data-task-id="{task_id}"]').wait_for(state="detached")
            page.context.close()
        item.refresh_from_db()
        assert item.state == HuntCandidate.State.VALIDATED and item.points == 10

        # The curator's dashboard: fooling rate 100% for the yes-sayer, and the plot
        page = new_page(chromium)
        login(page, base, "huntcurator")
        page.goto(base + reverse("curator-hunt-round", args=[round_.pk]))
        assert page.locator('[data-testid="rate-model-a"]').inner_text() == "100%"
        assert page.locator('[data-testid="hunt-plot"] svg').count() == 1
        page.screenshot(path=f"{SHOTS}-3-dashboard.png", full_page=True)
        assert not page.js_errors and not page.console_errors
        page.context.close()
    finally:
        current_app.conf.task_always_eager = False

    # Published as a NaturalBench version and scored by manage.py evaluate
    version = publish_object(recipe_of("hunt"), round_, label="v1", created_by=curator)
    out = io.StringIO()
    call_command("evaluate", "run", str(version.pk), "--provider", "Yes-sayer", stdout=out)
    call_command("evaluate", "leaderboard", str(version.pk), stdout=out)
    text = out.getvalue()
    assert "G-Acc" in text or "g_acc" in text.lower()


def test_a_two_option_question_by_keyboard(
    live_server, transactional_db, chromium, settings, tmp_path, fake, fast_llm_backoff
):
    """The question, its two options and the true option (a / b) by keyboard; the partner step
    offers the question with its options swapped, sent as is with Ctrl+Enter."""
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.BLINDSPOT_PROTECTED_MEDIA_REDIRECT = ""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    current_app.conf.task_always_eager = True
    worker = UserFactory(username="hunter", role=roles.CROWDWORKER)
    curator = UserFactory(username="huntcurator", role=roles.CURATOR)
    project = ProjectFactory(members=[worker, curator])
    round_ = round_create(
        project=project,
        created_by=curator,
        name="Two-option hunt",
        corpus=demo_corpus(project=project, created_by=curator),
        targets=[provider(project, fake, "A-sayer", "always-yes")],  # "Yes" reads "A"
        blind=provider(project, fake, "Blind", "blind-1", vision=False),
        question_type="multiple_choice",
    )
    base = live_server.url
    try:
        page = new_page(chromium)
        page.set_default_timeout(20000)
        login(page, base, "hunter")
        with page.expect_navigation():
            page.keyboard.press("h")
        assert page.url.endswith(reverse("hunt-work", args=[round_.pk]))
        page.keyboard.type("Which shape is the largest?")
        page.keyboard.press("Tab")
        page.keyboard.type("the circle")
        page.keyboard.press("Tab")
        page.keyboard.type("the square")
        page.keyboard.press("Tab")
        page.keyboard.press("b")
        page.screenshot(path=f"{SHOTS}-4-two-option-question.png", full_page=True)
        with page.expect_navigation():
            page.keyboard.press("Enter")
        item = HuntCandidate.objects.get()
        assert item.question == "Which shape is the largest?\nOption: A:the circle; B:the square;"
        page.wait_for_selector('[data-testid="hunt-item"][data-state="partner"]')
        assert "fooled" in page.locator('[data-testid="hunt-verdicts"]').inner_text()
        assert page.locator("#hunt-option-a-1").input_value() == "the square"
        page.keyboard.press("1")
        with page.expect_navigation():
            page.keyboard.press("Control+Enter")
        page.wait_for_selector('[data-testid="hunt-result"]')
        assert page.locator('[data-testid="answer"]').count() == 8
        page.screenshot(path=f"{SHOTS}-5-two-option-result.png", full_page=True)
        item.refresh_from_db()
        assert item.question_1 == "Which shape is the largest?\nOption: A:the square; B:the circle;"
        assert item.state == HuntCandidate.State.VERIFYING
        assert not page.js_errors and not page.console_errors
        page.context.close()
    finally:
        current_app.conf.task_always_eager = False
