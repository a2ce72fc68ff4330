"""NaturalBench-Retrieval as published (naturalbench.txt App. B; the official loader
naturalbench_retrieval.py): a folder ``NaturalBench-Retrieval/`` holding ``metadata.json`` (one
JSON array; item i has integer index i, image_0, image_1, caption_0, caption_1) and the images
under ``images/``. Given that folder or the folder holding it (the loader's root_dir), it becomes
a version whose images any scorer can read."""

from __future__ import annotations

import json
from pathlib import Path

from annotator.platform import structured
from evaluation import releases

from . import parse

FOLDER = "NaturalBench-Retrieval"
METADATA = "metadata.json"


def _metadata_path(path: Path) -> Path:
    for candidate in (path, path / METADATA, path / FOLDER / METADATA):
        if candidate.is_file() and candidate.name == METADATA:
            return candidate
    raise releases.refuse(
        f"No {FOLDER}/{METADATA} at {path}.",
        0,
        f"expected the published folder: {FOLDER}/{METADATA} and {FOLDER}/images/",
    )


def read_release(path: Path) -> releases.ReleaseFile:
    """metadata.json with its images ingested; entries are checked first (errors name the
    entry, 1-based, and the field), including index = position as the official loader asserts."""
    metadata_path = _metadata_path(path)
    try:
        metadata = structured.loads(metadata_path.read_text(encoding="utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise releases.refuse(f"{METADATA} is not UTF-8 text.", 0, str(exc)) from exc
    except structured.StructuredTextError as exc:
        raise releases.refuse(f"{METADATA} is not valid JSON.", exc.line or 0, exc.message) from exc
    if not isinstance(metadata, list):
        raise releases.refuse(f"{METADATA} must be one JSON array.", 0, "not a JSON array")
    parse.parse_items(json.dumps(metadata), METADATA)  # Invalid names entry and field
    image_dir = metadata_path.parent / "images"
    for position, entry in enumerate(metadata):
        if entry.get("index") != position or isinstance(entry.get("index"), bool):
            raise releases.refuse(
                f"{METADATA} is out of order.",
                position + 1,
                f"'index' must be {position} (the official loader asserts index == position), "
                f"got {entry.get('index')!r}",
            )
    images = 0
    for position, entry in enumerate(metadata):
        for column in ("image_0", "image_1"):
            value = {"bytes": None, "path": entry[column]}
            data, name = releases.image_bytes(value, image_dir, position + 1, column)
            entry[column] = releases.image_ref(data, name, position + 1, column)
            images += 1
    return releases.ReleaseFile(json.dumps(metadata, ensure_ascii=False), METADATA, images)
