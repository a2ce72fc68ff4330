"""The hunt's pages over HTTP: the worker's home card, workspace, item page (polled verdicts,
partner step) and own items; the curator's round dashboard; 404 for anything out of reach."""

from __future__ import annotations

import re
import time
from types import SimpleNamespace

import pytest
from django.urls import reverse

from annotator.platform import wakeups
from annotator.platform.models import Job
from curation.models import LLMProvider
from curation.recipes.hunt import asking, views
from curation.recipes.hunt import candidates as svc
from curation.recipes.hunt.asking import wake_name
from curation.recipes.hunt.models import HuntAnswer, HuntCandidate, HuntRound

pytestmark = pytest.mark.django_db


def _image_on(page: str) -> str:
    return re.search(r'data-image="(\d+)"', page).group(1)


def test_a_worker_hunts_through_the_pages(
    client, crowdworker, hunt_round, eager, django_capture_on_commit_callbacks
):
    client.force_login(crowdworker)
    # The home page lists the open round
    home = client.get(reverse("home")).content.decode()
    assert reverse("hunt-work", args=[hunt_round.pk]) in home and "Round 1" in home
    work = client.get(reverse("hunt-work", args=[hunt_round.pk]))
    assert work.status_code == 200
    image = _image_on(work.content.decode())
    # Submitting runs the models in a job and lands on the item's page
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("hunt-submit", args=[hunt_round.pk]),
            {"image": image, "question": "Is there a cat in this picture?", "answer": "no"},
        )
    cand = HuntCandidate.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("hunt-item", args=[hunt_round.pk, cand.pk])
    page = client.get(response["Location"]).content.decode()
    assert page.count('data-testid="answer"') == 3  # two targets and the blind model
    assert 'data-state="partner"' in page and "hx-trigger" not in page  # done: no polling
    assert "Vision A" not in page  # the round hides the targets' names from workers
    # The partner step, then the pair's result
    partner = cand.neighbours["images"][0]["id"]
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            reverse("hunt-partner", args=[hunt_round.pk, cand.pk]),
            {"partner": partner, "question_1": "Is there a dog in this picture?"},
        )
    page = client.get(reverse("hunt-item", args=[hunt_round.pk, cand.pk])).content.decode()
    assert page.count('data-testid="answer"') == 12
    assert 'data-testid="hunt-result"' in page
    mine = client.get(reverse("hunt-mine", args=[hunt_round.pk])).content.decode()
    assert "Is there a cat in this picture?" in mine


def test_a_running_item_polls_its_status_with_few_queries(
    client, crowdworker, hunt_round, django_assert_max_num_queries
):
    image = hunt_round.corpus.samples.first().image
    cand = HuntCandidate.objects.create(
        round=hunt_round,
        worker=crowdworker,
        image=image,
        question="Is it a square?",
        answer="a0",
        normal="is it a square",
    )
    client.force_login(crowdworker)
    url = reverse("hunt-item", args=[hunt_round.pk, cand.pk]) + "?part=status"
    # session, user, roles, round (with its blind model), item, targets, answers
    with django_assert_max_num_queries(7):
        fragment = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    # A long-poll: the next request waits for the job's wake-up
    assert "wait=1" in fragment and 'hx-trigger="load"' in fragment and "asking" in fragment


def test_the_long_poll_returns_when_the_job_wakes_the_item(
    client, crowdworker, hunt_round, monkeypatch
):
    monkeypatch.setattr(views, "WAIT_S", 0.3)
    image = hunt_round.corpus.samples.first().image
    cand = HuntCandidate.objects.create(
        round=hunt_round,
        worker=crowdworker,
        image=image,
        question="Is it a square?",
        answer="a0",
        normal="is it a square",
    )
    client.force_login(crowdworker)
    url = reverse("hunt-item", args=[hunt_round.pk, cand.pk]) + "?part=status&wait=1"
    started = time.monotonic()
    client.get(url)
    assert time.monotonic() - started >= 0.3  # nothing happened: it waited the bound
    wakeups.wake(wake_name(cand.pk))
    HuntCandidate.objects.filter(pk=cand.pk).update(state=HuntCandidate.State.PARTNER)
    started = time.monotonic()
    fragment = client.get(url).content.decode()
    assert time.monotonic() - started < 0.3 and 'data-state="partner"' in fragment


def _running(hunt_round, crowdworker) -> HuntCandidate:
    """A question the models are answering (its job made, not run)."""
    job = Job.objects.create(kind="hunt.ask", params={}, created_by=crowdworker)
    return HuntCandidate.objects.create(
        round=hunt_round,
        worker=crowdworker,
        image=hunt_round.corpus.samples.first().image,
        question="Is it a square?",
        answer="a0",
        normal="is it a square",
        job=job,
    )


def test_the_long_poll_shows_the_answers_the_job_streams_without_reading_them_back(
    client, crowdworker, hunt_round, django_assert_max_num_queries
):
    cand = _running(hunt_round, crowdworker)
    target = hunt_round.targets.order_by("position").first()
    answer = HuntAnswer(target=target, slot="q0_i0", parsed="No", correct=False, text="No, round")
    # Given the job's wake-up with an answer it has not stored yet
    wakeups.wake(wake_name(cand.pk), asking.streamed(cand.job_id, [answer]))
    client.force_login(crowdworker)
    url = reverse("hunt-item", args=[hunt_round.pk, cand.pk]) + "?part=status&wait=1"
    # When the page's long-poll returns: no query after the wake-up (the same 7 as a poll)
    with django_assert_max_num_queries(7):
        fragment = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    # Then the answer is on it, and the page goes on waiting for the rest
    assert fragment.count('data-testid="answer"') == 1 and "No, round" in fragment
    assert "hunt-fooled" in fragment and "wait=1" in fragment
    assert not HuntAnswer.objects.filter(candidate=cand).exists()


def test_the_long_poll_ignores_an_earlier_jobs_answers_and_reads_anything_else_afresh(
    client, crowdworker, hunt_round
):
    cand = _running(hunt_round, crowdworker)
    target = hunt_round.targets.order_by("position").first()
    answer = HuntAnswer(target=target, slot="q0_i0", parsed="No", correct=False, text="Old one")
    client.force_login(crowdworker)
    url = reverse("hunt-item", args=[hunt_round.pk, cand.pk]) + "?part=status&wait=1"
    # An earlier (failed) job's answers: not shown
    wakeups.wake(wake_name(cand.pk), asking.streamed(cand.job_id + 1000, [answer]))
    fragment = client.get(url).content.decode()
    assert "Old one" not in fragment and 'data-testid="answer"' not in fragment
    # A wake-up that says something else: the item is read again
    HuntCandidate.objects.filter(pk=cand.pk).update(state=HuntCandidate.State.PARTNER)
    wakeups.wake(wake_name(cand.pk), asking.streamed(cand.job_id, [answer]))
    wakeups.wake(wake_name(cand.pk))
    fragment = client.get(url).content.decode()
    assert 'data-state="partner"' in fragment


def test_an_item_whose_job_died_says_so_and_is_asked_again(
    client, crowdworker, hunt_round, eager, django_capture_on_commit_callbacks
):
    # Given a question whose job failed without an answer (the platform's verdict on a job
    # whose worker stopped heartbeating)
    image = hunt_round.corpus.samples.first().image
    with django_capture_on_commit_callbacks(execute=False):
        cand = svc.candidate_submit(
            round_=hunt_round,
            worker=crowdworker,
            image_id=image.pk,
            question="Is there a kite in the sky?",
            answer="yes",
        )
    cand.job.status, cand.job.error = "failed", "The worker stopped (no heartbeat for 120 s)."
    cand.job.save(update_fields=["status", "error"])
    client.force_login(crowdworker)
    # When its worker's page asks for the item's status
    url = reverse("hunt-item", args=[hunt_round.pk, cand.pk]) + "?part=status"
    fragment = client.get(url).content.decode()
    # Then the item is failed, says why, and offers to ask again
    assert (
        "The worker stopped" in fragment
        and reverse("hunt-again", args=[hunt_round.pk, cand.pk]) in fragment
    )
    cand.refresh_from_db()
    assert cand.state == HuntCandidate.State.FAILED
    # And asking again runs the models (a new job) to the partner step
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("hunt-again", args=[hunt_round.pk, cand.pk]))
    cand.refresh_from_db()
    assert cand.state == HuntCandidate.State.PARTNER and cand.job.status == "succeeded"


def test_refusals_keep_the_text_and_say_why(client, crowdworker, hunt_round):
    client.force_login(crowdworker)
    image = hunt_round.corpus.samples.first().image
    response = client.post(
        reverse("hunt-submit", args=[hunt_round.pk]),
        {"image": image.pk, "question": "Dog?", "answer": "yes"},
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert "at least 8 characters" in page and "Dog?" in page
    assert not HuntCandidate.objects.exists()


def test_out_of_reach_answers_404(
    client, crowdworker, other_worker, researcher, curator, hunt_round
):
    image = hunt_round.corpus.samples.first().image
    theirs = HuntCandidate.objects.create(
        round=hunt_round,
        worker=other_worker,
        image=image,
        question="Is it a circle?",
        answer="a0",
        normal="is it a circle",
    )
    client.force_login(crowdworker)
    assert client.get(reverse("hunt-item", args=[hunt_round.pk, theirs.pk])).status_code == 404
    for person in (researcher, curator):  # the workspace is crowdworkers'
        client.force_login(person)
        assert client.get(reverse("hunt-work", args=[hunt_round.pk])).status_code == 404
    HuntRound.objects.filter(pk=hunt_round.pk).update(state=HuntRound.State.CLOSED)
    client.force_login(crowdworker)
    assert client.get(reverse("hunt-work", args=[hunt_round.pk])).status_code == 404
    assert "Round 1" not in client.get(reverse("home")).content.decode()


def test_the_curator_dashboard_shows_fooling_rates_with_a_plot(
    client, curator, crowdworker, hunt_round, eager, django_capture_on_commit_callbacks
):
    image = hunt_round.corpus.samples.first().image
    with django_capture_on_commit_callbacks(execute=True):
        svc.candidate_submit(
            round_=hunt_round,
            worker=crowdworker,
            image_id=image.pk,
            question="Is there a cat in this picture?",
            answer="no",
        )
    client.force_login(curator)
    page = client.get(reverse("curator-hunt-round", args=[hunt_round.pk])).content.decode()
    assert 'data-testid="hunt-rates"' in page
    assert 'data-testid="rate-model-b">100%' in page  # the yes-sayer on a "No" item
    assert "<svg" in page and "Fooling rate per target" in page
    assert "Yes-sayer" in page  # curators see the names


def test_a_two_option_round_asks_for_options_and_offers_them_swapped(
    client, crowdworker, two_option_round, eager, django_capture_on_commit_callbacks
):
    round_ = two_option_round
    client.force_login(crowdworker)
    work = client.get(reverse("hunt-work", args=[round_.pk])).content.decode()
    assert 'name="option_a"' in work and 'data-key="a"' in work and 'value="yes"' not in work
    image = _image_on(work)
    url = reverse("hunt-submit", args=[round_.pk])
    # A missing option: the page says so and keeps what was typed
    body = {"image": image, "question": "Which animal is it?", "option_a": "cat", "answer": "a"}
    refused = client.post(url, body)
    assert refused.status_code == 400 and "Write option B" in refused.content.decode()
    assert 'value="cat"' in refused.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {**body, "option_b": "dog"})
    cand = HuntCandidate.objects.get()
    page = client.get(response["Location"]).content.decode()
    # The question shows its options; the partner step offers them swapped for the second one
    assert "1. Which animal is it?" in page and "true: A" in page
    assert 'name="option_a_1" value="dog"' in page and 'name="option_b_1" value="cat"' in page
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            reverse("hunt-partner", args=[round_.pk, cand.pk]),
            {
                "partner": cand.neighbours["images"][0]["id"],
                "question_1": "Which animal is it?",
                "option_a_1": "dog",
                "option_b_1": "cat",
            },
        )
    cand.refresh_from_db()
    assert cand.question_1 == "Which animal is it?\nOption: A:dog; B:cat;"
    page = client.get(reverse("hunt-item", args=[round_.pk, cand.pk])).content.decode()
    assert page.count('data-testid="answer"') == 12


def test_a_stand_in_target_is_labelled_once():
    offline, real = LLMProvider.Kind.OFFLINE, LLMProvider.Kind.OPENAI

    def round_of(hide: bool, *providers):
        targets = [
            SimpleNamespace(alias=f"Model {chr(65 + k)}", provider=SimpleNamespace(name=n, kind=kd))
            for k, (n, kd) in enumerate(providers)
        ]
        return SimpleNamespace(hide_targets=hide, _targets_read=targets)

    shown = views.target_names(
        round_of(
            False,
            ("Stand-in target A (offline rule)", offline),
            ("Rule B", offline),
            ("GPT-x", real),
        ),
        for_worker=True,
    )
    assert shown == {
        "Model A": "Model A · Stand-in target A (offline rule)",
        "Model B": "Model B · Rule B (stand-in: an offline rule, not a model)",
        "Model C": "Model C · GPT-x",
    }
    hidden = views.target_names(round_of(True, ("Stand-in target A", offline)), for_worker=True)
    assert hidden == {"Model A": "Model A (stand-in: an offline rule, not a model)"}
