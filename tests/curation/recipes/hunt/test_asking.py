"""The ``hunt.ask`` job's own cost and its duplicate flags: run as a worker runs it (the platform's
``run_job``, a delivery carrying the job's token), the models played by the fake server."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.db import connection
from django.utils import timezone

from annotator.platform.models import Job
from annotator.platform.worker import jobs_sweep_lost, run_job
from curation.models import Generation
from curation.recipes.framework.jobs import job_work
from curation.recipes.hunt import asking
from curation.recipes.hunt import candidates as svc
from curation.recipes.hunt.models import HuntAnswer, HuntCandidate

pytestmark = pytest.mark.django_db


def _delivered(job: Job) -> SimpleNamespace:
    """What ``run_job`` reads of the Celery task for the job's message from the broker."""
    return SimpleNamespace(request=SimpleNamespace(id=job.attempt_token, is_eager=False, retries=0))


def _submit(hunt_round, worker, question, capture):
    image = hunt_round.corpus.samples.order_by("position").first().image
    with capture(execute=False):  # the job is sent by hand below, as a worker receives it
        return svc.candidate_submit(
            round_=hunt_round, worker=worker, image_id=image.pk, question=question, answer="no"
        )


def test_a_first_step_stores_every_answer_at_once_in_few_statements(
    hunt_round,
    crowdworker,
    monkeypatch,
    django_capture_on_commit_callbacks,
    django_assert_num_queries,
):
    # Given answers that all arrive within the gathering window (however busy the machine)
    monkeypatch.setattr(asking, "GATHER_S", 30.0)
    # (and the project's prompt already pinned, by an earlier question)
    earlier = _submit(
        hunt_round, crowdworker, "Is there a blue kite here?", django_capture_on_commit_callbacks
    )
    run_job(_delivered(earlier.job), earlier.job.pk, job_work)
    cand = _submit(
        hunt_round, crowdworker, "Is there a red kite here?", django_capture_on_commit_callbacks
    )
    woken = []

    def wake(name, data=None):
        stored = HuntAnswer.objects.filter(candidate=cand).count()
        woken.append((name, data, stored))

    monkeypatch.setattr(asking.wakeups, "wake", wake)
    # When a worker runs its job: the claim with the job and its starter (one statement on
    # PostgreSQL, else two); the round, the candidate, the targets, the prompts' pins; the
    # three answers in one write (savepoint, the slots' earlier answers cleared (a run after a
    # dead worker's), Generations, answers, release); the earlier questions, the pool's last
    # position and its samples at random positions (the round has no scorer: random partners),
    # the verdict with the partners; the end (savepoint, succeeded, any webhook?, release): 18
    # (19), and the two counts this test makes when woken
    with django_assert_num_queries((18 if connection.vendor == "postgresql" else 19) + 2):
        run_job(_delivered(cand.job), cand.job.pk, job_work)
    # Then the page was woken once with the answers, before they were stored (it shows them
    # without reading them back), and once for the verdict
    name = asking.wake_name(cand.pk)
    assert [(n, stored) for n, _data, stored in woken] == [(name, 0), (name, 3)]
    streamed, said = woken[0][1], woken[1][1]
    assert streamed["job"] == cand.job_id and said is None
    cand.refresh_from_db()
    assert cand.state == HuntCandidate.State.PARTNER and cand.job.status == "succeeded"
    assert HuntAnswer.objects.filter(candidate=cand).count() == 3
    assert Generation.objects.filter(job=cand.job).count() == 3
    # And what was streamed is what was stored
    rows = HuntAnswer.objects.filter(candidate=cand).values("target", "slot", "parsed", "correct")
    assert sorted(
        (a["target"] or 0, a["slot"], a["parsed"], a["correct"]) for a in streamed["answers"]
    ) == sorted((r["target"] or 0, r["slot"], r["parsed"], r["correct"]) for r in rows)
    # And the verdict read from the answers just stored is the one the stored rows give
    targets = list(hunt_round.targets.select_related("provider"))
    assert cand.verdict == asking.candidate_verdict(cand, targets, cand.verdict["slots"])


def test_a_step_run_again_after_its_worker_died_mid_way_replaces_the_answers_it_stored(
    hunt_round, crowdworker, django_capture_on_commit_callbacks
):
    # Given a job whose worker died after storing the answers, before the verdict: the
    # candidate still waits for them, the answers are there
    cand = _submit(
        hunt_round, crowdworker, "Is there a green kite here?", django_capture_on_commit_callbacks
    )
    asking.ask_run(hunt_round, job_id=cand.job_id, candidate_id=cand.pk, step=asking.FIRST)
    HuntCandidate.objects.filter(pk=cand.pk).update(
        state=HuntCandidate.State.ASKING, verdict={}, neighbours={}
    )
    first = set(HuntAnswer.objects.filter(candidate=cand).values_list("pk", flat=True))
    assert len(first) == 3
    # When the step runs again (the job retried)
    asking.ask_run(hunt_round, job_id=cand.job_id, candidate_id=cand.pk, step=asking.FIRST)
    # Then it ends as a first run does, with one answer a slot and target, all new
    cand.refresh_from_db()
    assert cand.state == HuntCandidate.State.PARTNER and not cand.error
    again = set(HuntAnswer.objects.filter(candidate=cand).values_list("pk", flat=True))
    assert len(again) == 3 and not again & first


def test_a_near_duplicate_is_flagged_and_a_question_of_another_length_is_not(
    hunt_round, crowdworker, other_worker, django_capture_on_commit_callbacks
):
    def asked(worker, question: str) -> HuntCandidate:
        """The question submitted, and its models' job run."""
        cand = _submit(hunt_round, worker, question, django_capture_on_commit_callbacks)
        run_job(_delivered(cand.job), cand.job.pk, job_work)
        return cand

    first = asked(crowdworker, "Is the mug left of the laptop?")
    near = asked(other_worker, "Is the mugs left of the laptop?")
    other = asked(other_worker, "Is the mug left of the laptop, on the shelf by the window?")
    near.refresh_from_db()
    other.refresh_from_db()
    assert near.duplicate_of_id == first.pk and 0.9 <= near.duplicate_score < 1.0
    assert other.duplicate_of_id is None and other.state == HuntCandidate.State.PARTNER


def test_answers_streamed_but_not_stored_fail_the_item_and_wake_the_page_again(
    hunt_round, crowdworker, monkeypatch, django_capture_on_commit_callbacks
):
    # Given a question whose answers cannot be stored once they are in (and streamed)
    cand = _submit(
        hunt_round, crowdworker, "Is there a white kite here?", django_capture_on_commit_callbacks
    )
    woken = []
    monkeypatch.setattr(asking.wakeups, "wake", lambda name, data=None: woken.append(data))

    def no_room(*args, **kwargs):
        raise RuntimeError("no room left")

    monkeypatch.setattr(HuntAnswer.objects, "bulk_create", no_room)
    # When the step runs
    with pytest.raises(RuntimeError):
        asking.ask_run(hunt_round, job_id=cand.job_id, candidate_id=cand.pk, step=asking.FIRST)
    # Then the page had the answers, then was told to read the item again: failed, with why
    assert len(woken) == 2 and len(woken[0]["answers"]) == 3 and woken[1] is None
    cand.refresh_from_db()
    assert cand.state == HuntCandidate.State.FAILED and "no room left" in cand.error
    assert not HuntAnswer.objects.filter(candidate=cand).exists()


def test_a_question_whose_job_the_sweep_fails_is_failed_at_once(
    hunt_round, crowdworker, monkeypatch, django_capture_on_commit_callbacks
):
    # Given a question whose job's worker died mid-way (running, silent for long)
    cand = _submit(
        hunt_round, crowdworker, "Is there a black kite here?", django_capture_on_commit_callbacks
    )
    long_ago = timezone.now() - timedelta(hours=1)
    Job.objects.filter(pk=cand.job_id).update(
        status=Job.Status.RUNNING, started_at=long_ago, heartbeat_at=long_ago, worker="gone 1"
    )
    woken = []
    monkeypatch.setattr(svc.wakeups, "wake", lambda name, data=None: woken.append(name))
    # When the lost-job sweep fails it (a hunt step is not run again by itself)
    with django_capture_on_commit_callbacks(execute=True):
        assert jobs_sweep_lost()["failed"] == 1
    # Then the question is failed with the job's reason without its page being read, so the
    # worker's list and the round's dashboard stop counting it as answering; its page is told
    cand.refresh_from_db()
    assert cand.state == HuntCandidate.State.FAILED
    assert cand.error.startswith("The models' job failed: The worker stopped")
    assert woken == [asking.wake_name(cand.pk)]
    # And a question the job had already moved on is left alone
    done = _submit(
        hunt_round, crowdworker, "Is there a grey kite here?", django_capture_on_commit_callbacks
    )
    HuntCandidate.objects.filter(pk=done.pk).update(state=HuntCandidate.State.PARTNER)
    svc.candidate_job_failed(job_id=done.job_id, error="late")
    done.refresh_from_db()
    assert done.state == HuntCandidate.State.PARTNER
