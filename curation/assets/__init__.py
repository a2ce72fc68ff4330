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

Modules: ``images`` (validation, normalisation), ``storage`` (blobs, ingest, bulk register,
arrays, data URLs), ``thumbnails``, ``selectors`` (corpora and images in a user's reach).
"""

from .images import (
    DECODERS,
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_PIXELS,
    EXIF_ORIENTATION,
    EXTENSIONS,
    MIME,
    STORED_FORMATS,
    ImageRejected,
    NormalisedImage,
    image_normalise,
    max_image_bytes,
    max_image_pixels,
)
from .selectors import corpora_for, images_for
from .storage import (
    ImageEntry,
    blob_save,
    blobs_discard,
    image_as_array,
    image_data_url,
    image_from_array,
    image_ingest,
    images_register,
    open_stored,
)
from .thumbnails import (
    THUMBNAIL_JOB,
    THUMBNAIL_SIDE,
    display_size,
    image_thumbnail,
    thumb_url,
    thumbnails_make,
    thumbnails_start,
)

__all__ = [
    "DECODERS",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_PIXELS",
    "EXIF_ORIENTATION",
    "EXTENSIONS",
    "MIME",
    "STORED_FORMATS",
    "THUMBNAIL_JOB",
    "THUMBNAIL_SIDE",
    "ImageEntry",
    "ImageRejected",
    "NormalisedImage",
    "blob_save",
    "blobs_discard",
    "corpora_for",
    "display_size",
    "image_as_array",
    "image_data_url",
    "image_from_array",
    "image_ingest",
    "image_normalise",
    "image_thumbnail",
    "images_for",
    "images_register",
    "max_image_bytes",
    "max_image_pixels",
    "open_stored",
    "thumb_url",
    "thumbnails_make",
    "thumbnails_start",
]
