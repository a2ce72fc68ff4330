"""A paper's published release read from a local folder or file, for ``evaluate import-version``.

Releases on the Hugging Face hub are Parquet shards whose images are embedded as
``{"bytes", "path"}`` structs (the ``Image`` feature); they are read here with ``datasets``
from local files only (nothing is downloaded). Other releases keep a metadata file beside an
images folder. Either way the images are ingested as curation Images (deduplicated by SHA-256)
and items name them ``images/<sha256>.<ext>``, as Blindspot's own exports do, so every model run
can send them. A family's ``release`` reader returns its importable content; the import itself
then goes through the family's parser like any file, all or nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from annotator.platform.errors import Invalid
from curation.assets import ImageRejected, image_ingest

IMAGE_EXT = {"JPEG": "jpg", "PNG": "png", "WEBP": "webp"}


@dataclass(frozen=True)
class ReleaseFile:
    """A release turned into the family's importable text (``filename`` picks the reader)."""

    content: str
    filename: str
    images: int  # images ingested (or found already stored)


def refuse(message: str, line: int, error: str) -> Invalid:
    return Invalid(message, [{"line": line, "error": error}])


def parquet_files(path: Path) -> list[Path]:
    """The Parquet shards of a release: the file itself, or every ``*.parquet`` under the
    folder (the hub's ``data/<split>-0000k-of-0000n.parquet``), in name order."""
    if path.is_file():
        if path.suffix.lower() != ".parquet":
            raise refuse(f"{path.name} is not a Parquet file.", 0, "expected a .parquet file")
        return [path]
    if not path.is_dir():
        raise refuse(f"No such file or folder: {path}", 0, "the path does not exist")
    files = sorted(p for p in path.rglob("*.parquet") if p.is_file())
    if not files:
        raise refuse(
            f"No Parquet file under {path}.",
            0,
            "expected the Hugging Face layout: Parquet shards "
            "(e.g. data/train-00000-of-00001.parquet)",
        )
    return files


def parquet_rows(
    files: Sequence[Path], *, required: Sequence[str], images: Sequence[str], with_images: bool
) -> Iterator[dict[str, Any]]:
    """The shards' rows in order, read by ``datasets`` streaming from the local files (no cache,
    no network). Image columns come as ``{"bytes", "path"}`` (undecoded) when ``with_images``,
    else are left out. Refuses shards that lack a ``required`` column, naming it."""
    # Heavy (pandas, fsspec, ~5 s): loaded only when a release is read, like torch for scorers.
    import datasets

    try:
        dataset = datasets.load_dataset(
            "parquet", data_files=[str(f) for f in files], split="train", streaming=True
        )
    except (ValueError, OSError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise _unreadable(exc) from exc
    columns = list(dataset.features or {})
    missing = [c for c in required if c not in columns]
    if missing:
        raise refuse(
            f"The release lacks the column{'s' if len(missing) > 1 else ''} {', '.join(missing)}.",
            0,
            f"columns found: {', '.join(columns) or 'none'}",
        )
    if with_images:
        for column in images:
            dataset = dataset.cast_column(column, datasets.Image(decode=False))
    else:
        dataset = dataset.remove_columns([c for c in images if c in columns])
    try:
        yield from dataset
    except (ValueError, OSError) as exc:
        raise _unreadable(exc) from exc


def _unreadable(exc: Exception) -> Invalid:
    return refuse(
        "A Parquet shard of the release cannot be read.", 0, f"{type(exc).__name__}: {exc}"[:300]
    )


def image_bytes(value: Any, base: Path, line: int, column: str) -> tuple[bytes, str]:
    """(bytes, name) of an embedded image struct; a struct with only a path names a file
    beside the release."""
    if not isinstance(value, dict):
        raise refuse("An image is missing.", line, f"{column} holds no image")
    data, name = value.get("bytes"), str(value.get("path") or "")
    if data:
        return bytes(data), name or f"{line}-{column}"
    candidate = (base / name).resolve() if name else None
    if candidate is None or not candidate.is_relative_to(base.resolve()) or not candidate.is_file():
        raise refuse(
            "An image is missing.", line, f"{column} has no bytes and no file {name!r} beside it"
        )
    return candidate.read_bytes(), candidate.name


def image_ref(data: bytes, name: str, line: int, column: str) -> str:
    """Ingest one image; its reference in item data (``images/<sha256>.<ext>``)."""
    try:
        image, _ = image_ingest(data=data, name=os.path.basename(name) or "image", source=name)
    except ImageRejected as exc:
        raise refuse("An image was rejected.", line, f"{column}: {exc.reason}") from exc
    return f"images/{image.sha256}.{IMAGE_EXT.get(image.format, image.format.lower())}"
