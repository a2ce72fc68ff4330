"""The images of a corpus nearest to one of them under a scorer (cosine of the cached image
embeddings), for a corpus of any size — issue 25's million-image corpora as a hunt's pool.

Reading the whole corpus and its embeddings for every question (what the hunt did first) costs
seconds and gigabytes a question at a million images. Instead each process keeps, per (scorer,
corpus), an index of the corpus's embedded images: exact (float32) up to ``FLAT_BELOW`` images,
FAISS 8-bit scalar codes above (one byte a dimension: 512 MB for a million images at D = 512,
searched in C without holding the GIL). The ``k × RERANK`` best rows it finds are scored again
exactly from the stored vectors (float32, normalised as ``curation.embeddings.similarity``
does), so a score shown is the cosine, and ties go to the image earlier in the corpus.

An index follows its corpus and cache: it is made again when the corpus's samples or the
scorer's chunk files change — looked at on every call for a small corpus, at most every
``RECHECK_S`` for a large one (images imported or embedded meanwhile are proposed after that).
Images of the corpus without an embedding are left out until they have one.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

import faiss
import numpy as np
from django.db.models import Count, Max

from .embeddings import (
    IMAGE,
    EmbeddingsMissing,
    embeddings_cached_ids,
    embeddings_get,
    embeddings_version,
)
from .mining import as_float32
from .models import Sample, Scorer
from .scorers.cache import cache_folder

FLAT_BELOW = 20_000  # exact float32 search up to this many images, 8-bit codes above
RERANK = 4  # rows taken from the index per neighbour asked, then scored exactly
RECHECK_S = 30.0  # a large corpus's samples and chunks are looked at this often at most
ROWS = 65_536  # vectors converted to float32 at a time while an index is made
KEEP = 2  # indexes a process keeps (the most recently used)


@dataclass
class _Index:
    signature: tuple
    checked: float
    large: bool  # more than FLAT_BELOW images in the corpus: looked at every RECHECK_S
    ids: np.ndarray  # image id of each embedded row, in corpus order
    index: faiss.Index | None  # None: no image of the corpus is embedded


_indexes: OrderedDict[tuple, _Index] = OrderedDict()
_lock = threading.Lock()
_building: dict[tuple, threading.Lock] = {}


def pool_ids(corpus_id: int) -> np.ndarray:
    """The corpus's image ids in sample order, each once (int64)."""
    ids = Sample.objects.filter(corpus_id=corpus_id).order_by("position")
    raw = np.fromiter(ids.values_list("image_id", flat=True).iterator(ROWS), dtype=np.int64)
    _unique, first = np.unique(raw, return_index=True)
    return raw[np.sort(first)]


def _signature(scorer: Scorer, corpus_id: int) -> tuple:
    counts = Sample.objects.filter(corpus_id=corpus_id).aggregate(n=Count("id"), last=Max("id"))
    return (counts["n"], counts["last"], embeddings_version(scorer=scorer, modality=IMAGE))


def _build(scorer: Scorer, corpus_id: int, signature: tuple) -> _Index:
    pool = pool_ids(corpus_id)
    ids = pool[np.isin(pool, embeddings_cached_ids(scorer=scorer, modality=IMAGE))]
    large = len(pool) > FLAT_BELOW
    if not len(ids):
        return _Index(signature, time.monotonic(), large, ids, None)
    first = as_float32(embeddings_get(scorer=scorer, modality=IMAGE, ids=ids[:ROWS]), True)
    dim = first.shape[1]
    if len(ids) <= FLAT_BELOW:
        index = faiss.IndexFlatIP(dim)
    else:
        index = faiss.IndexScalarQuantizer(
            dim, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
        )
        index.train(first)  # each dimension's range, from the first ROWS vectors
    index.add(first)
    for start in range(ROWS, len(ids), ROWS):
        vectors = embeddings_get(scorer=scorer, modality=IMAGE, ids=ids[start : start + ROWS])
        index.add(as_float32(vectors, True))
    return _Index(signature, time.monotonic(), large, ids, index)


def _current(scorer: Scorer, corpus_id: int) -> _Index:
    key = (str(cache_folder(scorer, IMAGE)), corpus_id)
    with _lock:
        held = _indexes.get(key)
        if held is not None:
            _indexes.move_to_end(key)
            fresh = held.large and time.monotonic() - held.checked < RECHECK_S
            if fresh:
                return held
        building = _building.setdefault(key, threading.Lock())
    with building:  # one thread of the process makes it; the others wait for that one
        signature = _signature(scorer, corpus_id)
        with _lock:
            held = _indexes.get(key)
        if held is not None and held.signature == signature:
            held.checked = time.monotonic()
            return held
        made = _build(scorer, corpus_id, signature)
        with _lock:
            _indexes[key] = made
            _indexes.move_to_end(key)
            while len(_indexes) > KEEP:
                _indexes.popitem(last=False)
        return made


def corpus_nearest(
    *, scorer: Scorer, corpus_id: int, image_id: int, k: int
) -> list[tuple[int, float]] | None:
    """Up to ``k`` (image id, cosine) of the corpus's embedded images other than ``image_id``,
    most similar first; None when ``image_id`` has no embedding from ``scorer`` or no other
    image of the corpus has one."""
    try:
        held = _current(scorer, corpus_id)
        if held.index is None:
            return None
        query = as_float32(embeddings_get(scorer=scorer, modality=IMAGE, ids=[image_id]), True)
        want = min(len(held.ids), k * RERANK + 1)
        _scores, rows = held.index.search(query, want)
        rows = rows[0][rows[0] >= 0]
        rows = rows[held.ids[rows] != image_id]
        if not len(rows):
            return None
        vectors = embeddings_get(scorer=scorer, modality=IMAGE, ids=held.ids[rows])
    except EmbeddingsMissing:  # not embedded, or the cache changed under the index held
        return None
    vectors = as_float32(vectors, True)
    scores = vectors @ query[0]
    order = np.lexsort((rows, -scores))[:k]  # the cosine, then the corpus's order
    return [(int(held.ids[rows[i]]), float(scores[i])) for i in order]


def forget() -> None:
    """Drop every index this process holds (tests: each starts with none)."""
    with _lock:
        _indexes.clear()
