"""Fixtures of the VisIT-Bench tests: a media root, a pipeline, the project's fake LLM, and fast
ratings (few bootstrap rounds, no text metrics)."""

from __future__ import annotations

import pytest

from curation.recipes.visit import pipelines
from tests.curation.recipes.common import fake_provider, media  # noqa: F401  (media: a fixture)


@pytest.fixture(autouse=True)
def _fast_ratings(settings):
    settings.BLINDSPOT_VISIT_ROUNDS = 50
    settings.BLINDSPOT_VISIT_TEXT_METRICS = False


@pytest.fixture
def pipeline(project, curator, media):  # noqa: F811
    return pipelines.pipeline_create(project=project, name="VisIT sample", created_by=curator)


@pytest.fixture
def llm(fake_openai, project):
    return fake_provider(project, fake_openai)
