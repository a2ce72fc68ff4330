"""The NaturalBench pipeline page's cost card in a real browser (issue 25): both mining methods'
expected times and the measured recall, the chosen method marked; screenshot for a look."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotator.platform import roles
from curation.scorers import scorer_tiny
from tests.browser.conftest import new_page
from tests.browser.test_curator_desk import log_in, shots
from tests.curation.recipes.naturalbench.helpers import make_corpus, make_pipeline
from tests.factories import ProjectFactory, UserFactory


@pytest.mark.django_db(transaction=True)
def test_the_pipeline_page_shows_the_mining_cost_card(
    live_server, transactional_db, chromium, tmp_path, settings
):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.BLINDSPOT_MINING_S_PER_GFLOP = 0.01
    settings.BLINDSPOT_MINING_CHUNKS = 8
    settings.BLINDSPOT_APPROX_S_PER_SAMPLE = 0.001
    curator = UserFactory(username="costcurator", role=roles.CURATOR)
    project = ProjectFactory(name="Scale project", members=[curator])
    corpus = make_corpus(project, n=4)
    corpus.sample_count = 1_000_000
    corpus.save()
    pipeline = make_pipeline(project, corpus, method="eq1_ann", scorers=[scorer_tiny()])

    page = new_page(chromium)
    page.set_default_timeout(15000)
    log_in(page, live_server, "costcurator")
    page.goto(live_server.url + reverse("curator-nb-pipeline", args=[pipeline.pk]))
    card = page.locator("[data-testid=mining-cost]")
    card.wait_for()
    assert card.is_visible()
    exact = page.inner_text("[data-testid=cost-exact]")
    approx = page.inner_text("[data-testid=cost-approx]").lower()
    # 1M samples, D = 768: 1.536 PFLOP at 0.01 s per GFLOP
    assert "4.3 h on one worker, 32 min on 8 workers" in exact
    assert "chosen" in approx and "faster here" in approx
    page.screenshot(path=str(shots(tmp_path) / "mining-cost.png"), full_page=True)
    assert page.js_errors == [] and page.console_errors == []
    page.context.close()
