"""Fixtures of the curation tests: the fake OpenAI-compatible server, and LLM retries without
waiting (backoff base and Retry-After cap near zero)."""

import pytest

from tests.fake_openai import FakeOpenAI


@pytest.fixture
def fake_openai():
    server = FakeOpenAI()
    yield server
    server.close()


@pytest.fixture(autouse=True)
def _fast_llm_backoff(settings):
    settings.BLINDSPOT_LLM_BACKOFF_BASE_S = 0.001
    settings.BLINDSPOT_LLM_BACKOFF_MAX_S = 0.01
    settings.BLINDSPOT_LLM_RETRY_AFTER_MAX_S = 0.01
