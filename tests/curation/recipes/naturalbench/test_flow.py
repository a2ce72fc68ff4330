"""A full small NaturalBench flow with the offline drafter and the tiny random-weights scorer
(the demo), and the ``manage.py naturalbench`` stages."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from annotator.models import Task
from annotator.platform.models import Job
from annotator.services import annotation_submit, assignment_claim
from curation.recipes.framework import selectors as recipe_selectors
from curation.recipes.framework.registry import recipe_of
from curation.recipes.naturalbench import selectors
from curation.recipes.naturalbench.demo import NAME, naturalbench_demo
from curation.recipes.naturalbench.models import QuestionDraft
from evaluation.models import BenchmarkVersion
from tests.curation.recipes.naturalbench.helpers import make_corpus, make_pipeline, media  # noqa: F401

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("media")]


def test_the_demo_runs_end_to_end_and_leaves_work_for_a_visitor(project, curator, crowdworker):
    # When the demo builds its pipeline
    pipeline = naturalbench_demo(project=project, curator=curator)

    # Then every stage ran as a job that succeeded
    recipe = recipe_of("naturalbench")
    jobs = recipe_selectors.latest_jobs(recipe, pipeline)
    assert sorted(jobs) == sorted(stage.job_kind for stage in recipe.stages)
    assert {job.status for job in jobs.values()} == {"succeeded"}
    assert pipeline.demo and pipeline.name == NAME
    assert pipeline.scorers.get().random_weights
    assert pipeline.provider.kind == "offline"

    f = selectors.funnel(pipeline)
    assert f["corpus"]["samples"] == 20
    assert f["pairs"]["all"] > 4
    assert f["pairs"]["review"] == 2  # left for a visitor
    assert f["pairs"]["verified"] == f["pairs"]["all"] - 2
    assert f["questions"]["answering"] == 2  # their items keep one answer open
    assert f["questions"]["kept"] == f["samples"]["assembled"] > 4
    assert f["samples"]["refused"] == 0
    assert f["samples"]["tagged"] == f["samples"]["assembled"] - 1
    version = f["versions"][0]
    assert version.sample_count == f["samples"]["assembled"]
    assert BenchmarkVersion.objects.filter(pk=version.benchmark_version_id, frozen=True).exists()
    # the pair whose item was found unanswerable was drafted again and then kept
    regenerated = QuestionDraft.objects.filter(question_set__pipeline=pipeline, attempt__gt=1)
    assert regenerated.filter(status="kept").exists()
    assert QuestionDraft.objects.filter(
        question_set__pipeline=pipeline, status="rejected", problems__icontains="Unanswerable"
    ).exists()

    # When a visitor (a crowdworker of the project) answers a pair left open
    claim = assignment_claim(queue=pipeline.pair_queue, annotator=crowdworker)
    assert claim.task.done_count == 1
    annotation_submit(task_id=claim.task.pk, annotator=crowdworker, response={"decision": "keep"})

    # Then that decision completes the pair
    assert Task.objects.get(pk=claim.task.pk).state == "decided"
    assert selectors.funnel(pipeline)["pairs"]["verified"] == f["pairs"]["verified"] + 1

    # and a second call returns the same pipeline without running anything
    jobs_before = Job.objects.count()
    assert naturalbench_demo(project=project, curator=curator).pk == pipeline.pk
    assert Job.objects.count() == jobs_before


def test_the_command_runs_stages_in_process_and_prints_the_funnel(project, terminal):
    pipeline = make_pipeline(project, make_corpus(project), random_pairs=2)
    out = io.StringIO()
    pk = str(pipeline.pk)
    call_command("naturalbench", "mine", "--pipeline", pk, stdout=out, stderr=terminal)
    mine = Job.objects.get(kind="naturalbench.mine")
    # on a terminal, the job's bar follows it to its end (the random baseline reports no count
    # on the way); --quiet: no bar
    bar = terminal.getvalue()
    assert f"job #{mine.pk} naturalbench.mine" in bar
    assert bar.rstrip().endswith("Finished]")
    call_command("naturalbench", "verify", "--pipeline", pk, "--quiet", stdout=out, stderr=terminal)
    assert "naturalbench.verify" not in terminal.getvalue()
    text = out.getvalue()
    assert "(mine) succeeded." in text and "(verify) succeeded." in text
    assert "  mismatched pairs         2" in text
    assert "  verified pairs           0 (2 in review)" in text
    assert [j.kind for j in Job.objects.order_by("id")] == [
        "naturalbench.mine",
        "naturalbench.verify",
    ]
    with pytest.raises(CommandError, match="No mined pair waits for verification."):
        call_command("naturalbench", "verify", "--pipeline", str(pipeline.pk), stdout=out)
    with pytest.raises(CommandError, match="No NaturalBench pipeline with id 999999."):
        call_command("naturalbench", "status", "--pipeline", "999999", stdout=out)
