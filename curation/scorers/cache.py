"""Where a scorer's cached embeddings live, what names them, and clearing them.

Below both the scorer registry (``services``: a change of weights clears the cache) and
``curation.embeddings`` (which reads and writes the chunks in these folders), so neither imports
the other for it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from django.conf import settings

from ..embedding_storage import shared, stored_clear
from ..models import EmbeddingCache, Scorer
from .weights import IDENTITY_FIELDS


def scorer_signature(scorer: Scorer) -> str:
    """A short hash of what determines the scorer's numbers (weights, dtype) and of the row's
    creation time: names the cache folder, so two databases sharing one embeddings folder, or
    an edited scorer, never read each other's vectors."""
    payload = {f: getattr(scorer, f) for f in IDENTITY_FIELDS}
    payload["created_at"] = scorer.created_at.isoformat() if scorer.created_at else ""
    blob = json.dumps(payload, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:10]


def embeddings_root() -> Path:
    configured = getattr(settings, "BLINDSPOT_EMBEDDINGS_DIR", None)
    if configured:
        return Path(configured)
    var_dir = getattr(settings, "VAR_DIR", None)
    if var_dir:
        return Path(var_dir) / "embeddings"
    return Path(settings.MEDIA_ROOT).parent / "embeddings"


def scorer_folder(scorer: Scorer) -> Path:
    return embeddings_root() / f"scorer-{scorer.pk}-{scorer_signature(scorer)}"


def cache_folder(scorer: Scorer, modality: str) -> Path:
    return scorer_folder(scorer) / str(modality)


def embeddings_clear(*, scorer: Scorer) -> None:
    """Delete every cached embedding of a scorer (its files and its EmbeddingCache rows). A
    process's in-memory index of a folder is checked against the folder's chunk list on every
    read (``embeddings._index``), so it is rebuilt once the chunks are gone."""
    # Only this row's folder: another database sharing the root may have a scorer with this id.
    shutil.rmtree(scorer_folder(scorer), ignore_errors=True)
    if shared():
        stored_clear(scorer_folder(scorer))
    EmbeddingCache.objects.filter(scorer=scorer).delete()
