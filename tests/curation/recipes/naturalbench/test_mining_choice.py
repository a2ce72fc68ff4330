"""Exact or approximate mining on the NaturalBench pipeline (issue 25): the approximate method
mines through FAISS in the stage's job, and on a corpus small enough that every sample's
neighbours are all the others it keeps exactly the exact miner's pairs; the pipeline page shows
both methods' expected times from the cost model (curation.mining_cost) and the measured recall."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotator.platform.errors import Invalid
from curation.mining_cost import duration, mining_estimate
from curation.recipes.framework.registry import recipe_of
from curation.recipes.framework.stages import stage_start
from curation.recipes.naturalbench import mining as nb_mining
from curation.scorers import scorer_tiny
from tests.curation.recipes.naturalbench.helpers import (  # noqa: F401 - fixtures
    make_corpus,
    make_pipeline,
    media,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("media")]


def pairs_of(pipeline) -> list[tuple]:
    return list(
        pipeline.pairs.order_by("position").values_list(
            "sample_0_id", "sample_1_id", "caption_0_id", "caption_1_id", "scores"
        )
    )


def test_approximate_mining_in_the_stage_job_keeps_the_exact_pairs_of_a_small_corpus(
    eager, project, curator, django_capture_on_commit_callbacks
):
    # Given a corpus of 8 samples (k = 16 neighbours: every pair is a candidate)
    corpus = make_corpus(project, n=8)
    scorers = [scorer_tiny(label="tiny A")]
    exact = make_pipeline(project, corpus, name="exact", method="eq1", scorers=scorers, seed=5)
    nb_mining.pairs_mine(exact)
    approx = make_pipeline(project, corpus, name="ann", method="eq1_ann", scorers=scorers, seed=5)
    # When the approximate pipeline's mine stage runs as a job
    with django_capture_on_commit_callbacks(execute=True):
        job = stage_start(recipe_of("naturalbench"), "mine", approx, created_by=curator)
    job.refresh_from_db()
    # Then it mined in its own process (no mining chunk) the exact miner's pairs
    assert job.status == "succeeded", job.error
    assert not job.chunks.filter(kind="curation.mine_chunk").exists()
    approx.refresh_from_db()
    exact.refresh_from_db()
    assert approx.mining["method"] == "eq1_ann"
    got, want = pairs_of(approx), pairs_of(exact)
    assert [p[:4] for p in got] == [p[:4] for p in want] and want
    # S values: row-wise dot products instead of a block's matrix product (last-bit differences)
    for a, b in zip(got, want, strict=True):
        assert a[4][0]["s"] == pytest.approx(b[4][0]["s"], abs=1e-5)
    assert approx.mining["mismatched_pairs"] == exact.mining["mismatched_pairs"]


def test_approximate_mining_needs_a_scorer(project):
    corpus = make_corpus(project, n=3)
    with pytest.raises(Invalid) as refused:
        make_pipeline(project, corpus, method="eq1_ann", scorers=[])
    assert "at least one scorer" in str(refused.value.errors)


def test_the_pipeline_page_shows_the_cost_model_of_both_methods(client, curator, project, settings):
    settings.BLINDSPOT_MINING_S_PER_GFLOP = 0.5
    settings.BLINDSPOT_MINING_CHUNKS = 4
    settings.BLINDSPOT_APPROX_S_PER_SAMPLE = 1.0  # at 240,000 samples, growing as √N:
    settings.BLINDSPOT_APPROX_COST_N = 240_000
    settings.BLINDSPOT_APPROX_GROWTH = 0.5
    settings.BLINDSPOT_APPROX_RECALL = 0.9612
    settings.BLINDSPOT_APPROX_RECALL_N = 100_000
    corpus = make_corpus(project, n=6)
    corpus.sample_count = 60_000
    corpus.save()
    scorer = scorer_tiny()
    scorer.embed_dim = 512
    scorer.save()
    pipeline = make_pipeline(project, corpus, method="eq1_ann", scorers=[scorer])
    client.force_login(curator)
    html = client.get(reverse("curator-nb-pipeline", args=[pipeline.pk])).content.decode()
    card = re.search(r'data-testid="mining-cost">(.*?)</section>', html, re.DOTALL).group(1)
    text = " ".join(re.sub(r"<[^>]+>", " ", card).split())
    # 2 · 60,000² · 512 = 3,686.4 GFLOP at 0.5 s each = 1843 s ≈ 31 min, ≈ 8 min on 4 workers
    est = mining_estimate(60_000, [512], k=16)
    assert round(est.gflop, 1) == 3686.4
    assert f"{duration(est.exact_s)} on one worker, {duration(est.exact_s / 4)} on 4 workers" in (
        text
    )
    assert "31 min on one worker, 8 min on 4 workers" in text
    # approximate: 60,000 × 1.0 s × (60,000 / 240,000)^0.5 = 60,000 × 0.5 s = 8.3 h
    assert est.approx_s == pytest.approx(30_000)
    assert "8.3 h" in text
    assert "96.1% of the exact mismatches (recall measured at N = 100,000)" in text
    assert "Approximate (nearest neighbours) chosen" in text


def test_durations_read_naturally():
    assert [duration(s) for s in (0.2, 40, 720, 3 * 3600, 5 * 86400)] == [
        "under a second",
        "40 s",
        "12 min",
        "3.0 h",
        "5.0 days",
    ]
