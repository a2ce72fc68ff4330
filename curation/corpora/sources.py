"""Where an import's files come from: a folder on the server, a zip or tar archive, or files in
memory, each read by safe relative POSIX name; and finding the manifest among them.

Archives are never extracted to disk: members are read into memory one at a time with a bounded
read, so path traversal cannot write anywhere, and unsafe names, links, too many members or too
many unpacked bytes (zip/gzip bombs) refuse the archive.
"""

from __future__ import annotations

import os
import re
import stat
import tarfile
import zipfile
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import IO, NamedTuple

from django.conf import settings

from annotator.platform.errors import Invalid

from .. import assets
from .manifest_rows import safe_relpath

MANIFEST_NAMES = {
    "manifest.jsonl",
    "manifest.csv",
    "captions.jsonl",
    "captions.csv",
    "captions.txt",
    "results.csv",
    "results_20130124.token",
    "results.token",
    "flickr8k.token.txt",
    "flickr30k.token",
}
MANIFEST_SUFFIXES = (".jsonl", ".ndjson", ".csv", ".json", ".token", ".tsv")
JUNK = ("__MACOSX/", ".DS_Store", "Thumbs.db", "desktop.ini")


def _setting(name: str, default: int) -> int:
    return int(getattr(settings, name, default))


def max_upload_bytes() -> int:
    return _setting("BLINDSPOT_MAX_CORPUS_UPLOAD_BYTES", 4 * 1024**3)


def max_manifest_bytes() -> int:
    return _setting("BLINDSPOT_MAX_MANIFEST_BYTES", 200 * 1024**2)


def max_archive_members() -> int:
    return _setting("BLINDSPOT_MAX_ARCHIVE_MEMBERS", 500_000)


def max_unpacked_bytes() -> int:
    return _setting("BLINDSPOT_MAX_ARCHIVE_UNPACKED_BYTES", 16 * 1024**3)


def is_junk(name: str) -> bool:
    base = PurePosixPath(name).name
    return name.startswith("__MACOSX/") or base.startswith("._") or base in JUNK


def is_image_name(name: str) -> bool:
    return PurePosixPath(name).suffix.lower() in assets.EXTENSIONS


class Member(NamedTuple):
    name: str
    data: bytes | None
    error: str = ""


class Source:
    """Files of an import, by safe relative POSIX name; reads are bounded by ``limit``."""

    label = ""

    def names(self) -> list[str]:
        raise NotImplementedError

    def read_many(self, names: Iterable[str], limit: int) -> Iterator[Member]:
        raise NotImplementedError

    def read(self, name: str, limit: int) -> Member:
        return next(iter(self.read_many([name], limit)))

    def close(self) -> None:
        return None


def too_large(size: int, limit: int) -> str:
    return f"the file is {size / 1024**2:.1f} MB; the limit is {limit / 1024**2:.1f} MB"


class MemorySource(Source):
    """Files held in a dict (the demo corpus, tests)."""

    def __init__(self, files: dict[str, bytes], label: str = "upload"):
        self.label = label
        self.files = {}
        for name, data in files.items():
            safe = safe_relpath(name)
            if safe is None:
                raise Invalid(f"{label}: “{name}” is an unsafe path; nothing was imported.")
            self.files[safe] = data

    def names(self) -> list[str]:
        return list(self.files)

    def read_many(self, names: Iterable[str], limit: int) -> Iterator[Member]:
        for name in names:
            data = self.files[name]
            if len(data) > limit:
                yield Member(name, None, too_large(len(data), limit))
            else:
                yield Member(name, data)


class FolderSource(Source):
    """A folder on the server (the management command). Links that lead outside are refused."""

    def __init__(self, root: str | Path, label: str = ""):
        self.root = Path(root).resolve()
        self.label = label or str(root)
        if not self.root.is_dir():
            raise Invalid(f"{self.label} is not a folder.")
        self._names: list[str] = []
        count = 0
        for dirpath, _dirs, files in os.walk(self.root, followlinks=False):
            for fname in files:
                count += 1
                if count > max_archive_members():
                    raise Invalid(f"{self.label} has more than {max_archive_members():,} files.")
                path = Path(dirpath) / fname
                if not self._inside(path):
                    continue
                self._names.append(path.relative_to(self.root).as_posix())

    def _inside(self, path: Path) -> bool:
        try:
            return path.resolve().is_relative_to(self.root)
        except OSError:
            return False

    def names(self) -> list[str]:
        return list(self._names)

    def read_many(self, names: Iterable[str], limit: int) -> Iterator[Member]:
        for name in names:
            path = self.root / name
            if safe_relpath(name) is None or not self._inside(path):
                yield Member(name, None, "the path leads outside the folder")
                continue
            try:
                size = path.stat().st_size
                if size > limit:
                    yield Member(name, None, too_large(size, limit))
                    continue
                with path.open("rb") as handle:
                    yield Member(name, handle.read(limit + 1))
            except OSError as exc:
                yield Member(name, None, f"cannot be read ({exc.strerror or exc})")


class ZipSource(Source):
    def __init__(self, file: str | Path | IO[bytes], label: str):
        self.label = label
        try:
            self.zf = zipfile.ZipFile(file)
            infos = self.zf.infolist()
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
            raise Invalid(f"{label} is not a readable zip archive ({exc}).") from None
        if len(infos) > max_archive_members():
            raise Invalid(f"{label} has more than {max_archive_members():,} members.")
        self.infos: dict[str, zipfile.ZipInfo] = {}
        total = 0
        for info in infos:
            if info.is_dir():
                continue
            safe = safe_relpath(info.filename)
            if safe is None:
                raise Invalid(
                    f"{label}: member “{info.filename}” has an unsafe path (absolute or with "
                    "“..”); nothing was imported."
                )
            if stat.S_ISLNK(info.external_attr >> 16):
                raise Invalid(f"{label}: member “{info.filename}” is a link; links are refused.")
            if info.flag_bits & 0x1:
                raise Invalid(f"{label}: member “{info.filename}” is encrypted.")
            total += info.file_size
            # Images are compressed already: one that shrinks 200-fold is a bomb. Caption text
            # shrinks that much honestly (a long line of one letter); its read is bounded by
            # the manifest limit, and the line by BLINDSPOT_MAX_LINE_BYTES.
            ratio = info.file_size / max(info.compress_size, 1) if is_image_name(safe) else 0
            if total > max_unpacked_bytes() or (info.file_size > 2**20 and ratio > 200):
                raise Invalid(
                    f"{label} unpacks to more than allowed (a zip bomb?); nothing was imported."
                )
            self.infos.setdefault(safe, info)

    def names(self) -> list[str]:
        return list(self.infos)

    def read_many(self, names: Iterable[str], limit: int) -> Iterator[Member]:
        for name in names:
            info = self.infos[name]
            if info.file_size > limit:
                yield Member(name, None, too_large(info.file_size, limit))
                continue
            try:
                with self.zf.open(info) as handle:
                    data = handle.read(limit + 1)
            except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
                yield Member(name, None, f"cannot be unpacked ({exc})")
                continue
            if len(data) > limit:
                yield Member(name, None, too_large(len(data), limit))
            else:
                yield Member(name, data)

    def close(self) -> None:
        self.zf.close()


class TarSource(Source):
    """tar, tar.gz, tar.bz2, tar.xz; members are read in archive order (one pass over gzip)."""

    def __init__(self, file: str | Path | IO[bytes], label: str):
        self.label = label
        try:
            if isinstance(file, str | Path):
                self.tf = tarfile.open(file, mode="r:*")
            else:
                self.tf = tarfile.open(fileobj=file, mode="r:*")
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise Invalid(f"{label} is not a readable tar archive ({exc}).") from None
        self.infos: dict[str, tarfile.TarInfo] = {}
        total = count = 0
        try:
            for info in self.tf:
                count += 1
                if count > max_archive_members():
                    raise Invalid(f"{label} has more than {max_archive_members():,} members.")
                total += max(info.size, 0)
                if total > max_unpacked_bytes():
                    raise Invalid(
                        f"{label} unpacks to more than allowed (a tar bomb?); nothing was imported."
                    )
                if info.isdir():
                    continue
                if info.issym() or info.islnk():
                    raise Invalid(f"{label}: member “{info.name}” is a link; links are refused.")
                if not info.isreg():
                    raise Invalid(f"{label}: member “{info.name}” is not a regular file.")
                safe = safe_relpath(info.name)
                if safe is None:
                    raise Invalid(
                        f"{label}: member “{info.name}” has an unsafe path (absolute or with "
                        "“..”); nothing was imported."
                    )
                self.infos.setdefault(safe, info)
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise Invalid(f"{label} is damaged or truncated ({exc}).") from None

    def names(self) -> list[str]:
        return list(self.infos)

    def read_many(self, names: Iterable[str], limit: int) -> Iterator[Member]:
        # In archive order: going back in a gzip stream means decompressing from the start.
        for name in sorted(names, key=lambda n: self.infos[n].offset_data):
            info = self.infos[name]
            if info.size > limit:
                yield Member(name, None, too_large(info.size, limit))
                continue
            try:
                handle = self.tf.extractfile(info)
                data = handle.read(limit + 1) if handle else b""
            except (tarfile.TarError, OSError, EOFError) as exc:
                yield Member(name, None, f"cannot be unpacked ({exc})")
                continue
            yield Member(name, data)

    def close(self) -> None:
        self.tf.close()


def open_source(file: str | Path | IO[bytes], *, label: str = "") -> Source:
    """A folder, or a zip/tar archive given as a path or a seekable binary file."""
    if isinstance(file, str | Path):
        label = label or Path(file).name
        if Path(file).is_dir():
            return FolderSource(file, label)
        if zipfile.is_zipfile(file):
            return ZipSource(file, label)
        try:
            is_tar = tarfile.is_tarfile(file)
        except Exception:  # noqa: BLE001 - a damaged compressed stream is just "not a tar"
            is_tar = False
        if is_tar:
            return TarSource(file, label)
    else:
        label = label or "upload"
        file.seek(0)
        if zipfile.is_zipfile(file):
            file.seek(0)
            return ZipSource(file, label)
        file.seek(0)
        try:
            with tarfile.open(fileobj=file, mode="r:*") as probe:
                probe.next()
            is_tar = True
        except Exception:  # noqa: BLE001 - a damaged compressed stream is just "not a tar"
            is_tar = False
        file.seek(0)
        if is_tar:
            return TarSource(file, label)
    raise Invalid(f"{label} is not a zip or tar archive (.zip, .tar, .tar.gz, .tgz).")


class Index:
    """Finds a manifest's file among the source's names, also below a top-level folder."""

    def __init__(self, names: Iterable[str]):
        self.by_suffix: dict[str, list[str]] = defaultdict(list)
        for name in names:
            parts = name.split("/")
            for k in range(len(parts)):
                self.by_suffix["/".join(parts[k:])].append(name)

    def resolve(self, file: str) -> tuple[str | None, str]:
        hits = self.by_suffix.get(file, [])
        if file in hits or len(hits) == 1:
            return (file if file in hits else hits[0]), ""
        if hits:
            return None, (
                f"“{file}” matches several files ({hits[0]}, {hits[1]}); give its full path"
            )
        return None, ""


def find_manifest(source: Source) -> str:
    names = [n for n in source.names() if not is_junk(n)]
    named = [
        n
        for n in names
        if PurePosixPath(n).name.lower() in MANIFEST_NAMES
        or re.match(r"^captions_\w+\.json$", PurePosixPath(n).name)
    ]
    candidates = named or [n for n in names if PurePosixPath(n).suffix.lower() in MANIFEST_SUFFIXES]
    if not candidates:
        raise Invalid(
            f"No manifest in {source.label}: add manifest.jsonl or manifest.csv next to the "
            "images, or upload the manifest or caption file separately."
        )
    depth = min(n.count("/") for n in candidates)
    top = sorted(n for n in candidates if n.count("/") == depth)
    if len(top) > 1:
        raise Invalid(
            f"Several caption files in {source.label} ({', '.join(top[:4])}); upload the one "
            "to use as the manifest."
        )
    return top[0]
