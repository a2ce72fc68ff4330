#!/usr/bin/env python
"""A hunt round over a large image pool (issue 24 on issue 25's corpora): what the pool costs a
step. A script, not a test.

The three places a hunt reads its pool: the workspace's next image (``partners.next_image``,
every time a worker opens the workspace), the partner images proposed after a first step
(``partners.nearest``, in the ``hunt.ask`` job: the pool's images nearest the first under the
round's scorer, from the cached embeddings) and the caption search (``partners.search``). Each
is timed on a corpus of ``--n`` samples (rows inserted by PostgreSQL itself, each with a
caption; random L2-normalised embeddings of ``--dim`` written to the embedding cache as the
embed job writes them), the first call apart (a process's first read) from the median of the
next ones, with the process's peak resident memory.

    .venv/bin/python benchmarks/hunt_pool.py                 # N = 100,000, D = 512
    .venv/bin/python benchmarks/hunt_pool.py --n 1000000     # a million images (~1 min)

The product's modules are imported inside the functions that run once ``setup_django`` has
pointed Django at the benchmark's own database, as in ``hunt.py``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import recreate_database, setup_django  # noqa: E402

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/blindspot_bench_hunt_pool"
WORDS = ("dog", "cat", "mug", "laptop", "tree", "car", "bicycle", "kite", "boat", "horse")


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def build(n: int, dim: int, seed: int):
    """A project, a corpus of n samples with a caption each, a scorer whose image embeddings
    are cached, and a round on that pool."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    from annotator import services as annotator_services
    from curation.embeddings import IMAGE, embeddings_put
    from curation.models import Caption, Corpus, Image, LLMProvider, Sample, Scorer
    from curation.recipes.hunt.rounds import round_create

    curator = get_user_model().objects.create_user("pool-curator")
    project = annotator_services.project_create(name="Pool", slug="pool", created_by=curator)
    corpus = Corpus.objects.create(project=project, name="Pool", slug="pool", sample_count=n)
    image, sample, caption = (m._meta.db_table for m in (Image, Sample, Caption))
    with connection.cursor() as cur:
        cur.execute(
            f"INSERT INTO {image} (sha256, file, thumbnail, width, height, format,"
            " original_format, byte_size, original_name, source, licence, attribution,"
            " derivation, created_at)"
            " SELECT lpad(to_hex(i), 64, '0'), 'pool/' || i || '.png', '', 64, 64, 'png', '',"
            " 100, '', '', '', '', '{}', now() FROM generate_series(1, %s) i",
            [n],
        )
        cur.execute(
            f"INSERT INTO {sample} (corpus_id, image_id, source_id, licence, position)"
            f" SELECT %s, id, 's' || id, '', row_number() OVER (ORDER BY id) - 1 FROM {image}",
            [corpus.pk],
        )
        word = "(ARRAY[" + ",".join(f"'{w}'" for w in WORDS) + "])"
        cur.execute(
            f"INSERT INTO {caption} (sample_id, text, language, position, short_text)"
            f" SELECT id, 'A photo of a ' || {word}[1 + (position::bigint * 7919) %% {len(WORDS)}]"
            f" || ' number ' || position, 'en', 0, '' FROM {sample} WHERE corpus_id = %s",
            [corpus.pk],
        )
        cur.execute(f"ANALYZE {image}; ANALYZE {sample}; ANALYZE {caption}")
    scorer = Scorer.objects.create(label="bench", model_name="ViT-B-32", embed_dim=dim)
    ids = np.asarray(
        Sample.objects.filter(corpus=corpus).order_by("image_id").values_list("image_id", flat=True)
    )
    rng = np.random.default_rng(seed)
    for start in range(0, len(ids), 65536):
        x = rng.standard_normal((len(ids[start : start + 65536]), dim), dtype=np.float32)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        embeddings_put(scorer=scorer, modality=IMAGE, ids=ids[start : start + 65536], vectors=x)
    targets = [
        LLMProvider.objects.create(
            project=project, name=f"Stand-in {x}", kind=LLMProvider.Kind.OFFLINE, model=x
        )
        for x in "ab"
    ]
    round_ = round_create(
        project=project,
        created_by=curator,
        name="Pool round",
        corpus=corpus,
        targets=targets,
        scorer=scorer,
    )
    worker = get_user_model().objects.create_user("pool-worker")
    return round_, worker, ids


def exact_nearest(scorer, ids: np.ndarray, queries: list[int], k: int) -> list[list[int]]:
    """The k nearest of each query by reading every vector (float32, normalised), in blocks."""
    from curation.embeddings import IMAGE, embeddings_get
    from curation.mining import as_float32

    q = as_float32(embeddings_get(scorer=scorer, modality=IMAGE, ids=queries), True)
    scores = np.empty((len(queries), len(ids)), dtype=np.float32)
    for start in range(0, len(ids), 65536):
        block = embeddings_get(scorer=scorer, modality=IMAGE, ids=ids[start : start + 65536])
        scores[:, start : start + len(block)] = q @ as_float32(block, True).T
    scores[np.arange(len(queries)), np.searchsorted(ids, queries)] = -np.inf  # not itself
    return [ids[np.argsort(-row, kind="stable")[:k]].tolist() for row in scores]


def timed(fn, repeat: int) -> tuple[float, float]:
    """(first call, median of the next ``repeat``) in ms."""
    t0 = time.perf_counter()
    fn(0)
    first = (time.perf_counter() - t0) * 1000
    times = []
    for r in range(1, repeat + 1):
        t0 = time.perf_counter()
        fn(r)
        times.append((time.perf_counter() - t0) * 1000)
    return first, statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument(
        "--database-url", default=os.environ.get("HUNT_POOL_DATABASE_URL", DEFAULT_URL)
    )
    args = parser.parse_args()
    recreate_database(args.database_url)
    work = Path(tempfile.mkdtemp(prefix="hunt-pool-"))
    os.environ["BLINDSPOT_EMBEDDINGS_DIR"] = str(work / "embeddings")
    setup_django(args.database_url, work / "media")
    from curation.models import Image
    from curation.recipes.hunt import partners

    t0 = time.perf_counter()
    round_, worker, ids = build(args.n, args.dim, seed=7)
    print(
        f"pool: {args.n:,} images with captions and D = {args.dim} embeddings, built in "
        f"{time.perf_counter() - t0:.1f} s; peak RSS {rss_mib():.0f} MiB",
        flush=True,
    )
    rng = np.random.default_rng(1)
    queries = [Image(pk=int(pk)) for pk in rng.choice(ids, args.repeat + 1, replace=False)]
    rows = [
        ("next image (workspace)", lambda r: partners.next_image(round_, worker)),
        (
            "partners proposed (hunt.ask job)",
            lambda r: partners.nearest(round_, queries[r], k=round_.neighbours),
        ),
        ("caption search 'kite'", lambda r: partners.search(round_, "kite")),
        ("caption search, no match", lambda r: partners.search(round_, "zebra")),
    ]
    for label, fn in rows:
        first, median = timed(fn, args.repeat)
        print(
            f"{label}: first {first:.1f} ms, then p50 {median:.1f} ms; "
            f"peak RSS {rss_mib():.0f} MiB",
            flush=True,
        )
    found = partners.nearest(round_, queries[0], k=round_.neighbours)
    print(f"proposed: method {found['method']}, {len(found['images'])} images")
    k = round_.neighbours
    exact = exact_nearest(round_.scorer, ids, [q.pk for q in queries], k)
    hits = sum(
        len({row["id"] for row in partners.nearest(round_, q, k=k)["images"]} & set(want))
        for q, want in zip(queries, exact, strict=True)
    )
    print(
        f"recall of the exact {k} nearest (every vector read, float32): "
        f"{hits / (k * len(queries)):.3f} over {len(queries)} images"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
