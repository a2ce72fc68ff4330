"""Corpus import: a folder or an archive of images plus a manifest or a common caption file.

Formats (``fmt``; "auto" detects from the file name and first line):

- ``jsonl`` manifest, one sample per line: ``{"file": "img/1.jpg", "caption": "…"}`` or
  ``"captions": ["…", {"text": "…", "language": "zh"}]``, optional ``language`` (BCP 47),
  ``source_id``, ``licence``, ``source`` (URL), ``attribution``.
- ``csv`` manifest with a header: ``file`` (or image, image_name, filename, file_name, path) and
  ``caption`` (or comment, text), optional language, source_id, licence, source, attribution.
  Rows naming the same file (or source_id) are one sample with several captions.
- ``coco``: COCO captions JSON (``images`` + ``annotations`` + ``licenses``).
- ``flickr``: Flickr30K/8K ``results_20130124.token`` (``1000092795.jpg#0<TAB>caption``) or
  ``results.csv`` (``image_name| comment_number| comment``).

All or nothing: every line is checked first and every problem is reported with its line
(``annotator.platform.errors.Invalid``); images are decoded and validated before any row is
written; the rows are written in one transaction; blobs written for an import that fails are
deleted, and so is the stored upload of a refused import (a failure a retry could fix keeps it).
Text PostgreSQL cannot store (NUL, lone surrogates) and over-long lines are refused with their
line and field (``annotator.platform.edge``).

Modules: ``rows`` (a manifest row, one record checked), ``formats`` (the four parsers),
``sources`` (folder, zip, tar, memory; finding the manifest), ``importing`` (plan, store, write),
``uploads`` (the web upload and its job), ``demo`` (the demo corpus drawn with Pillow).
"""

from .demo import demo_corpus
from .formats import FORMAT_CHOICES, FORMATS, detect_format, parse_rows
from .importing import ImportPlan, corpus_import, corpus_plan, corpus_slug, images_read
from .manifest_rows import (
    CaptionRow,
    Manifest,
    ManifestRow,
    first_value,
    language_normalise,
    safe_relpath,
)
from .sources import (
    FolderSource,
    Index,
    Member,
    MemorySource,
    Source,
    TarSource,
    ZipSource,
    find_manifest,
    max_archive_members,
    max_manifest_bytes,
    max_unpacked_bytes,
    max_upload_bytes,
    open_source,
)
from .uploads import (
    IMPORT_JOB,
    corpus_import_run,
    corpus_import_start,
    stored_local_path,
    stored_source,
    text_decoded,
    upload_name,
    upload_store,
    upload_text,
    uploads_delete,
    uploads_deleted_on_error,
    uploads_enqueue,
    uploads_kept_for_retry,
)

__all__ = [
    "FORMATS",
    "FORMAT_CHOICES",
    "IMPORT_JOB",
    "CaptionRow",
    "FolderSource",
    "ImportPlan",
    "Index",
    "Manifest",
    "ManifestRow",
    "Member",
    "MemorySource",
    "Source",
    "TarSource",
    "ZipSource",
    "corpus_import",
    "corpus_import_run",
    "corpus_import_start",
    "corpus_plan",
    "corpus_slug",
    "demo_corpus",
    "detect_format",
    "find_manifest",
    "first_value",
    "images_read",
    "language_normalise",
    "max_archive_members",
    "max_manifest_bytes",
    "max_unpacked_bytes",
    "max_upload_bytes",
    "open_source",
    "parse_rows",
    "safe_relpath",
    "stored_local_path",
    "stored_source",
    "text_decoded",
    "upload_name",
    "upload_store",
    "upload_text",
    "uploads_delete",
    "uploads_deleted_on_error",
    "uploads_enqueue",
    "uploads_kept_for_retry",
]
