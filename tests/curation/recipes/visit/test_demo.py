"""The demo pipeline: the twelve real instances of ``annotator.demo.visit_bench`` run through the
real stages with the offline drafter and judge, leaving work of every kind for a visitor."""

from __future__ import annotations

import pytest

from annotator.models import Task
from curation.recipes.visit import demo, selectors
from curation.recipes.visit.models import VisitInstance, VisitPair
from evaluation.models import JudgmentSet

pytestmark = pytest.mark.django_db


def _open(queue) -> int:
    return Task.objects.filter(queue=queue, state=Task.State.OPEN).count()


def test_demo_leaves_tasks_of_each_kind_and_a_labelled_leaderboard(
    project, curator, media, eager, django_capture_on_commit_callbacks
):
    # when the demo is built (its jobs run in this process, as they would after each commit)
    with django_capture_on_commit_callbacks(execute=True):
        pipeline = demo.visit_demo(project=project, curator=curator)
    pipeline.refresh_from_db()
    # then every kind of task waits for a visitor
    assert _open(pipeline.instruction_queue) == 2
    assert _open(pipeline.caption_queue) == 1
    assert _open(pipeline.review_queue) == demo.LEFT_IN_REVIEW
    assert _open(pipeline.rating_queue) == demo.LEFT_TO_RATE
    # the references are the offline drafter's, 8 verified, 1 discarded
    states = {
        s: VisitInstance.objects.filter(pipeline=pipeline, state=s).count()
        for s in ("verified", "discarded", "verifying", "captioning")
    }
    assert states == {"verified": 8, "discarded": 1, "verifying": 3, "captioning": 1}
    assert all(
        r.offline for i in pipeline.instances.filter(origin="imported") for r in i.references.all()
    )
    # the crowd's rated tuples reached the evaluation app
    assert VisitPair.objects.filter(pipeline=pipeline, decided_at__isnull=False).count() == 6
    human = JudgmentSet.objects.get(pk=pipeline.human_set_id)
    assert (human.kind, human.pair_count) == ("human", 6)
    # and the leaderboard ranks both models and the reference, labelled as the offline judge
    board = selectors.leaderboard(pipeline)
    assert board["judge_set"].judge == "Offline judge (length heuristic, not an LLM)"
    assert board["judge_set"].provenance["offline"] is True
    assert {p["player"] for p in board["players"]} == {
        "LLaVA (13B)",
        "InstructBLIP (13B)",
        "human_verified_reference",
    }
    # a second call returns the same pipeline
    assert demo.visit_demo(project=project, curator=curator) == pipeline
