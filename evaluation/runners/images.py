"""Images of benchmark items: find the curation ``Image`` an item names (never fetching a URL)."""

from __future__ import annotations

import io
import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from urllib.parse import urlparse

from django.conf import settings
from PIL import Image as PILImage

from curation.assets import ImageRejected, image_ingest, max_image_bytes
from curation.models import Image

_SHA256 = re.compile(r"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])")


class ImageMissing(LookupError):
    """An item names an image this server cannot find (the call is recorded as failed)."""


def image_root() -> Path | None:
    root = getattr(settings, "BLINDSPOT_EVAL_IMAGE_ROOT", "") or ""
    return Path(root) if root else None


class ImageResolver:
    """Benchmark items name images by string. In order: a curation Image whose SHA-256 the
    string contains (exports write ``images/<sha256>.<ext>``); an Image whose ``source`` is the
    string; a file under ``BLINDSPOT_EVAL_IMAGE_ROOT`` (the path, or a URL's path or its file
    name), ingested so the generation can point at it. URLs are never fetched."""

    def __init__(self) -> None:
        self._cache: dict[str, Image | ImageMissing] = {}

    def prefetch(self, refs: Iterable[str]) -> None:
        """Look up many names in two queries (by hash, by source) before the calls start."""
        wanted = {r for r in refs if r and r.strip() and r not in self._cache}
        by_sha: dict[str, list[str]] = {}
        for ref in wanted:
            match = _SHA256.search(ref.strip().lower())
            if match:
                by_sha.setdefault(match.group(0), []).append(ref)
        for image in Image.objects.filter(sha256__in=by_sha):
            for ref in by_sha[image.sha256]:
                self._cache[ref] = image
        by_source: dict[str, list[str]] = {}
        for ref in wanted - set(self._cache):
            by_source.setdefault(ref.strip()[:500], []).append(ref)
        # Highest id first, so the oldest image with a source is the one kept.
        for image in Image.objects.filter(source__in=by_source).order_by("-id"):
            for ref in by_source[image.source]:
                self._cache[ref] = image

    def __call__(self, ref: str) -> Image:
        if ref not in self._cache:
            try:
                self._cache[ref] = self._resolve(ref)
            except ImageMissing as exc:
                self._cache[ref] = exc
        found = self._cache[ref]
        if isinstance(found, ImageMissing):
            raise found
        return found

    def _resolve(self, ref: str) -> Image:
        ref = (ref or "").strip()
        if not ref:
            raise ImageMissing("The item names no image.")
        match = _SHA256.search(ref.lower())
        if match:
            image = Image.objects.filter(sha256=match.group(0)).first()
            if image is not None:
                return image
        image = Image.objects.filter(source=ref[:500]).order_by("id").first()
        if image is not None:
            return image
        path = self._local_file(ref)
        if path is None:
            raise ImageMissing(
                f"Image {ref!r} is neither an imported image nor a file under "
                "BLINDSPOT_EVAL_IMAGE_ROOT; import the images or set that folder."
            )
        if path.stat().st_size > max_image_bytes():
            raise ImageMissing(f"Image {ref!r} is larger than the upload limit.")
        try:
            image, _ = image_ingest(data=path.read_bytes(), name=path.name, source=ref[:500])
        except ImageRejected as exc:
            raise ImageMissing(f"Image {ref!r} was rejected: {exc.reason}") from exc
        return image

    @staticmethod
    def _local_file(ref: str) -> Path | None:
        root = image_root()
        if root is None:
            return None
        parsed = urlparse(ref)
        relative = parsed.path if parsed.scheme in ("http", "https") else ref
        candidates = [relative.lstrip("/"), PurePosixPath(relative).name]
        base = root.resolve()
        for candidate in candidates:
            if not candidate:
                continue
            path = (base / candidate).resolve()
            # A name like "../../etc/passwd" must not leave the folder.
            if path.is_relative_to(base) and path.is_file():
                return path
        return None


def open_pil(image: Image):
    """The image as an RGB PIL image (read through the storage, so S3 works too)."""
    with image.file.storage.open(image.file.name, "rb") as handle:
        pil = PILImage.open(io.BytesIO(handle.read()))
        pil.load()
    return pil.convert("RGB")
