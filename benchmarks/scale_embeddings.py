"""Chunked embeddings for benchmarks/scale.py (issue 25): a corpus embedded by the real chunk
path with 1 and with 2 local worker processes.

A throw-away test database (``test_<your database>_scale``, made by Django's test runner code
and dropped at the end) holds a project, a corpus of ``n`` 500×375 images (Flickr30K's usual
size) with one caption each, and the scorer (the tiny model or ViT-B-32, random weights: no
weights can be downloaded here; the speed does not depend on their values). The job's fan-out
(``curation.embedding_chunks.embedding_fan_out``) cuts it into chunks; each worker process
(forked, one torch thread, its model loaded before the clock starts, as a running worker has it)
runs chunks with ``embed_chunk_run``'s call, ``embed_corpus(part=…)``: rows from the database,
images from the storage, the scorer's preprocessing and towers, cache chunk files renamed into
place. Between runs the cache is emptied. Printed: images (+ texts) per second and the speedup.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import shutil
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor

import django
import numpy as np


def _setup(folder: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "blindspot.settings")
    os.environ.setdefault("DEBUG", "1")
    os.environ["BLINDSPOT_EMBEDDINGS_DIR"] = os.path.join(folder, "embeddings")
    os.environ["MEDIA_ROOT"] = os.path.join(folder, "media")
    os.environ["BLINDSPOT_TORCH_THREADS"] = "1"
    django.setup()


def _picture(k: int) -> bytes:
    from PIL import Image

    rng = np.random.default_rng(k)
    pixels = rng.integers(0, 256, size=(375, 500, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels, "RGB").save(out, "JPEG", quality=90)
    return out.getvalue()


def _corpus(n: int):
    from annotator.platform.models import Project
    from curation.assets import image_ingest
    from curation.models import Caption, Corpus, Sample

    project = Project.objects.create(name="scale benchmark")
    corpus = Corpus.objects.create(project=project, name="scale", slug="scale")
    pictures = [_picture(k) for k in range(8)]  # 8 distinct files, each stored n/8 times
    for k in range(n):
        image, _ = image_ingest(data=pictures[k % 8] + k.to_bytes(4, "big"), name=f"{k}.jpg")
        sample = Sample.objects.create(corpus=corpus, image=image, source_id=f"s{k}", position=k)
        Caption.objects.create(
            sample=sample, text=f"a photo number {k} of a dog on the grass", position=0
        )
    Corpus.objects.filter(pk=corpus.pk).update(sample_count=n)
    return corpus


def _scorer(model: str):
    from curation.scorers import scorer_create, scorer_tiny

    if model == "tiny":
        return scorer_tiny()
    return scorer_create(
        label="ViT-B-32 (random weights)",
        model_name="ViT-B-32",
        random_weights=True,
        batch_size=32,
    )


_WORKER: dict = {}


def _init(scorer_pk: int, barrier) -> None:
    """A worker process: its own database connection, one torch thread, its model loaded."""
    from django.db import connections

    from curation.models import Scorer
    from curation.scorers import scorer_load

    connections.close_all()  # the parent's socket is not this process's
    scorer = Scorer.objects.get(pk=scorer_pk)
    scorer_load(scorer)
    _WORKER["scorer"] = scorer
    barrier.wait()


def _ready() -> int:
    return os.getpid()


def _chunk(corpus_pk: int, params: dict) -> int:
    from curation.embeddings import EmbedPart, embed_corpus
    from curation.models import Corpus

    result = embed_corpus(
        scorer=_WORKER["scorer"],
        corpus=Corpus.objects.get(pk=corpus_pk),
        part=EmbedPart(params["modality"], int(params["first"]), int(params["last"])),
    )
    return result["images"]["embedded"] + result["texts"]["embedded"]


def _run(corpus, scorer, workers: int) -> tuple[float, int, int]:
    """Seconds, images and texts embedded by ``workers`` processes taking the chunks."""
    from django.db import connections

    from curation.embedding_chunks import embedding_fan_out
    from curation.scorers.cache import embeddings_clear

    embeddings_clear(scorer=scorer)
    fan_out = embedding_fan_out(work=[(scorer, corpus)])
    n_images = sum(
        t for p, t in zip(fan_out.params, fan_out.totals, strict=True) if p["modality"] == "image"
    )
    connections.close_all()
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(workers)
    with ProcessPoolExecutor(
        workers, mp_context=context, initializer=_init, initargs=(scorer.pk, barrier)
    ) as pool:
        for future in [pool.submit(_ready) for _ in range(workers)]:
            future.result()  # every worker has its model: the clock starts now
        start = time.perf_counter()
        done = sum(f.result() for f in [pool.submit(_chunk, corpus.pk, p) for p in fan_out.params])
        seconds = time.perf_counter() - start
    return seconds, n_images, done - n_images


def embeddings_phase(*, n: int, models: list[str], chunk_items: int, loadavg) -> None:
    folder = tempfile.mkdtemp(prefix="blindspot-embed-")
    _setup(folder)
    from django.conf import settings
    from django.db import connection
    from django.test.utils import setup_test_environment

    settings.BLINDSPOT_EMBED_CHUNK_ITEMS = chunk_items
    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.settings_dict["TEST"]["NAME"] = f"test_{old_name}_scale"
    start = time.perf_counter()
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        corpus = _corpus(n)
        print(
            f"  test database and {n} images + captions ready in "
            f"{time.perf_counter() - start:.1f} s; {chunk_items} items a chunk"
        )
        for model in models:
            scorer = _scorer(model)
            rates = {}
            for workers in (1, 2):
                seconds, images, texts = _run(corpus, scorer, workers)
                rates[workers] = (images + texts) / seconds
                print(
                    f"  {model:>9}, {workers} worker(s): {seconds:7.2f} s, "
                    f"{images / seconds:7.1f} images/s with their {texts} texts "
                    f"({rates[workers]:.1f} items/s)   (load average {loadavg()})",
                    flush=True,
                )
            print(f"  {model:>9}: speedup 2 vs 1 worker {rates[2] / rates[1]:.2f}x")
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
        shutil.rmtree(folder, ignore_errors=True)
