"""Writing a recipe's export files: rows read in primary-key chunks, JSON lines, zip members with
a fixed timestamp (the same content gives the same archive bytes), images named by their own
SHA-256 and copied file by file in that order, files hashed and stored, and Parquet files with
the images embedded (Hugging Face ``Image`` features in the schema metadata)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from typing import IO, Any

from django.core.files import File
from django.core.files.storage import default_storage

from curation.models import Image

ZIP_TIME = (1980, 1, 1, 0, 0, 0)
CHUNK = 500
IMAGE_EXT = {"JPEG": "jpg", "PNG": "png", "WEBP": "webp"}


def image_path(image: Image) -> str:
    """An image's path inside an archive: ``images/<sha256>.<ext>``."""
    return f"images/{image.sha256}.{IMAGE_EXT.get(image.format, image.format.lower())}"


def chunks(queryset, size: int = CHUNK) -> Iterator[list]:
    """Rows in primary-key chunks (constant memory, stable under concurrent inserts)."""
    last = 0
    while True:
        batch = list(queryset.filter(pk__gt=last).order_by("pk")[:size])
        if not batch:
            return
        yield batch
        last = batch[-1].pk


def json_line(row: dict) -> bytes:
    return (json.dumps(row, ensure_ascii=False, sort_keys=False) + "\n").encode("utf-8")


def zip_member(zf: zipfile.ZipFile, name: str, source: IO[bytes], *, store=False) -> None:
    """One member with the fixed timestamp (stored as is for images, else deflated)."""
    info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
    info.compress_type = zipfile.ZIP_STORED if store else zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    with zf.open(info, "w") as out:
        shutil.copyfileobj(source, out, 1 << 20)


def images_by_sha(ids: Iterable[int], size: int = CHUNK) -> Iterator[Image]:
    """The images in SHA-256 order (an archive's member order), loaded a chunk at a time."""
    ids_ = sorted(ids)
    keyed = []
    for start in range(0, len(ids_), size):
        keyed += Image.objects.filter(pk__in=ids_[start : start + size]).values_list("sha256", "pk")
    ordered = [pk for _sha, pk in sorted(keyed)]
    for start in range(0, len(ordered), size):
        chunk = ordered[start : start + size]
        yield from Image.objects.filter(pk__in=chunk).order_by("sha256")


def zip_images(zf: zipfile.ZipFile, ids: Iterable[int], progress=None, *, under: str = "") -> None:
    """The image files under ``under + image_path``, in SHA-256 order, each once, stored as they
    are; ``progress(done, total)`` before the first and after each."""
    ids, seen = set(ids), set()
    if progress:
        progress(0, len(ids))
    for image in images_by_sha(ids):
        path = under + image_path(image)
        if path in seen:
            continue
        seen.add(path)
        with default_storage.open(image.file.name, "rb") as data:
            zip_member(zf, path, data, store=True)
        if progress:
            progress(len(seen), len(ids))


def file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def store_file(path: str, name: str) -> str:
    """Save the local file ``path`` to the default storage as ``name``; the stored name."""
    with open(path, "rb") as fh:
        return default_storage.save(name, File(fh, name=os.path.basename(name)))


def parquet_schema(fields: Iterable[str], types: Mapping[str, Any], features: dict):
    """A Parquet schema (strings unless ``types`` says otherwise) carrying the Hugging Face
    ``features`` in its metadata, so ``datasets`` reads the image columns as images."""
    import pyarrow as pa

    columns = [pa.field(f, types.get(f, pa.string())) for f in fields]
    meta = {"huggingface": json.dumps({"info": {"features": features}})}
    return pa.schema(columns, metadata=meta)


def _arrow_type(feature: dict):
    """The Arrow type of one Hugging Face feature: Value, Image, Sequence (nested)."""
    import pyarrow as pa

    kind = feature.get("_type")
    if kind == "Image":
        return image_struct()
    if kind in ("Sequence", "List"):
        return pa.list_(_arrow_type(feature["feature"]))
    if kind == "Value":
        return pa.type_for_alias(feature["dtype"])
    raise ValueError(f"no Arrow type for the feature {feature!r}")


def features_schema(features: dict):
    """A Parquet schema with one column per Hugging Face feature, in order, of its Arrow type,
    carrying the features in its metadata (a family's published Parquet layout)."""
    types = {name: _arrow_type(feature) for name, feature in features.items()}
    return parquet_schema(list(features), types, features)


def image_struct():
    """The Arrow type of an embedded image: its bytes and its archive path."""
    import pyarrow as pa

    return pa.struct([("bytes", pa.binary()), ("path", pa.string())])


def _image_bytes(image: Image) -> bytes:
    with default_storage.open(image.file.name, "rb") as fh:
        return fh.read()


def parquet_write(path: str, records: IO[bytes], *, schema, image_fields, rows: int = 64) -> None:
    """Write JSON-lines ``records`` (images as ``image_path``s in ``image_fields``) to ``path`` in
    row groups of ``rows``, each image's bytes embedded next to its path."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    fields = schema.names
    by_path = {}
    records.seek(0)
    with pq.ParquetWriter(path, schema, compression="zstd") as writer:
        batch: list[dict] = []

        def flush() -> None:
            if not batch:
                return
            paths = {r[f] for r in batch for f in image_fields}
            missing = [p for p in paths if p not in by_path]
            shas = [p.split("/")[1].split(".")[0] for p in missing]
            for image in Image.objects.filter(sha256__in=shas):
                by_path[image_path(image)] = image
            columns = {f: [] for f in fields}
            for row in batch:
                for f in fields:
                    value = row[f]
                    if f in image_fields:
                        value = {"bytes": _image_bytes(by_path[value]), "path": value}
                    columns[f].append(value)
            writer.write_table(pa.table(columns, schema=schema))
            batch.clear()
            by_path.clear()

        for line in records:
            batch.append(json.loads(line))
            if len(batch) >= rows:
                flush()
        flush()
