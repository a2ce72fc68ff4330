"""Fixtures of the curation tests: LLM retries never wait (the fake server and the quick
retries themselves are in tests/conftest.py), and a throwaway media root."""

import pytest


@pytest.fixture(autouse=True)
def _fast_llm_backoff(fast_llm_backoff):
    return fast_llm_backoff


@pytest.fixture
def media(settings, tmp_path):
    """Uploads land in a throwaway MEDIA_ROOT, which this returns (a module that needs more
    settings, such as the embeddings folder, has its own)."""
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT
