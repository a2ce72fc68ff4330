"""VisIT-Bench Fig. 8 (win rate vs the reference per instruction category, from the LLM judge's
and the crowd's judgment sets) and each rater's position bias in the forced-choice queue (share
of "left" as displayed, with a binomial test), on small hand-made data."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotator.models import Annotation, Assignment, Task
from curation.recipes.framework.queues import queue_ensure
from curation.recipes.visit import pipelines, selectors, submissions
from curation.recipes.visit.models import VisitPipeline
from evaluation.families.visit import board, pairwise, sampling, stats
from evaluation.models import Benchmark, BenchmarkItem, BenchmarkVersion, JudgmentSet, PairJudgment
from tests.curation.recipes.visit.helpers import answer_all, workers

pytestmark = [
    pytest.mark.django_db,
]

REF = sampling.REFERENCE


def _set(version, kind, label, rows):
    """A judgment set of (item, model_a, model_b, winner, votes_a, votes_b) rows."""
    judgment_set = JudgmentSet.objects.create(
        version=version, kind=kind, label=label, reference_player=REF, pair_count=len(rows)
    )
    PairJudgment.objects.bulk_create(
        PairJudgment(
            judgment_set=judgment_set,
            item=item,
            position=k,
            model_a=a,
            model_b=b,
            pair_key="|".join(sorted((a, b))),
            winner=winner,
            votes_a=va,
            votes_b=vb,
        )
        for k, (item, a, b, winner, va, vb) in enumerate(rows)
    )
    return judgment_set


@pytest.fixture
def judged(pipeline, curator):
    """Two categories; an LLM-judge set and a crowd-vote set of the pipeline's version."""
    benchmark = Benchmark.objects.create(
        family="visit", name="VisIT sample", project=pipeline.project, created_by=curator
    )
    version = BenchmarkVersion.objects.create(benchmark=benchmark, label="v1")
    i1, i2, i3 = (
        BenchmarkItem.objects.create(
            version=version,
            item_id=f"i{k}",
            position=k,
            data={"category": category, "image": f"img{k}.png", "instruction": f"Q{k}"},
        )
        for k, category in ((1, "Counting"), (2, "Counting"), (3, "Recipes"))
    )
    judge = _set(
        version,
        JudgmentSet.Kind.LLM,
        submissions.leaderboard_label(pipeline),
        [
            (i1, "M1", REF, "M1", 0, 0),
            (i2, REF, "M1", REF, 0, 0),
            (i1, "M2", REF, REF, 0, 0),
            (i2, "M2", REF, "tie", 0, 0),  # a tie is no decisive battle
            (i3, "M1", REF, "M1", 0, 0),
            (i3, "M2", REF, "M2", 0, 0),
            (i3, "M1", "M2", "M1", 0, 0),  # not against the reference
        ],
    )
    human = _set(
        version,
        JudgmentSet.Kind.HUMAN,
        "Crowd votes",
        [
            (i1, "M1", REF, "M1", 3, 2),  # five votes: five battles
            (i3, REF, "M2", REF, 4, 1),
        ],
    )
    VisitPipeline.objects.filter(pk=pipeline.pk).update(
        version_id=version.pk, human_set_id=human.pk
    )
    pipeline.refresh_from_db()
    return pipeline, judge, human


def _cells(panel) -> dict:
    table = panel["table"]
    return {
        (r["model"], c): (cell["wins"], cell["n"], cell["rate"])
        for r in table["rows"]
        for c, cell in zip(table["categories"], r["cells"], strict=True)
    }


def test_category_win_rates_of_the_judge_and_the_crowd(judged):
    # given the hand-made sets
    pipeline, judge, human = judged
    # when Fig. 8 is computed from the leaderboard's sets
    panels = board.category_win_rates(selectors.leaderboard(pipeline))
    # then each model's win rate vs the reference per category: judge battles once per pair,
    # ties left out, model-vs-model pairs ignored
    assert [p["set"].pk for p in panels] == [judge.pk, human.pk]
    assert panels[0]["table"]["categories"] == ["Counting", "Recipes"]
    assert _cells(panels[0]) == {
        ("M1", "Counting"): (1, 2, 0.5),
        ("M1", "Recipes"): (1, 1, 1.0),
        ("M2", "Counting"): (0, 1, 0.0),
        ("M2", "Recipes"): (1, 1, 1.0),
    }
    # and every crowd vote is a battle
    assert _cells(panels[1]) == {
        ("M1", "Counting"): (3, 5, 0.6),
        ("M1", "Recipes"): (0, 0, None),
        ("M2", "Counting"): (0, 0, None),
        ("M2", "Recipes"): (1, 5, 0.2),
    }
    assert panels[1]["table"]["lines"][0] == {
        "category": "Counting",
        "cells": [{"wins": 3, "n": 5, "rate": 0.6}, {"wins": 0, "n": 0, "rate": None}],
    }
    assert panels[0]["svg"].startswith("<svg") and "M2 · Recipes: 100.0" in panels[0]["svg"]


def test_category_win_rates_sum_to_the_overall_rate():
    # given judge pairs in two categories
    pairs = [
        ("A", pairwise.PairData("", "x", "q1", "M", REF, "M")),
        ("A", pairwise.PairData("", "x", "q1", "M", REF, REF)),  # repeat: dropped for a judge
        ("B", pairwise.PairData("", "y", "q2", REF, "M", REF)),
    ]
    # when computed
    table = stats.category_win_rates(pairs, kind=pairwise.LLM, reference=REF)
    # then the repeat is dropped as in the overall table
    assert table["rows"] == [
        {
            "model": "M",
            "cells": [{"wins": 1, "n": 1, "rate": 1.0}, {"wins": 0, "n": 1, "rate": 0.0}],
        }
    ]
    # and nothing against the reference gives an empty table
    empty = stats.category_win_rates(
        [("A", pairwise.PairData("", "x", "q", "M", "N", "M"))], kind=pairwise.LLM, reference=REF
    )
    assert empty == {"categories": [], "rows": [], "lines": [], "reference": REF}


def test_position_bias_share_and_binomial_test():
    # given one rater choosing left 9 times of 10 and one 3 of 6
    choices = [("a", "left")] * 9 + [("a", "right")] + [("b", "left"), ("b", "right")] * 3
    # when
    rows = stats.position_bias(choices)
    # then the share, n and the exact two-sided p-value (2 × 11 / 1024)
    assert rows == [
        {
            "annotator": "a",
            "n": 10,
            "left": 9,
            "share": 0.9,
            "p_value": 0.021484375,
            "biased": True,
        },
        {"annotator": "b", "n": 6, "left": 3, "share": 0.5, "p_value": 1.0, "biased": False},
    ]


def _forced_choices(pipeline, n: int):
    """The pipeline's forced-choice queue holding ``n`` tuples of candidates A and B."""
    queue = queue_ensure(pipeline, pipelines.RATING_QUEUE)
    candidates = [{"id": "A", "text": "first"}, {"id": "B", "text": "second"}]
    for k in range(n):
        payload = {"instruction": f"Q{k}", "candidates": candidates}
        Task.objects.create(queue=queue, required=queue.redundancy, payload=payload)
    return queue


def test_position_bias_counts_the_side_shown_not_the_unswapped_winner(pipeline, project):
    # given a forced-choice queue of 6 tuples, sides shuffled per assignment
    queue = _forced_choices(pipeline, 6)
    loyal, lefty = workers(project, 2)
    # when one rater always picks candidate A wherever it is shown, the other always clicks left
    answer_all(queue, loyal, lambda a: {"choice": "right" if a.presentation["swapped"] else "left"})
    answer_all(queue, lefty, lambda a: {"choice": "left"})
    # then the un-swapping gives A as every winner of the first rater
    assert set(
        Annotation.objects.filter(annotator=loyal).values_list("response__winner", flat=True)
    ) == {"A"}
    # and the left share counts the side as displayed
    shown_left = Assignment.objects.filter(
        annotator=loyal, presentation__swapped=False, task__queue=queue
    ).count()
    rows = {r["annotator"]: r for r in board.position_bias(pipeline.rating_queue_id)}
    assert (rows[loyal.username]["n"], rows[loyal.username]["left"]) == (6, shown_left)
    assert rows[lefty.username] == {
        "annotator": lefty.username,
        "n": 6,
        "left": 6,
        "share": 1.0,
        "p_value": 0.03125,
        "biased": True,
    }


def test_pipeline_page_shows_the_plot_the_tables_and_bias(
    curator_client, judged, project, django_assert_max_num_queries
):
    # given the judged sets and one rater's forced choices
    pipeline, _, _ = judged
    queue = _forced_choices(pipeline, 3)
    (rater,) = workers(project, 1, "pos")
    answer_all(queue, rater, lambda a: {"choice": "left"})
    # when the curator opens the pipeline page
    with django_assert_max_num_queries(60):
        response = curator_client.get(reverse("curator-visit-pipeline", args=[pipeline.pk]))
    # then Fig. 8 is there for both sets, with its table, and the bias table
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count('<svg xmlns="http://www.w3.org/2000/svg"') >= 2
    assert "Win rate vs reference by category · LLM judge" in html
    assert "Win rate vs reference by category · crowd votes" in html
    assert '60% <span class="muted">(3/5)</span>' in html
    assert "pos0" in html and '<td class="num">0.250</td>' in html  # 3 of 3 left: p = 0.25
    # and the leaderboard page shows the plot too
    board = curator_client.get(reverse("curator-visit-leaderboard", args=[pipeline.pk]))
    assert board.content.decode().count("Win rate vs the reference by instruction category") == 1


def test_empty_states_say_what_to_do(curator_client, pipeline):
    # given a fresh pipeline
    # when its page is opened
    html = curator_client.get(
        reverse("curator-visit-pipeline", args=[pipeline.pk])
    ).content.decode()
    # then both blocks say what comes next
    assert "No forced choice yet: once raters answer the rating queue" in html
    assert "No win rate by category yet: run the LLM judge" in html
