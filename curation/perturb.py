"""Common image perturbations of VHExpansion (App. C; METRICS.md §3), as pure numpy functions.

Every function takes a float image in [0, 1] of shape H×W×3 (float32 or float64), returns a new
array of the same shape and dtype clipped to [0, 1], and never touches its input. Parameters
default to the paper's values (Sec. 4 "Parameter settings"). Gaussian noise is the only random
one; it takes an integer ``seed`` so the same call gives the same pixels.

``PERTURBATIONS`` maps a name to ``(function, defaults, description)``; ``perturbation_apply``
returns the array together with the full parameter dict used, which is what a recipe records next
to the derived image.

No Django import: the recipe, the benchmark and the CLI share this module.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np
import scipy.fft
from PIL import Image

__all__ = [
    "PERTURBATIONS",
    "Perturbation",
    "brightness",
    "defocus_blur",
    "disk_kernel",
    "gaussian_noise",
    "hsv_to_rgb",
    "jpeg_compression",
    "jpeg_encode",
    "perturbation_apply",
    "rgb_to_hsv",
    "to_uint8",
]


def _check_image(image: Any) -> np.ndarray:
    if not isinstance(image, np.ndarray):
        raise TypeError(f"image must be a numpy array, got {type(image).__name__}")
    if image.ndim != 3 or image.shape[2] != 3 or image.shape[0] < 1 or image.shape[1] < 1:
        raise ValueError(f"image must have shape H×W×3, got {image.shape}")
    if image.dtype not in (np.float32, np.float64):
        raise ValueError(f"image must be float32 or float64 in [0, 1], got {image.dtype}")
    lo, hi = image.min(), image.max()
    # NaN fails both comparisons, so it is refused here too.
    if not (lo >= 0.0 and hi <= 1.0):
        raise ValueError(f"image values must lie in [0, 1], got min {lo} and max {hi}")
    return image


def to_uint8(image: np.ndarray) -> np.ndarray:
    """[0, 1] floats → uint8, rounding to nearest (half to even); the quantisation before JPEG."""
    return np.rint(np.clip(image, 0.0, 1.0) * 255.0).astype(np.uint8)


# --- Gaussian noise -------------------------------------------------------------------------


def gaussian_noise(image: np.ndarray, *, sigma: float = 0.08, seed: int = 0) -> np.ndarray:
    """x + N(0, σ²) per pixel and channel, clipped to [0, 1] (App. C; ImageNet-C gaussian_noise).

    The noise is ``np.random.default_rng(seed).standard_normal((H, W, 3))`` (float64) times σ, so
    it does not depend on the input dtype; the sum is formed in the input dtype.
    """
    x = _check_image(image)
    if not (_is_real(sigma) and math.isfinite(sigma) and sigma >= 0):
        raise ValueError(f"sigma must be a finite number ≥ 0, got {sigma!r}")
    seed = _check_seed(seed)
    noise = np.random.default_rng(seed).standard_normal(x.shape)
    noise *= sigma
    out = noise.astype(x.dtype, copy=False)
    out += x
    return np.clip(out, 0.0, 1.0, out=out)


def _is_real(value: Any) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be an integer ≥ 0, got {seed!r}")
    return int(seed)


# --- Brightness (HSV) -----------------------------------------------------------------------


def rgb_to_hsv(image: np.ndarray) -> np.ndarray:
    """Vectorised ``colorsys.rgb_to_hsv`` (H, S, V all in [0, 1]; grey pixels get H = S = 0)."""
    x = np.asarray(image, dtype=np.float64)
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    v = np.maximum(np.maximum(r, g), b)
    delta = v - np.minimum(np.minimum(r, g), b)
    grey = delta == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(grey, 0.0, delta / v)
        rc, gc, bc = ((v - c) / delta for c in (r, g, b))
    h = np.where(r == v, bc - gc, np.where(g == v, 2.0 + rc - bc, 4.0 + gc - rc))
    h = np.where(grey, 0.0, (h / 6.0) % 1.0)
    return np.stack([h, s, v], axis=-1)


def hsv_to_rgb(hsv: np.ndarray) -> np.ndarray:
    """Vectorised ``colorsys.hsv_to_rgb``."""
    hsv = np.asarray(hsv, dtype=np.float64)
    h, s, v = hsv[..., 0], hsv[..., 1], hsv[..., 2]
    i = np.floor(h * 6.0)
    f = h * 6.0 - i
    p, q, t = v * (1.0 - s), v * (1.0 - s * f), v * (1.0 - s * (1.0 - f))
    sector = i.astype(np.int64) % 6
    # colorsys's table: sector → (r, g, b)
    r = np.choose(sector, [v, q, p, p, t, v])
    g = np.choose(sector, [t, v, v, q, p, p])
    b = np.choose(sector, [p, p, t, v, v, q])
    return np.stack([r, g, b], axis=-1)


def brightness(image: np.ndarray, *, c: float = 0.5) -> np.ndarray:
    """RGB → HSV, V ← clip(V + c, 0, 1), HSV → RGB (App. C; ImageNet-C ``brightness``).

    Computed without the explicit round trip, using an identity of the HSV model: H and S depend
    only on the ratios of R, G, B to V = max(R, G, B), and HSV → RGB is V times a function of
    (H, S). Changing V to V' therefore scales RGB by V'/V. A black pixel (V = 0, so H = S = 0 by
    colorsys's convention) becomes grey V'. Equal to ``hsv_to_rgb(rgb_to_hsv(x) with V moved)`` up
    to float rounding (tested against colorsys), and about 25× faster than that round trip.
    """
    x = _check_image(image)
    if not (_is_real(c) and -1.0 <= c <= 1.0):
        raise ValueError(f"c must be a number in [-1, 1], got {c!r}")
    v = np.maximum(np.maximum(x[..., 0], x[..., 1]), x[..., 2])
    v_new = np.clip(v + x.dtype.type(c), 0.0, 1.0)
    black = v == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = v_new / v
    scale[black] = 0.0
    out = x * scale[..., None]
    if black.any():
        out[black] = v_new[black][:, None]
    # Rounding can leave V'·(x/V) a hair above 1 when V' = 1.
    return np.clip(out, 0.0, 1.0, out=out)


# --- Defocus blur ---------------------------------------------------------------------------


def _gaussian_taps(ksize: int, sigma: float) -> np.ndarray:
    # cv2.getGaussianKernel for sigma > 0: exp(-x²/(2σ²)) on the centred grid, normalised.
    grid = np.arange(ksize, dtype=np.float64) - (ksize - 1) / 2.0
    taps = np.exp(-(grid**2) / (2.0 * sigma * sigma))
    return taps / taps.sum()


@lru_cache(maxsize=16)
def _disk_kernel_cached(radius: int, alias_blur: float) -> np.ndarray:
    # ImageNet-C / imagecorruptions ``disk``: a 17×17 grid up to radius 8 (else 2r+1), the binary
    # disk X² + Y² ≤ r² normalised to sum 1, then cv2.GaussianBlur (3×3 up to radius 8, else 5×5,
    # σ = alias_blur, border reflect-101) as anti-aliasing.
    if radius <= 8:
        half, ksize = 8, 3
    else:
        half, ksize = radius, 5
    grid = np.arange(-half, half + 1)
    xx, yy = np.meshgrid(grid, grid)
    disk = (xx**2 + yy**2 <= radius**2).astype(np.float64)
    disk /= disk.sum()
    taps = _gaussian_taps(ksize, alias_blur)
    pad = ksize // 2
    blurred = np.pad(disk, pad, mode="reflect")  # numpy "reflect" == cv2 BORDER_REFLECT_101
    blurred = sum(taps[k] * blurred[k : k + disk.shape[0], :] for k in range(ksize))
    blurred = sum(taps[k] * blurred[:, k : k + disk.shape[1]] for k in range(ksize))
    blurred.setflags(write=False)
    return blurred


def disk_kernel(radius: int = 5, alias_blur: float = 0.5) -> np.ndarray:
    """The defocus kernel of ImageNet-C (METRICS.md §3), float64, read-only.

    For radius ≤ 6 the anti-aliased disk does not reach the grid's border, so the kernel sums to 1
    exactly (up to rounding); at radius 7–8 the reflect-101 border of the anti-alias blur folds a
    little mass back, as in the reference code.
    """
    if isinstance(radius, bool) or not isinstance(radius, int | np.integer) or radius < 1:
        raise ValueError(f"radius must be an integer ≥ 1, got {radius!r}")
    if not (_is_real(alias_blur) and math.isfinite(alias_blur) and alias_blur > 0):
        raise ValueError(f"alias_blur must be a number > 0, got {alias_blur!r}")
    return _disk_kernel_cached(int(radius), float(alias_blur))


@lru_cache(maxsize=16)
def _trimmed_flipped_kernel(radius: int, alias_blur: float) -> tuple[int, np.ndarray]:
    kernel = _disk_kernel_cached(radius, alias_blur)
    # Trim all-zero border rows/columns (the kernel is symmetric): they contribute nothing and
    # only widen the padding.
    centre = kernel.shape[0] // 2
    nonzero_rows = np.flatnonzero(kernel.any(axis=1))
    half = int(centre - nonzero_rows[0])
    kernel = kernel[centre - half : centre + half + 1, centre - half : centre + half + 1]
    # Correlation (cv2.filter2D) = convolution with the flipped kernel.
    flipped = np.ascontiguousarray(kernel[::-1, ::-1])
    flipped.setflags(write=False)
    return half, flipped


@lru_cache(maxsize=16)
def _kernel_spectrum(radius: int, alias_blur: float, shape: tuple[int, int], dtype: str):
    _, flipped = _trimmed_flipped_kernel(radius, alias_blur)
    spectrum = scipy.fft.rfft2(flipped.astype(dtype), s=shape)
    spectrum.setflags(write=False)
    return spectrum


def defocus_blur(image: np.ndarray, *, radius: int = 5, alias_blur: float = 0.5) -> np.ndarray:
    """Each channel correlated with ``disk_kernel(radius, alias_blur)``, then clipped (App. C).

    Matches ImageNet-C's ``cv2.filter2D`` with its default border (reflect-101). Computed by FFT
    over the reflect-padded image: the circular convolution wraps only into the padding, which is
    discarded, so the result equals the direct correlation up to float rounding (float32 images
    are transformed in single precision).
    """
    x = _check_image(image)
    disk_kernel(radius, alias_blur)  # validates the parameters
    half, _ = _trimmed_flipped_kernel(int(radius), float(alias_blur))
    h, w, _ = x.shape
    if half >= min(h, w):
        raise ValueError(f"image {h}×{w} is too small for a defocus kernel of radius {radius}")
    shape = (
        scipy.fft.next_fast_len(h + 2 * half),
        scipy.fft.next_fast_len(w + 2 * half),
    )
    spectrum = _kernel_spectrum(int(radius), float(alias_blur), shape, x.dtype.name)
    # Reflect-pad straight into the FFT-sized buffer: every 512×512×3 temporary costs about a
    # millisecond in page faults, as much as the arithmetic.
    buffer = np.zeros((3, *shape), dtype=x.dtype)
    buffer[:, half : half + h, half : half + w] = np.moveaxis(x, 2, 0)
    rows = slice(half, half + h)
    for k in range(1, half + 1):  # numpy "reflect" == cv2 BORDER_REFLECT_101
        buffer[:, rows, half - k] = buffer[:, rows, half + k]
        buffer[:, rows, half + w - 1 + k] = buffer[:, rows, half + w - 1 - k]
    for k in range(1, half + 1):
        buffer[:, half - k, : w + 2 * half] = buffer[:, half + k, : w + 2 * half]
        buffer[:, half + h - 1 + k, : w + 2 * half] = buffer[:, half + h - 1 - k, : w + 2 * half]
    spectrum_x = scipy.fft.rfft2(buffer, overwrite_x=True)
    spectrum_x *= spectrum
    blurred = scipy.fft.irfft2(spectrum_x, s=shape, overwrite_x=True)
    # Linear convolution index n = output index + 2·half (the "valid" part).
    out = np.empty_like(x)
    valid = blurred[:, 2 * half : 2 * half + h, 2 * half : 2 * half + w]
    return np.clip(np.moveaxis(valid, 0, 2), 0.0, 1.0, out=out)


# --- JPEG -----------------------------------------------------------------------------------


def _check_quality(quality: Any) -> int:
    if isinstance(quality, bool) or not isinstance(quality, int | np.integer):
        raise ValueError(f"quality must be an integer in 1–100, got {quality!r}")
    if not 1 <= quality <= 100:
        raise ValueError(f"quality must be an integer in 1–100, got {quality}")
    return int(quality)


def jpeg_encode(image: np.ndarray, *, quality: int = 30) -> bytes:
    """The JPEG file Pillow writes for ``to_uint8(image)`` at ``quality`` (default 4:2:0 chroma)."""
    x = _check_image(image)
    buffer = io.BytesIO()
    Image.fromarray(to_uint8(x)).save(buffer, format="JPEG", quality=_check_quality(quality))
    return buffer.getvalue()


def jpeg_compression(image: np.ndarray, *, quality: int = 30) -> np.ndarray:
    """Encode as JPEG at ``quality`` with Pillow and decode again (App. C; ImageNet-C).

    The float image is first rounded to 8 bits (``to_uint8``), as any JPEG file must be.
    """
    data = jpeg_encode(image, quality=quality)
    with Image.open(io.BytesIO(data)) as decoded:
        pixels = np.asarray(decoded.convert("RGB"))
    out = pixels.astype(image.dtype)
    out /= 255.0
    return out


# --- Registry -------------------------------------------------------------------------------


class Perturbation(NamedTuple):
    function: Callable[..., np.ndarray]
    defaults: Mapping[str, Any]
    description: str


PERTURBATIONS: dict[str, Perturbation] = {
    "gaussian_noise": Perturbation(
        gaussian_noise,
        {"sigma": 0.08, "seed": 0},
        "Gaussian noise: add N(0, σ²) per pixel and channel, clip to [0, 1] (App. C).",
    ),
    "brightness": Perturbation(
        brightness,
        {"c": 0.5},
        "Brightness: RGB → HSV, V += c clipped to [0, 1], back to RGB (App. C).",
    ),
    "defocus_blur": Perturbation(
        defocus_blur,
        {"radius": 5, "alias_blur": 0.5},
        "Defocus blur: each channel filtered with an anti-aliased disk of the given radius "
        "(ImageNet-C kernel), clip to [0, 1] (App. C).",
    ),
    "jpeg_compression": Perturbation(
        jpeg_compression,
        {"quality": 30},
        "JPEG compression: encode at the given quality with Pillow and decode (App. C).",
    ),
}


def perturbation_apply(
    name: str, image: np.ndarray, **params: Any
) -> tuple[np.ndarray, dict[str, Any]]:
    """Apply the registered perturbation ``name``; returns ``(array, params)``.

    ``params`` overrides the defaults; the returned dict is every parameter actually used, to
    record with the derived image. Unknown names or parameters raise ``ValueError``.
    """
    try:
        entry = PERTURBATIONS[name]
    except KeyError:
        known = ", ".join(sorted(PERTURBATIONS))
        raise ValueError(f"unknown perturbation {name!r}; known: {known}") from None
    unknown = sorted(set(params) - set(entry.defaults))
    if unknown:
        allowed = ", ".join(sorted(entry.defaults))
        raise ValueError(f"{name} takes no parameter {', '.join(unknown)}; it takes {allowed}")
    used = {**entry.defaults, **params}
    return entry.function(image, **used), used
