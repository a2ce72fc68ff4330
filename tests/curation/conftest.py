"""Fixtures of the curation tests: LLM retries never wait (the fake server and the quick
retries themselves are in tests/conftest.py)."""

import pytest

from curation import pool_index


@pytest.fixture(autouse=True)
def _fast_llm_backoff(fast_llm_backoff):
    return fast_llm_backoff


@pytest.fixture
def scorer_media(settings, tmp_path):
    """Files, embeddings and an empty open_clip cache in a throwaway folder (the scorer tests)."""
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.BLINDSPOT_EMBEDDINGS_DIR = str(tmp_path / "embeddings")
    settings.BLINDSPOT_CLIP_CACHE_DIR = str(tmp_path / "empty-clip-cache")
    return tmp_path


@pytest.fixture
def pool_indexes(settings, tmp_path):
    """Embeddings in a throwaway folder, and no pool index held from another test (each process
    keeps its indexes: ``curation.pool_index``)."""
    settings.BLINDSPOT_EMBEDDINGS_DIR = str(tmp_path / "embeddings")
    pool_index.forget()
    yield
    pool_index.forget()
