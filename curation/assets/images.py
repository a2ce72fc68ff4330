"""Image validation at the edge and normalisation: what is accepted, and the bytes stored.

A file already in a canonical form (JPEG, PNG or WEBP; mode RGB or L; one frame; no
transparency; no EXIF rotation) is kept byte for byte; anything else is re-encoded once (see the
package's docstring). Pure: nothing here touches storage or the database.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from pathlib import PurePosixPath

import numpy as np
from django.conf import settings
from PIL import Image as PILImage
from PIL import ImageFile, ImageOps, UnidentifiedImageError

from ..models import Image
from ..models.assets import image_upload_to

DEFAULT_MAX_PIXELS = 40_000_000
DEFAULT_MAX_BYTES = 20 * 1024 * 1024

# Formats Pillow may even try to parse: a small attack surface, and the allowed list of the issue.
# The JPEG decoder also opens MPO, the multi-picture JPEG many cameras write (format "MPO").
DECODERS = ("JPEG", "PNG", "WEBP", "GIF")
STORED_FORMATS = ("JPEG", "PNG", "WEBP")
EXTENSIONS: dict[str, tuple[str, ...]] = {
    ".jpg": ("JPEG", "MPO"),
    ".jpeg": ("JPEG", "MPO"),
    ".jpe": ("JPEG", "MPO"),
    ".jfif": ("JPEG", "MPO"),
    ".png": ("PNG",),
    ".webp": ("WEBP",),
    ".gif": ("GIF",),
}
MIME = {"JPEG": "image/jpeg", "PNG": "image/png", "WEBP": "image/webp"}
# First bytes of formats people upload by mistake, so the refusal can say what the file is.
_SIGNATURES = (
    (b"BM", "BMP"),
    (b"II*\x00", "TIFF"),
    (b"MM\x00*", "TIFF"),
    (b"%PDF", "PDF"),
    (b"\x00\x00\x00\x0cjP", "JPEG 2000"),
    (b"8BPS", "Photoshop"),
    (b"PK\x03\x04", "zip archive"),
    (b"<svg", "SVG"),
    (b"<?xml", "XML/SVG"),
)
EXIF_ORIENTATION = 0x0112


class ImageRejected(ValueError):
    """A file that is not accepted as an image; the message names the file."""

    def __init__(self, name: str, reason: str):
        self.name = name or "(unnamed)"
        self.reason = reason
        super().__init__(f"{self.name}: {reason}")


@dataclass(frozen=True)
class NormalisedImage:
    """The bytes to store and what the Image row records about them."""

    data: bytes
    sha256: str
    format: str
    width: int
    height: int
    original_format: str

    @property
    def path(self) -> str:
        return image_upload_to(Image(sha256=self.sha256, format=self.format), "")


def max_image_pixels() -> int:
    return int(getattr(settings, "BLINDSPOT_MAX_IMAGE_PIXELS", DEFAULT_MAX_PIXELS))


def max_image_bytes() -> int:
    return int(getattr(settings, "BLINDSPOT_MAX_IMAGE_BYTES", DEFAULT_MAX_BYTES))


def _mb(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MB"


def _sniff(data: bytes) -> str:
    head = data[:16].lstrip()
    for magic, label in _SIGNATURES:
        if head.startswith(magic):
            return label
    if data[4:12] in (b"ftypheic", b"ftypheix", b"ftypmif1", b"ftypavif"):
        return "HEIC/AVIF"
    return ""


def _has_alpha(img: PILImage.Image) -> bool:
    return img.mode in ("RGBA", "LA", "PA", "RGBa", "La") or "transparency" in img.info


def _to_rgb(img: PILImage.Image) -> PILImage.Image:
    """RGB (or L for grayscale) with any alpha flattened over white."""
    if img.mode in ("RGB", "L") and "transparency" not in img.info:
        return img
    if _has_alpha(img) or img.mode == "P":
        rgba = img.convert("RGBA")
        flat = PILImage.new("RGB", rgba.size, (255, 255, 255))
        flat.paste(rgba, mask=rgba.getchannel("A"))
        return flat
    if img.mode.startswith("I;16") or img.mode == "I":
        # 16-bit grayscale: keep the 8 most significant bits instead of clipping at 255.
        wide = np.clip(np.asarray(img, dtype=np.int64), 0, 65535) >> 8
        return PILImage.fromarray(wide.astype(np.uint8))
    return img.convert("RGB")


def _orientation(img: PILImage.Image) -> int:
    try:
        value = int(img.getexif().get(EXIF_ORIENTATION, 1))
    except Exception:  # noqa: BLE001 - a broken EXIF block is no reason to refuse the picture
        return 1
    return value if 1 <= value <= 8 else 1


def image_normalise(*, data: bytes, name: str) -> NormalisedImage:
    """Validate ``data`` with Pillow (real decode, limits, format, extension) and normalise it.

    Raises ImageRejected with a message naming the file. Pure: nothing is stored.
    """
    img, fmt, width, height = _decoded(data, name)
    frames = getattr(img, "n_frames", 1) or 1
    orientation = _orientation(img)
    canonical = (
        fmt in STORED_FORMATS
        and img.mode in ("RGB", "L")
        and not _has_alpha(img)
        and orientation == 1
        and frames == 1
    )
    if canonical:
        return NormalisedImage(
            data=data,
            sha256=hashlib.sha256(data).hexdigest(),
            format=fmt,
            width=width,
            height=height,
            original_format=fmt,
        )
    original = f"{fmt} {img.mode}" if img.mode not in ("RGB", "L") else fmt
    if frames > 1:
        original = f"{original} {frames}f"
    out = ImageOps.exif_transpose(img) if orientation != 1 else img
    out = _to_rgb(out)
    buf = io.BytesIO()
    if fmt in ("JPEG", "MPO"):
        target = "JPEG"
        icc = img.info.get("icc_profile") if img.mode in ("RGB", "L") else None
        out.save(buf, "JPEG", quality=95, **({"icc_profile": icc} if icc else {}))
    else:
        target = "PNG"
        out.save(buf, "PNG")
    stored = buf.getvalue()
    return NormalisedImage(
        data=stored,
        sha256=hashlib.sha256(stored).hexdigest(),
        format=target,
        width=out.width,
        height=out.height,
        original_format=original[:16],
    )


def _decoded(data: bytes, name: str) -> tuple[PILImage.Image, str, int, int]:
    """The first frame decoded in full, its format and size; ImageRejected for a file that is
    empty, too large, of a refused format or extension, over the pixel limit, or damaged."""
    if not data:
        raise ImageRejected(name, "the file is empty (0 bytes)")
    limit = max_image_bytes()
    if len(data) > limit:
        raise ImageRejected(name, f"the file is {_mb(len(data))}; the limit is {_mb(limit)}")
    ext = PurePosixPath(name or "").suffix.lower()
    if ext and ext not in EXTENSIONS:
        raise ImageRejected(
            name,
            f"“{ext}” files are not accepted; send JPEG, PNG, WEBP or GIF "
            f"({', '.join(sorted(EXTENSIONS))})",
        )
    max_pixels = max_image_pixels()
    if ImageFile.LOAD_TRUNCATED_IMAGES:  # a library switched it on: truncated files must fail
        ImageFile.LOAD_TRUNCATED_IMAGES = False
    try:
        probe = PILImage.open(io.BytesIO(data), formats=DECODERS)
    except PILImage.DecompressionBombError:
        raise ImageRejected(
            name, f"more pixels than the limit of {max_pixels:,} (decompression-bomb guard)"
        ) from None
    except UnidentifiedImageError:
        what = _sniff(data)
        found = f" (it looks like {what})" if what else " (or its header is damaged)"
        raise ImageRejected(name, f"not a JPEG, PNG, WEBP or GIF image{found}") from None
    except Exception as exc:  # noqa: BLE001 - any parser failure is a damaged file
        raise ImageRejected(name, f"damaged image header ({exc})") from None
    fmt = probe.format or ""
    if ext and fmt not in EXTENSIONS[ext]:
        shown = "JPEG" if fmt == "MPO" else fmt
        raise ImageRejected(name, f"the name says {ext} but the content is {shown}")
    width, height = probe.size
    if width <= 0 or height <= 0:
        raise ImageRejected(name, f"invalid size {width}×{height}")
    if width * height > max_pixels:
        raise ImageRejected(
            name,
            f"{width}×{height} = {width * height:,} pixels is more than the limit of "
            f"{max_pixels:,} (decompression-bomb guard)",
        )
    try:
        probe.verify()
        img = PILImage.open(io.BytesIO(data), formats=DECODERS)
        img.seek(0)
        img.load()
    except PILImage.DecompressionBombError:
        raise ImageRejected(
            name, f"more pixels than the limit of {max_pixels:,} (decompression-bomb guard)"
        ) from None
    except Exception as exc:  # noqa: BLE001 - truncated, bad CRC, bad Huffman table, …
        raise ImageRejected(name, f"the {fmt} data is damaged or truncated ({exc})") from None
    return img, fmt, width, height
