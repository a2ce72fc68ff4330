"""Content-addressed storage of images: blobs by SHA-256, one image ingested or many registered
in a few queries, and images made from arrays or read back as arrays and data URLs.
"""

from __future__ import annotations

import base64
import io
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import numpy as np
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from PIL import Image as PILImage

from ..models import Image
from .images import MIME, STORED_FORMATS, NormalisedImage, image_normalise

log = logging.getLogger(__name__)


def blob_save(path: str, data: bytes) -> bool:
    """Write a content-addressed blob unless an intact copy is there; True if this call wrote it."""
    if default_storage.exists(path):
        try:
            if default_storage.size(path) == len(data):
                return False
        except (OSError, NotImplementedError):
            return False
        default_storage.delete(path)  # a partial write of an earlier crash
    saved = default_storage.save(path, ContentFile(data))
    if saved != path:
        # Another process stored the same bytes between exists() and save(): keep theirs.
        default_storage.delete(saved)
        return False
    return True


def blobs_discard(paths: Iterable[str]) -> int:
    """Delete blobs this process wrote that no Image row references (after a rollback)."""
    paths = list(paths)
    if not paths:
        return 0
    kept: set[str] = set()
    for start in range(0, len(paths), 1000):  # SQLite caps the parameters of one statement
        chunk = paths[start : start + 1000]
        kept.update(Image.objects.filter(file__in=chunk).values_list("file", flat=True))
        kept.update(Image.objects.filter(thumbnail__in=chunk).values_list("thumbnail", flat=True))
    deleted = 0
    for path in paths:
        if path in kept:
            continue
        try:
            default_storage.delete(path)
            deleted += 1
        except OSError:
            log.warning("could not delete orphan blob %s", path)
    return deleted


def _clip(value: str | None, field: str) -> str:
    return (value or "")[: Image._meta.get_field(field).max_length]


def image_ingest(
    *,
    data: bytes,
    name: str,
    source: str = "",
    licence: str = "",
    attribution: str = "",
    created_by=None,
    derived_from: Image | None = None,
    derivation: dict | None = None,
    generation=None,
) -> tuple[Image, bool]:
    """Validate, normalise, dedupe by SHA-256 and store one image; True if a new row was made.

    An existing image keeps its first-seen source, licence and provenance.
    """
    norm = image_normalise(data=data, name=name)
    existing = Image.objects.filter(sha256=norm.sha256).first()
    blob_save(norm.path, norm.data)  # also heals a blob lost from storage
    if existing is not None:
        return existing, False
    meta = {"source": source, "licence": licence, "attribution": attribution}
    image = ImageEntry.of(norm, original_name=name, **meta).row(
        derived_from=derived_from,
        derivation=derivation or {},
        generation=generation,
        created_by=created_by,
    )
    try:
        with transaction.atomic():
            image.save()
    except IntegrityError:
        # The same bytes were ingested concurrently; theirs is as good as ours.
        return Image.objects.get(sha256=norm.sha256), False
    return image, True


@dataclass(frozen=True)
class ImageEntry:
    """An already stored blob to register as an Image row (bulk imports)."""

    sha256: str
    path: str
    format: str
    width: int
    height: int
    original_format: str
    byte_size: int
    original_name: str = ""
    source: str = ""
    licence: str = ""
    attribution: str = ""

    @classmethod
    def of(cls, norm: NormalisedImage, **meta: str | None) -> ImageEntry:
        same = ("sha256", "path", "format", "width", "height", "original_format")
        return cls(
            **{key: getattr(norm, key) for key in same},
            byte_size=len(norm.data),
            **{key: value or "" for key, value in meta.items()},
        )

    def row(self, **fields) -> Image:
        """The unsaved Image of this blob, its metadata clipped to the columns' lengths."""
        image = Image(
            sha256=self.sha256,
            width=self.width,
            height=self.height,
            format=self.format,
            original_format=self.original_format[:16],
            byte_size=self.byte_size,
            original_name=_clip(PurePosixPath(self.original_name).name, "original_name"),
            **{key: _clip(getattr(self, key), key) for key in ("source", "licence", "attribution")},
            **fields,
        )
        image.file.name = self.path
        return image


def images_register(
    *, entries: Iterable[ImageEntry], created_by=None, batch_size: int = 1000
) -> tuple[dict[str, Image], set[str]]:
    """Get or create the rows of stored blobs in a few queries: ({sha: Image}, new shas)."""
    unique: dict[str, ImageEntry] = {}
    for entry in entries:
        unique.setdefault(entry.sha256, entry)
    shas = list(unique)
    existing: set[str] = set()
    for i in range(0, len(shas), batch_size):
        existing.update(
            Image.objects.filter(sha256__in=shas[i : i + batch_size]).values_list(
                "sha256", flat=True
            )
        )
    new_rows = []
    for sha, e in unique.items():
        if sha in existing:
            continue
        new_rows.append(e.row(created_by=created_by))
    # ignore_conflicts: a concurrent import of the same bytes wins the row, we reuse it.
    Image.objects.bulk_create(new_rows, batch_size=batch_size, ignore_conflicts=True)
    by_sha: dict[str, Image] = {}
    for i in range(0, len(shas), batch_size):
        for image in Image.objects.filter(sha256__in=shas[i : i + batch_size]):
            by_sha[image.sha256] = image
    return by_sha, set(shas) - existing


def open_stored(image: Image, draft: tuple[int, int] | None = None) -> PILImage.Image:
    """The stored image decoded (JPEG at a reduced scale that still covers ``draft``)."""
    with image.file.storage.open(image.file.name, "rb") as handle:
        img = PILImage.open(io.BytesIO(handle.read()), formats=STORED_FORMATS)
        if draft:
            # JPEG decodes at 1/2, 1/4 or 1/8 scale when that still covers ``draft``: 3-4x faster.
            img.draft(img.mode, draft)
        img.load()
    return img


def image_from_array(
    *,
    array: Any,
    name: str,
    derived_from: Image | None,
    derivation: dict | None,
    created_by=None,
) -> tuple[Image, bool]:
    """Store an H×W×3 array (float in [0, 1], or uint8) as PNG through ``image_ingest``.

    A derived image inherits the source, licence and attribution of the image it came from:
    a perturbation of a licensed photo is still bound by its licence.
    """
    arr = np.asarray(array)
    if arr.ndim != 3 or arr.shape[2] != 3 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"expected an H×W×3 array, got shape {arr.shape}")
    if arr.dtype == np.uint8:
        pixels = arr
    else:
        arr = arr.astype(np.float64)
        if not np.isfinite(arr).all():
            raise ValueError("the array holds NaN or infinite values")
        pixels = np.clip(np.rint(arr * 255.0), 0, 255).astype(np.uint8)
    buf = io.BytesIO()
    PILImage.fromarray(np.ascontiguousarray(pixels)).save(buf, "PNG")
    stem = PurePosixPath(name or "").stem or "derived"
    return image_ingest(
        data=buf.getvalue(),
        name=f"{stem}.png",
        source=derived_from.source if derived_from else "",
        licence=derived_from.licence if derived_from else "",
        attribution=derived_from.attribution if derived_from else "",
        created_by=created_by,
        derived_from=derived_from,
        derivation=derivation or {},
    )


def image_as_array(image: Image) -> np.ndarray:
    """The stored image as float32 in [0, 1], H×W×3 (grayscale repeated on the three channels)."""
    img = open_stored(image).convert("RGB")
    return np.asarray(img, dtype=np.float32) / np.float32(255.0)


def image_data_url(image: Image, max_side: int = 1024) -> str:
    """A base64 ``data:`` URL for vision LLM messages; larger images are shrunk to ``max_side``."""
    with image.file.storage.open(image.file.name, "rb") as handle:
        raw = handle.read()
    fmt = image.format
    if max(image.width, image.height) > max_side:
        img = PILImage.open(io.BytesIO(raw), formats=STORED_FORMATS)
        img.load()
        img.thumbnail((max_side, max_side), PILImage.Resampling.LANCZOS)
        buf = io.BytesIO()
        if fmt == "JPEG":
            img.save(buf, "JPEG", quality=90)
        elif fmt == "WEBP":
            img.save(buf, "WEBP", quality=90)
        else:
            img.save(buf, "PNG")
        raw = buf.getvalue()
    return f"data:{MIME.get(fmt, 'image/png')};base64,{base64.b64encode(raw).decode('ascii')}"
