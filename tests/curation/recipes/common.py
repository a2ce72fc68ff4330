"""Pieces every recipe's tests share: a random-noise PNG (distinct per seed, so uploads never
collide by SHA-256), a throwaway media root, and the project's LLM pointed at the fake server."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image as PILImage

from curation.models import LLMProvider


def png_bytes(seed: int, size: int = 24) -> bytes:
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, size=(size, size, 3), dtype=np.uint8)
    buf = io.BytesIO()
    PILImage.fromarray(pixels).save(buf, "PNG")
    return buf.getvalue()


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    return tmp_path / "media"


def fake_provider(project, fake, **fields) -> LLMProvider:
    """The project's default LLM: the fake OpenAI-compatible server ``fake``."""
    values = {"model": "fake-gpt-4", "timeout_s": 2.0, "max_retries": 1, **fields}
    return LLMProvider.objects.create(
        project=project,
        name="fake",
        base_url=fake.base_url,
        api_key="sk-test",
        is_default=True,
        **values,
    )
