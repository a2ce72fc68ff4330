"""The web upload of a corpus: checked at the edge with line-numbered errors, stored, then
imported in the ``curation.import_corpus`` job; and the stored uploads' lifetime.

A refused import deletes its stored upload (the same files would be refused again); an import
that failed for another reason (a stopped worker, a lost connection) keeps it, so the job page's
Retry can run it again.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Iterable, Iterator
from pathlib import PurePosixPath

from django.core.files.storage import default_storage

from annotator.platform import edge
from annotator.platform.errors import Invalid
from annotator.platform.jobs import job_enqueue
from annotator.platform.models import Project

from .formats import FORMATS
from .importing import corpus_import, corpus_plan, corpus_slug
from .manifest_rows import Reading, language_normalise
from .sources import Source, max_manifest_bytes, max_upload_bytes, open_source, too_large

IMPORT_JOB = "curation.import_corpus"
MAX_TABLE_BYTES = 20 * 1024 * 1024


def upload_name(upload) -> str:
    """The base name of an uploaded file, as the user's machine called it."""
    return PurePosixPath(str(getattr(upload, "name", "") or "upload").replace("\\", "/")).name


def upload_text(upload, limit: int = MAX_TABLE_BYTES) -> str:
    """An uploaded table as text: at most ``limit`` bytes of UTF-8, refused otherwise."""
    if upload.size > limit:
        raise Invalid(f"{upload_name(upload)} is larger than {limit // 2**20} MB.")
    upload.seek(0)
    return text_decoded(upload.read(), upload_name(upload))


def text_decoded(content: bytes, name: str) -> str:
    try:
        return edge.decode_utf8(content)
    except edge.NotUtf8 as exc:
        raise Invalid(f"{name or 'The file'} is not UTF-8 text ({exc}).") from None


def upload_store(upload, folder: str) -> str:
    """Store an upload under ``folder`` with a safe version of its name; its storage name."""
    upload.seek(0)
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", upload_name(upload))[-100:] or "upload"
    return default_storage.save(f"{folder}/{safe}", upload)


def uploads_delete(names: Iterable[str]) -> None:
    """Delete stored uploads, and their folder on local disk once it is empty."""
    folders = set()
    for name in names:
        if name:
            default_storage.delete(name)
            folders.add(str(PurePosixPath(name).parent))
    for folder in folders:
        with contextlib.suppress(NotImplementedError, OSError):
            os.rmdir(default_storage.path(folder))  # only an empty folder goes


@contextlib.contextmanager
def uploads_kept_for_retry(names: Iterable[str]) -> Iterator[None]:
    """Around an import job: its stored uploads are deleted when it succeeds or is refused
    (``Invalid``: the same files would be refused again); any other failure (a lost database
    connection, a stopped worker) keeps them, so the job page's Retry can run it again."""
    names = [n for n in names if n]
    missing = [n for n in names if not default_storage.exists(n)]
    if missing:
        raise Invalid(
            f"The uploaded file {PurePosixPath(missing[0]).name} is no longer stored (a refused "
            "import deletes its upload); upload it again."
        )
    try:
        yield
    except Invalid:
        uploads_delete(names)
        raise
    uploads_delete(names)


@contextlib.contextmanager
def uploads_deleted_on_error(names: list[str]) -> Iterator[list[str]]:
    """Around storing uploads and enqueueing their job: append each stored name to the list;
    if anything fails before the job exists, they are deleted again."""
    try:
        yield names
    except BaseException:
        uploads_delete(names)
        raise


def uploads_enqueue(
    *, kind: str, project: Project, uploads: dict, params: dict, total: int, created_by, prefix=""
):
    """Store ``uploads`` (``{key: upload or None}``) in a fresh folder, then enqueue job ``kind``
    with ``params`` plus, per key, the stored name (``key``) and the user's file name
    (``key_name``), "" for None; stored files are deleted if the job cannot be enqueued."""
    folder = f"curation/uploads/{prefix}{uuid.uuid4().hex}"
    with uploads_deleted_on_error([]) as stored:
        for key, upload in uploads.items():
            params[key] = upload_store(upload, folder) if upload is not None else ""
            params[f"{key}_name"] = upload_name(upload) if upload is not None else ""
            stored.append(params[key])
        return job_enqueue(
            kind=kind, params=params, created_by=created_by, project=project, total=total
        )


def corpus_import_start(
    *,
    project: Project,
    name: str,
    archive,
    manifest=None,
    fmt: str = "auto",
    language: str = "en",
    licence: str = "",
    source: str = "",
    description: str = "",
    created_by=None,
):
    """Check an uploaded archive (and manifest) now, with line-numbered errors, then import it
    in the ``curation.import_corpus`` job. Returns (job, number of samples)."""
    if archive is None:
        raise Invalid("Choose an archive (.zip, .tar, .tar.gz) with the images.")
    if fmt not in FORMATS:
        raise Invalid(f"Unknown format “{fmt}”.")
    if archive.size > max_upload_bytes():
        raise Invalid(f"{upload_name(archive)}: {too_large(archive.size, max_upload_bytes())}.")
    slug = corpus_slug(project=project, name=name)
    manifest_bytes = None
    manifest_name = ""
    if manifest is not None:
        manifest_name = upload_name(manifest)
        if manifest.size > max_manifest_bytes():
            raise Invalid(f"{manifest_name}: {too_large(manifest.size, max_manifest_bytes())}.")
        manifest.seek(0)
        manifest_bytes = manifest.read()
    archive.seek(0)
    src = open_source(archive.file, label=upload_name(archive))
    try:
        plan = corpus_plan(
            source=src,
            reading=Reading(fmt, language, licence),
            manifest=manifest_bytes,
            manifest_name=manifest_name,
        )
    finally:
        src.close()
    params = {
        "project_id": project.pk,
        "name": name.strip(),
        "slug": slug,
        "format": plan.format,
        "language": language_normalise(language),
        "licence": licence,
        "source": source,
        "description": description,
    }
    job = uploads_enqueue(
        kind=IMPORT_JOB,
        project=project,
        uploads={"archive": archive, "manifest": manifest},
        params=params,
        total=len(set(plan.members)) + 1,
        created_by=created_by,
    )
    return job, len(plan.rows)


@contextlib.contextmanager
def stored_local_path(name: str) -> Iterator[str]:
    """A local file path for a stored upload (a temporary copy when storage is remote)."""
    try:
        yield default_storage.path(name)
        return
    except NotImplementedError:
        pass
    suffix = "".join(PurePosixPath(name).suffixes)[-16:]
    with tempfile.NamedTemporaryFile(suffix=suffix) as tmp:
        with default_storage.open(name, "rb") as handle:
            shutil.copyfileobj(handle, tmp)
        tmp.flush()
        yield tmp.name


@contextlib.contextmanager
def stored_source(name: str, label: str = "") -> Iterator[Source | None]:
    """The stored archive ``name`` opened as a Source (None for no name), closed after."""
    if not name:
        yield None
        return
    with stored_local_path(name) as path:
        src = open_source(path, label=label or "archive")
        try:
            yield src
        finally:
            src.close()


def corpus_import_run(*, params: dict, created_by=None, job_id: int | None = None) -> dict:
    """The body of the import job: re-check and import the stored upload, then delete it.

    A refused import deletes the upload too; one that failed for another reason (a stopped
    worker, a lost connection) keeps it so the job page's Retry can run it again.
    """
    project = Project.objects.get(pk=params["project_id"])
    with uploads_kept_for_retry([params.get("archive", ""), params.get("manifest", "")]):
        return _import_stored(project, params, created_by=created_by, job_id=job_id)


def _import_stored(project: Project, params: dict, *, created_by, job_id: int | None) -> dict:
    manifest = None
    if params.get("manifest"):
        with default_storage.open(params["manifest"], "rb") as handle:
            manifest = handle.read()
    with stored_source(params["archive"], params.get("archive_name", "")) as src:
        return corpus_import(
            project=project,
            name=params["name"],
            slug=params.get("slug", ""),
            source=src,
            manifest=manifest,
            manifest_name=params.get("manifest_name", ""),
            fmt=params.get("format", "auto"),
            language=params.get("language", "en"),
            licence=params.get("licence", ""),
            source_url=params.get("source", ""),
            description=params.get("description", ""),
            created_by=created_by,
            job_id=job_id,
        )
