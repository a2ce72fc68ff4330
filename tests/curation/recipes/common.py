"""Pieces every recipe's tests share: a random-noise PNG (distinct per seed, so uploads never
collide by SHA-256), a throwaway media root (and embeddings folder), the project's LLM pointed
at the fake server, and the out-of-reach checks of every recipe's pages."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image as PILImage

from annotator.platform import roles
from tests.factories import ProjectFactory, UserFactory
from tests.fake_openai import fake_provider  # noqa: F401  (the recipe tests take it from here)


def png_bytes(seed: int, size: int = 24) -> bytes:
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, size=(size, size, 3), dtype=np.uint8)
    buf = io.BytesIO()
    PILImage.fromarray(pixels).save(buf, "PNG")
    return buf.getvalue()


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.BLINDSPOT_EMBEDDINGS_DIR = str(tmp_path / "embeddings")
    return tmp_path / "media"


def login_out_of_reach(client, who: str, **members) -> None:
    """Log ``who`` in: one of ``members`` (a member crowdworker, researcher…), or "stranger", a
    curator of another project."""
    if who == "stranger":
        members["stranger"] = UserFactory(username="other-curator", role=roles.CURATOR)
        ProjectFactory(members=[members["stranger"]])
    client.force_login(members[who])


def assert_out_of_reach(client, who: str, pages, *, list_url: str, hidden: str = "") -> None:
    """Every (method, URL, data) of ``pages`` answers ``who`` 404, but: a stranger's list page
    answers (their own projects only, so ``hidden`` is not on it) and researchers may download
    their project's exports (test_export_access.py)."""
    for method, url, data in pages:
        if who == "stranger" and url == list_url:
            response = client.get(url)
            assert response.status_code == 200
            assert not hidden or hidden not in response.content.decode()
            continue
        if who == "researcher" and method == "get" and "/export" in url:
            continue
        response = getattr(client, method)(url, data)
        assert response.status_code == 404, (who, url)
