"""Fixtures of the curation tests: LLM retries never wait (the fake server and the quick
retries themselves are in tests/conftest.py)."""

import pytest


@pytest.fixture(autouse=True)
def _fast_llm_backoff(fast_llm_backoff):
    return fast_llm_backoff
