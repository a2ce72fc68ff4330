"""Images for vision messages as base64 data URLs, plus what the stored record shows instead.

A stored image goes through ``curation.assets.image_data_url``; raw bytes are encoded here the
same way (longest side at most ``max_side``, PNG for images with transparency, JPEG otherwise).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import io
from dataclasses import dataclass

from PIL import Image as PILImage

from curation.assets import image_data_url

from .kept import Kept
from .rendering import image_placeholder

MAX_SIDE = 1024


@dataclass(frozen=True)
class PreparedImage:
    data_url: str
    placeholder: str
    record: dict  # {"id", "sha256", "mime", "bytes"} for the generation's params


# A stored image's data URL, kept per process for its next calls: a hunt asks about the same
# pool images again and again, every target in the same step (reading the file and base64 were
# on each step's path). Keyed by content (sha256), file and size; the newest KEPT_BYTES kept.
KEPT_BYTES = 32 * 1024 * 1024
_kept: Kept[PreparedImage] = Kept(KEPT_BYTES, weight=lambda prepared: len(prepared.data_url))


def prepare_image(image, *, max_side: int = MAX_SIDE) -> PreparedImage:
    """``image`` is a ``curation.models.Image`` or raw image bytes."""
    if not isinstance(image, bytes | bytearray):
        key = (image.sha256, image.file.name, max_side)
        kept = _kept.get(key) or _kept.put(key, _prepare(image, max_side=max_side))
        # The record goes into each generation's params: a dict of its own for each.
        return dataclasses.replace(kept, record=dict(kept.record, id=image.pk))
    return _prepare(image, max_side=max_side)


def _prepare(image, *, max_side: int) -> PreparedImage:
    if isinstance(image, bytes | bytearray):
        sha = hashlib.sha256(image).hexdigest()
        url = _data_url_from_bytes(bytes(image), max_side=max_side)
        image_id = None
    else:
        sha = image.sha256
        url = image_data_url(image, max_side=max_side)
        image_id = image.pk
    mime = url[5 : url.index(";")]
    payload = url[url.index(",") + 1 :]
    size = len(payload) * 3 // 4 - payload[-2:].count("=")
    return PreparedImage(
        data_url=url,
        placeholder=image_placeholder(sha256=sha, mime=mime, size=size),
        record={"id": image_id, "sha256": sha, "mime": mime, "bytes": size},
    )


def _data_url_from_bytes(data: bytes, *, max_side: int) -> str:
    with PILImage.open(io.BytesIO(data)) as img:
        img.load()
        has_alpha = img.mode in ("RGBA", "LA") or "transparency" in img.info
        img = img.convert("RGBA" if has_alpha else "RGB")
        img.thumbnail((max_side, max_side))
        out = io.BytesIO()
        if has_alpha:
            img.save(out, format="PNG")
            mime = "image/png"
        else:
            img.save(out, format="JPEG", quality=90)
            mime = "image/jpeg"
    return f"data:{mime};base64,{base64.b64encode(out.getvalue()).decode('ascii')}"
