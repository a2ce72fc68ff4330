"""Fixtures of the VisIT-Bench tests: a media root, a pipeline, the project's fake LLM, and fast
ratings (few bootstrap rounds, no text metrics)."""

from __future__ import annotations

import pytest

from curation.models import LLMProvider
from curation.recipes.visit import pipelines
from tests.curation.recipes.common import media  # noqa: F401  (a fixture)


@pytest.fixture(autouse=True)
def _fast_ratings(settings):
    settings.BLINDSPOT_VISIT_ROUNDS = 50
    settings.BLINDSPOT_VISIT_TEXT_METRICS = False


@pytest.fixture
def pipeline(project, curator, media):  # noqa: F811
    return pipelines.pipeline_create(project=project, name="VisIT sample", created_by=curator)


@pytest.fixture
def llm(fake_openai, project):
    """The project's default LLM: the fake OpenAI-compatible server."""
    return LLMProvider.objects.create(
        project=project,
        name="fake",
        base_url=fake_openai.base_url,
        api_key="sk-test",
        model="fake-gpt-4",
        timeout_s=2.0,
        max_retries=1,
        is_default=True,
    )
