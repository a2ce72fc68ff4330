"""The embedding cache shared through the configured storage (issue 25): workers on other
machines embed chunks, and the job that fanned them out reads what they wrote.

The cache is a folder of chunk files on each machine's disk (``curation.embeddings``). With
``BLINDSPOT_EMBEDDINGS_SHARED`` (on by default when the media storage is S3), every chunk file a
worker writes is also uploaded to the storage under ``embeddings/<scorer folder>/<modality>/``
(the vectors first, the ids file last: an ids object means its vectors are there), and the
steps that read the whole cache (the fan-out's "what is not cached yet", the end of an embedding
job) first download the chunks this machine does not have (``cache_pull``). A local
``.pulled`` list remembers what was downloaded, so a chunk merged away locally is not fetched
again. Clearing a scorer's cache deletes its stored chunks too (``stored_clear``).
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage

ROOT = "embeddings"
PULLED = ".pulled"
IDS = ".ids.npy"


def shared() -> bool:
    return bool(getattr(settings, "BLINDSPOT_EMBEDDINGS_SHARED", False))


def _prefix(folder: Path) -> str:
    return f"{ROOT}/{folder.parent.name}/{folder.name}"


def chunk_push(folder: Path, stem: str) -> None:
    """Upload one chunk (vectors, then ids) of the local cache ``folder``."""
    for suffix in (".npy", IDS):
        name = f"{_prefix(folder)}/{stem}{suffix}"
        with (folder / f"{stem}{suffix}").open("rb") as fh:
            default_storage.delete(name)  # a re-run's same stem: replace, never rename
            saved = default_storage.save(name, File(fh))
        if saved != name:
            raise RuntimeError(f"the storage renamed {name} to {saved}")


def cache_pull(folder: Path) -> int:
    """Download the stored chunks of ``folder`` this machine has neither nor had; returns how
    many. Each file is written to a temporary name and renamed, the ids file last."""
    try:
        _dirs, files = default_storage.listdir(_prefix(folder))
    except FileNotFoundError:
        return 0
    stems = sorted(f[: -len(IDS)] for f in files if f.startswith("chunk-") and f.endswith(IDS))
    pulled_file = folder / PULLED
    pulled = set(pulled_file.read_text().split()) if pulled_file.exists() else set()
    todo = [s for s in stems if s not in pulled and not (folder / f"{s}{IDS}").exists()]
    folder.mkdir(parents=True, exist_ok=True)
    for stem in todo:
        for suffix in (".npy", IDS):
            tmp = folder / f"{stem}{suffix}.{uuid.uuid4().hex[:8]}.tmp"
            with default_storage.open(f"{_prefix(folder)}/{stem}{suffix}", "rb") as src:
                with tmp.open("wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
            os.replace(tmp, folder / f"{stem}{suffix}")
    if todo:
        with pulled_file.open("a") as fh:
            fh.write("".join(f"{s}\n" for s in todo))
    return len(todo)


def stored_clear(scorer_folder: Path) -> int:
    """Delete a scorer's stored chunks (both modalities); returns how many files."""
    deleted = 0
    for modality in ("image", "text"):
        prefix = f"{ROOT}/{scorer_folder.name}/{modality}"
        try:
            _dirs, files = default_storage.listdir(prefix)
        except FileNotFoundError:
            continue
        for name in files:
            default_storage.delete(f"{prefix}/{name}")
            deleted += 1
    return deleted
