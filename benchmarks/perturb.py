"""Timings of issue 6's Benchmark section; prints the figures.

    .venv/bin/python benchmarks/perturb.py            # full run, ~1–2 min
    .venv/bin/python benchmarks/perturb.py --quick    # smoke run

1. Milliseconds per 512×512 image for each common perturbation of ``curation.perturb`` (paper
   defaults) and for all four in a row (target ≤ 40 ms on one core). The input is float32, as
   ``image_as_array`` returns it, and photo-like (smooth gradients, edges and mild grain), since
   JPEG's cost depends on content.
2. PGD iterations per second (one forward + backward + update, batch 1) on the CPU against the
   tiny random-weights scorer (32 px) and the ViT-B-32 architecture with random weights (224 px).
   I-FGSM costs the same per iteration (a sign instead of a scale); it is timed on the tiny
   scorer as a check.

One core: the thread variables are set before numpy is imported and torch.set_num_threads(1).
The machine may be shared, so the script prints /proc/loadavg before and after, and the median
and best of the repeats.
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import logging  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from curation import perturb  # noqa: E402

TARGET_ALL_MS = 40.0


def loadavg() -> str:
    try:
        return Path("/proc/loadavg").read_text().strip()
    except OSError:
        return "n/a"


def photo_like(size: int = 512, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size] / size
    image = np.stack(
        [
            0.5 + 0.35 * np.sin(5 * xx + 2 * yy),
            0.3 + 0.5 * yy,
            0.6 - 0.4 * xx * yy,
        ],
        axis=-1,
    )
    image[size // 4 : size // 2, size // 3 : 2 * size // 3] = (0.9, 0.8, 0.1)  # a hard-edged box
    image += rng.normal(0, 0.02, image.shape)
    return np.clip(image, 0, 1).astype(np.float32)


def time_ms(fn, repeats: int) -> tuple[float, float]:
    fn()  # warm caches (kernel spectrum, allocator)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples), min(samples)


def common_perturbations(repeats: int) -> None:
    image = photo_like()
    print(f"\n1. Common perturbations, 512×512×3 float32, {repeats} repeats, one core")
    print(f"{'perturbation':28} {'median ms':>10} {'best ms':>9}")
    for name, (function, defaults, _) in perturb.PERTURBATIONS.items():
        median, best = time_ms(lambda f=function, d=defaults: f(image, **d), repeats)
        print(f"{name:28} {median:10.2f} {best:9.2f}")

    def all_four():
        for function, defaults, _ in perturb.PERTURBATIONS.values():
            function(image, **defaults)

    median, best = time_ms(all_four, repeats)
    verdict = "met" if median <= TARGET_ALL_MS else "missed"
    print(f"{'all four':28} {median:10.2f} {best:9.2f}   target ≤ {TARGET_ALL_MS:g} ms: {verdict}")


def attack_rate(encoder, size: int, method: str, iterations: int, repeats: int) -> list[float]:
    import torch

    from curation import adversarial

    x = torch.rand(1, 3, size, size, generator=torch.Generator().manual_seed(0))
    # steps = iterations + 1 evaluations → exactly ``iterations`` updates; init off δ = 0 so PGD
    # has a gradient.
    config = adversarial.AttackConfig(
        method=method,
        steps=iterations + 1,
        schedule_steps=iterations + 1,
        init="constant",
        init_radius=1 / 255,
        step_size=1.0 if method == "pgd" else 0.5 / 255,
    )
    adversarial.attack(encoder, x, adversarial.AttackConfig(method=method, steps=2))  # warm-up
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        adversarial.attack(encoder, x, config)
        rates.append(iterations / (time.perf_counter() - start))
    return rates


def adversarial_rates(quick: bool) -> None:
    import open_clip
    import torch

    from curation.adversarial import OpenClipEncoder
    from curation.tiny_clip import register_tiny

    torch.set_num_threads(1)
    logging.getLogger().setLevel(logging.ERROR)  # "no pretrained weights": expected
    torch.manual_seed(0)
    print("\n2. Adversarial iterations per second, CPU, torch threads = 1, batch 1")
    print(f"{'encoder':34} {'method':7} {'iters':>6} {'median it/s':>12} {'best it/s':>10}")
    rows = [
        (
            register_tiny(),
            "tiny (random weights), 32 px",
            32,
            ["pgd", "ifgsm"],
            50 if quick else 300,
        ),
        ("ViT-B-32", "ViT-B-32 (random weights), 224 px", 224, ["pgd"], 3 if quick else 20),
    ]
    for model_name, label, size, methods, iterations in rows:
        model, _, _ = open_clip.create_model_and_transforms(model_name, pretrained=None)
        encoder = OpenClipEncoder(model)
        for method in methods:
            rates = attack_rate(encoder, size, method, iterations, repeats=1 if quick else 3)
            print(
                f"{label:34} {method:7} {iterations:6d} "
                f"{statistics.median(rates):12.2f} {max(rates):10.2f}"
            )
        del model, encoder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats and iterations")
    parser.add_argument("--repeats", type=int, default=None, help="perturbation repeats (50)")
    args = parser.parse_args()
    repeats = args.repeats or (10 if args.quick else 50)
    print(f"loadavg before: {loadavg()}   (cores: {os.cpu_count()})")
    common_perturbations(repeats)
    adversarial_rates(args.quick)
    print(f"\nloadavg after: {loadavg()}")


if __name__ == "__main__":
    main()
