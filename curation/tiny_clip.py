"""A tiny open_clip architecture for tests and the offline demo (no weights can be downloaded here).

It goes through the real ``open_clip.create_model_and_transforms`` path; its weights are random, so
every page that shows a scorer built on it says "random weights — scores are not meaningful".
No Django import: the benchmarks and pure modules use it too.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

TINY_MODEL_NAME = "blindspot-tiny-ViT"

# Same shape of config as open_clip's ViT-B-32.json, shrunk: 32 px images, 2 layers, width 64.
TINY_CONFIG: dict = {
    "embed_dim": 32,
    "vision_cfg": {"image_size": 32, "layers": 2, "width": 64, "patch_size": 8},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 64, "heads": 2, "layers": 2},
}

_registered: set[str] = set()


def register_model_config(name: str, config: dict) -> str:
    """Add ``config`` to open_clip's registry under ``name`` (idempotent per process)."""
    if name in _registered:
        return name
    import open_clip

    if name not in open_clip.list_models():
        folder = Path(tempfile.mkdtemp(prefix="blindspot-clip-cfg-"))
        (folder / f"{name}.json").write_text(json.dumps(config))
        open_clip.add_model_config(folder)
    _registered.add(name)
    return name


def register_tiny() -> str:
    return register_model_config(TINY_MODEL_NAME, TINY_CONFIG)
