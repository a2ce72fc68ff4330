#!/usr/bin/env python
"""Embedding throughput on CPU: images/s and texts/s (a script, not a test).

Measures the path the embedding jobs take (``curation.scorers.encode_images`` /
``encode_texts``): for images, the scorer's own preprocessing of a 500×375 PIL image (Flickr30K's
usual size) + the image tower + L2 normalisation; for texts, tokenization (with the truncation
count) + the text tower + normalisation, on Flickr-length captions. Models: the tiny test model
(``curation.tiny_clip``) and the ViT-B-32 architecture, both with random weights (no weights can
be downloaded here; throughput does not depend on the weights' values). Batch sizes 1, 32, 128.
Each cell: one untimed warm-up batch, then whole batches until ``--seconds`` have passed.

    python benchmarks/embed_throughput.py            # ~5 s per cell
    python benchmarks/embed_throughput.py --quick    # ~1 s per cell
    python benchmarks/embed_throughput.py --threads 1

On a machine shared with other busy processes, torch's default of one thread per core can be far
slower than one thread (threads wait for each other at every operation): compare ``--threads``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# Only to import curation.scorers (it needs the app registry); no database is touched.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "blindspot.settings_test")

CAPTIONS = [
    "Two young guys with shaggy hair look at their hands while hanging out in the yard.",
    "A black dog and a spotted dog are fighting on the grass near a wooden fence.",
    "A little girl climbing into a wooden playhouse on a sunny afternoon.",
    "A man in an orange hat starring at something across the busy street.",
]


def images(n: int):
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, size=(375, 500, 3), dtype=np.uint8)
    picture = Image.fromarray(pixels, "RGB")
    return [picture.copy() for _ in range(n)]


def rate(fn, loaded, batch, seconds: float) -> float:
    fn(loaded, batch)  # warm-up: allocator, kernels, BPE cache
    done, started = 0, time.perf_counter()
    while True:
        fn(loaded, batch)
        done += len(batch)
        elapsed = time.perf_counter() - started
        if elapsed >= seconds:
            return done / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="about 1 s per cell")
    parser.add_argument("--seconds", type=float, default=None, help="timed seconds per cell")
    parser.add_argument("--batch-sizes", default="1,32,128")
    parser.add_argument(
        "--threads", type=int, default=0, help="torch intra-op threads (0 = torch's default)"
    )
    args = parser.parse_args()
    seconds = args.seconds or (1.0 if args.quick else 5.0)
    sizes = [int(b) for b in args.batch_sizes.split(",")]

    import django

    django.setup()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    from curation.scorers import encode_images, encode_texts, load_open_clip
    from curation.tiny_clip import TINY_CONFIG, TINY_MODEL_NAME

    models = [
        ("tiny (random)", dict(model_name=TINY_MODEL_NAME, model_config=TINY_CONFIG)),
        ("ViT-B-32 (random)", dict(model_name="ViT-B-32")),
    ]
    load_before = os.getloadavg()
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
        f"{os.cpu_count()} CPUs, load average {load_before[0]:.2f} at start; "
        f"{seconds:g} s per cell, fp32, cpu"
    )
    print(f"{'model':<20}{'batch':>6}{'images/s':>12}{'texts/s':>12}")
    for label, spec in models:
        loaded = load_open_clip(device="cpu", dtype="fp32", **spec)
        for b in sizes:
            pics = images(b)
            texts = [CAPTIONS[i % len(CAPTIONS)] for i in range(b)]
            img_rate = rate(encode_images, loaded, pics, seconds)
            txt_rate = rate(encode_texts, loaded, texts, seconds)
            print(f"{label:<20}{b:>6}{img_rate:>12.1f}{txt_rate:>12.1f}", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f} at the end (machine shared: figures vary)")


if __name__ == "__main__":
    main()
