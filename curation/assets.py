"""Image assets: validation at the edge, normalisation, content-addressed storage, thumbnails.

Decisions (the contract other modules rely on):

- **What is stored.** A file already in a canonical form (JPEG, PNG or WEBP; mode RGB or L; one
  frame; no transparency; no EXIF rotation) is stored byte for byte, so its SHA-256 is the one of
  the file the dataset published. Anything else is re-encoded once: EXIF orientation applied,
  converted to RGB, JPEG/MPO sources as JPEG quality 95 (no second generation of lossy artefacts
  beyond one), every other source as PNG (lossless). GIF and animated WEBP/PNG keep their first
  frame.
- **Alpha** is flattened over white (the paper/page background most transparent product shots and
  diagrams are drawn for; black would hide dark line art).
- **Hash** is the SHA-256 of the stored (normalised) bytes. Normalisation is deterministic, so the
  same upload always gives the same bytes and dedupes; blobs live at ``images/ab/<sha>.<ext>``.
- **Limits** come from settings read with defaults: ``BLINDSPOT_MAX_IMAGE_PIXELS`` (40 M, the
  decompression-bomb guard; Pillow's own 2×89 M guard still applies above it) and
  ``BLINDSPOT_MAX_IMAGE_BYTES`` (20 MB).
- **Storage** is Django's ``default_storage`` (local disk by default, S3 with django-storages).
  A blob written for a transaction that rolls back is harmless: it is addressed by its content,
  reused by the next ingest of the same bytes, and bulk imports delete the blobs they wrote.
"""

from __future__ import annotations

import base64
import hashlib
import io
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import numpy as np
from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from PIL import Image as PILImage
from PIL import ImageFile, ImageOps, UnidentifiedImageError

from annotator.platform import roles
from annotator.platform.jobs import job_enqueue, job_progress
from annotator.platform.scoping import projects_for

from .models import Corpus, Image, Sample
from .models.assets import image_upload_to, thumbnail_upload_to

log = logging.getLogger(__name__)

DEFAULT_MAX_PIXELS = 40_000_000
DEFAULT_MAX_BYTES = 20 * 1024 * 1024
THUMBNAIL_SIDE = 256
THUMBNAIL_JOB = "curation.make_thumbnails"

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


# --------------------------------------------------------------------------------------------
# storage
# --------------------------------------------------------------------------------------------
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
    image = Image(
        sha256=norm.sha256,
        width=norm.width,
        height=norm.height,
        format=norm.format,
        original_format=norm.original_format,
        byte_size=len(norm.data),
        original_name=_clip(PurePosixPath(name or "").name, "original_name"),
        source=_clip(source, "source"),
        licence=_clip(licence, "licence"),
        attribution=_clip(attribution, "attribution"),
        derived_from=derived_from,
        derivation=derivation or {},
        generation=generation,
        created_by=created_by,
    )
    image.file.name = norm.path
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
    def of(cls, norm: NormalisedImage, **meta: str) -> ImageEntry:
        return cls(
            sha256=norm.sha256,
            path=norm.path,
            format=norm.format,
            width=norm.width,
            height=norm.height,
            original_format=norm.original_format,
            byte_size=len(norm.data),
            **meta,
        )


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
        row = Image(
            sha256=sha,
            width=e.width,
            height=e.height,
            format=e.format,
            original_format=e.original_format[:16],
            byte_size=e.byte_size,
            original_name=_clip(PurePosixPath(e.original_name).name, "original_name"),
            source=_clip(e.source, "source"),
            licence=_clip(e.licence, "licence"),
            attribution=_clip(e.attribution, "attribution"),
            created_by=created_by,
        )
        row.file.name = e.path
        new_rows.append(row)
    # ignore_conflicts: a concurrent import of the same bytes wins the row, we reuse it.
    Image.objects.bulk_create(new_rows, batch_size=batch_size, ignore_conflicts=True)
    by_sha: dict[str, Image] = {}
    for i in range(0, len(shas), batch_size):
        for image in Image.objects.filter(sha256__in=shas[i : i + batch_size]):
            by_sha[image.sha256] = image
    return by_sha, set(shas) - existing


# --------------------------------------------------------------------------------------------
# arrays and data URLs
# --------------------------------------------------------------------------------------------
def _open_stored(image: Image, draft: tuple[int, int] | None = None) -> PILImage.Image:
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
    img = _open_stored(image).convert("RGB")
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


# --------------------------------------------------------------------------------------------
# thumbnails
# --------------------------------------------------------------------------------------------
def _thumbnail_blob(image: Image) -> str | None:
    """Write the thumbnail file; its path, or None when the image already has an intact one."""
    if image.thumbnail and image.thumbnail.storage.exists(image.thumbnail.name):
        return None
    img = _open_stored(image, draft=display_size(image))
    if img.mode not in ("RGB", "L"):
        img = img.convert("RGB")
    img.thumbnail((THUMBNAIL_SIDE, THUMBNAIL_SIDE), PILImage.Resampling.LANCZOS)
    buf = io.BytesIO()
    # method 2: half the encoding time of the default 4, no visible difference at 256 px.
    img.save(buf, "WEBP", quality=80, method=2)
    path = thumbnail_upload_to(image, "")
    blob_save(path, buf.getvalue())
    return path


def image_thumbnail(image: Image) -> bool:
    """Make the 256 px WEBP thumbnail of one image; False if it already had an intact one."""
    path = _thumbnail_blob(image)
    if path is None:
        return False
    Image.objects.filter(pk=image.pk).update(thumbnail=path)
    image.thumbnail.name = path
    return True


def thumbnails_make(
    *, image_ids: Iterable[int], job_id: int | None = None, batch: int = 64
) -> dict:
    """Thumbnails for the given images, in batches, skipping those that have one (idempotent).

    Each batch's rows are updated in one transaction (one commit, not one per image). A picture
    that cannot be read is reported and skipped: pages fall back to the original.
    """
    ids = sorted({int(i) for i in image_ids})
    made = skipped = 0
    failed: list[int] = []
    for start in range(0, len(ids), batch):
        chunk = ids[start : start + batch]
        changed: list[Image] = []
        for image in Image.objects.filter(pk__in=chunk).order_by("pk"):
            try:
                path = _thumbnail_blob(image)
            except Exception:  # noqa: BLE001 - one unreadable blob must not stop the batch
                log.exception("thumbnail of image %s failed", image.pk)
                failed.append(image.pk)
                continue
            if path is None:
                skipped += 1
            else:
                image.thumbnail.name = path
                changed.append(image)
        if changed:
            with transaction.atomic():
                Image.objects.bulk_update(changed, ["thumbnail"])
            made += len(changed)
        if job_id is not None:
            job_progress(
                job_id=job_id,
                done=min(start + batch, len(ids)),
                total=len(ids),
                message=f"{made} thumbnails made",
            )
    return {"made": made, "skipped": skipped, "failed": failed}


def thumbnails_start(*, image_ids: Iterable[int], project=None, created_by=None):
    """Enqueue the thumbnail job (after commit); None when every image already has one."""
    wanted = sorted({int(i) for i in image_ids})
    ids: list[int] = []
    for start in range(0, len(wanted), 1000):  # SQLite caps the parameters of one statement
        ids.extend(
            Image.objects.filter(pk__in=wanted[start : start + 1000], thumbnail="")
            .order_by("pk")
            .values_list("pk", flat=True)
        )
    if not ids:
        return None
    return job_enqueue(
        kind=THUMBNAIL_JOB,
        params={"image_ids": ids},
        created_by=created_by,
        project=project,
        total=len(ids),
    )


def display_size(image: Image, side: int = THUMBNAIL_SIDE) -> tuple[int, int]:
    """Width and height of ``image`` shrunk to fit ``side`` (the thumbnail's box)."""
    w, h = image.width or side, image.height or side
    scale = min(1.0, side / max(w, h))
    return max(1, round(w * scale)), max(1, round(h * scale))


def thumb_url(image: Image | None) -> str:
    """The thumbnail's URL, or the image's own while the thumbnail job has not run."""
    if image is None:
        return ""
    field = image.thumbnail if image.thumbnail else image.file
    return field.url if field else ""


# --------------------------------------------------------------------------------------------
# reads (scoped like annotator.selectors: out of reach answers like missing)
# --------------------------------------------------------------------------------------------
def corpora_for(user) -> QuerySet[Corpus]:
    """Corpora of the projects a curator (or admin) is a member of."""
    if not roles.has_role(user, [roles.CURATOR]):
        return Corpus.objects.none()
    return Corpus.objects.filter(project__in=projects_for(user))


def images_for(user) -> QuerySet[Image]:
    """Images a curator may open: used by a sample in reach, derived from one, or their own."""
    if roles.has_role(user, [roles.ADMIN]):
        return Image.objects.all()
    if not roles.has_role(user, [roles.CURATOR]):
        return Image.objects.none()
    in_reach = Sample.objects.filter(corpus__project__in=projects_for(user))
    return Image.objects.filter(
        Q(Exists(in_reach.filter(image=OuterRef("pk"))))
        | Q(Exists(in_reach.filter(image=OuterRef("derived_from"))))
        | Q(created_by=user)
    )
