"""Images and archives made in memory for the asset and corpus tests (no data files)."""

from __future__ import annotations

import io
import struct
import tarfile
import zipfile
import zlib

import numpy as np
from PIL import Image


def stored(media, under: str = "") -> list[str]:
    """The files (not folders) below `under` in the media root `media`, relative to it."""
    root = media / under
    return sorted(p.relative_to(media).as_posix() for p in root.rglob("*") if p.is_file())


def png(size=(8, 6), colour=(200, 30, 40), mode="RGB", **save) -> bytes:
    buf = io.BytesIO()
    Image.new(mode, size, colour).save(buf, "PNG", **save)
    return buf.getvalue()


def jpeg(size=(8, 6), colour=(200, 30, 40), mode="RGB", **save) -> bytes:
    buf = io.BytesIO()
    Image.new(mode, size, colour).save(buf, "JPEG", quality=95, **save)
    return buf.getvalue()


def noisy_jpeg(size=(96, 64), seed=0) -> bytes:
    """A JPEG with real scan data (random pixels), so cutting it truncates the scan."""
    pixels = np.random.default_rng(seed).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, "JPEG", quality=90)
    return buf.getvalue()


def gif_two_frames(size=(6, 4)) -> bytes:
    """A two-frame GIF: red, then blue."""
    first = Image.new("RGB", size, (255, 0, 0)).convert("P")
    second = Image.new("RGB", size, (0, 0, 255)).convert("P")
    buf = io.BytesIO()
    first.save(buf, "GIF", save_all=True, append_images=[second], duration=100, loop=0)
    return buf.getvalue()


def png_header_only(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width``×``height`` with almost no pixel data."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00" * 64)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def zip_bytes(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


def tar_bytes(files: dict[str, bytes], mode: str = "w:gz", links: dict[str, str] | None = None):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            tf.addfile(info)
    return buf.getvalue()
