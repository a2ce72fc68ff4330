"""Pieces every recipe's tests share: a random-noise PNG (distinct per seed, so uploads never
collide by SHA-256) and a throwaway media root."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image as PILImage


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
