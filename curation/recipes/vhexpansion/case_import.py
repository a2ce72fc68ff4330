"""Importing a VHExpansion test-case set (vhexpansion.txt Sec. 3) from a JSONL/CSV table and an
optional image archive: every row and image reference is checked now, with line-numbered errors,
then the ``vhexpansion.import_cases`` job imports the stored upload all or nothing."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import Q

from annotator.platform import roles
from annotator.platform.errors import Invalid, LineErrors
from annotator.platform.forms import ID_MAX
from annotator.platform.jobs import job_progress
from annotator.platform.models import Job, Project, taken_refused
from annotator.platform.scoping import projects_for
from curation import assets, corpora
from curation.models import Image
from evaluation.importers import read_table

from .models import VHCase, VHCaseSet

IMPORT_JOB = "vhexpansion.import_cases"
MAX_QUESTION = 2000
SHA = re.compile(r"^(?:sha256:)?([0-9a-fA-F]{64})$")
ANSWERS = {"yes": "yes", "no": "no"}
TAKEN = "This project already has a test-case set “{name}”; choose another name."
_BOOLS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


@dataclass
class CaseRow:
    """One test case: its image (stored, or a reference in an import's line), the question and
    its yes/no answer. Other sources (NaturalBench) give (image, question, answer) triples."""

    image: Image | None = None  # the stored image (an import's, once its reference is found)
    question: str = ""
    answer: str = ""
    external_id: str = ""
    source_dataset: str = ""
    category: str = ""
    triggers_vh: bool | None = None
    line: int = 0  # an import's line
    member: str = ""  # a file of the uploaded archive
    sha256: str = ""  # an image already stored
    image_id: int | None = None  # an image already stored


def _short_text(obj: dict, keys: tuple[str, ...], line: int, errors: LineErrors, limit: int) -> str:
    value = corpora.first_value(obj, keys)
    if value is None:
        return ""
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        errors.add(line, f"{keys[0]!r} must be text")
        return ""
    text = " ".join(str(value).split())
    if len(text) > limit:
        errors.add(line, f"{keys[0]!r} is longer than {limit} characters")
        return ""
    return text


def parse_case_rows(content: str, filename: str = "") -> list[CaseRow]:
    """Rows of a JSONL (or JSON array) or CSV file: ``id`` (optional), ``image`` (a file of the
    archive, or ``sha256:<hex>`` of a stored image) or ``image_id``, ``question``, ``answer``
    (yes/no), optional ``source`` (dataset), ``category`` and ``triggers_vh`` (true/false: the
    branch of Eq. 1). Every problem is reported with its line; nothing is returned on error."""
    errors = LineErrors()
    records = read_table(content, errors, filename)
    rows: list[CaseRow] = []
    first_line: dict[str, int] = {}
    for line, obj in records:
        external_id = _short_text(obj, ("id", "case_id", "index"), line, errors, 200)
        external_id = external_id or f"case-{line}"
        question = _short_text(obj, ("question",), line, errors, MAX_QUESTION)
        if not question:
            errors.add(line, "missing field 'question'")
        raw_answer = corpora.first_value(obj, ("answer", "label"))
        answer = ANSWERS.get(str(raw_answer).strip().lower()) if raw_answer is not None else None
        if answer is None:
            errors.add(line, f"'answer' must be yes or no, got {raw_answer!r}")
        image = corpora.first_value(obj, ("image", "file", "image_file"))
        image_id = corpora.first_value(obj, ("image_id",))
        row = CaseRow(line=line, external_id=external_id, question=question, answer=answer or "")
        if image is not None and image_id is not None:
            errors.add(line, "give 'image' or 'image_id', not both")
        elif image_id is not None:
            try:
                row.image_id = int(str(image_id).strip())
            except ValueError:
                errors.add(line, f"'image_id' must be a whole number, got {image_id!r}")
            else:
                if not 1 <= row.image_id <= ID_MAX:
                    errors.add(line, "'image_id' is not the id of a stored image")
                    row.image_id = None
        elif image is not None:
            ref = str(image).strip()
            sha = SHA.match(ref)
            if sha:
                row.sha256 = sha.group(1).lower()
            elif corpora.safe_relpath(ref) is None:
                errors.add(line, f"'image' {ref!r} is not a safe relative file name")
            else:
                row.member = corpora.safe_relpath(ref) or ""
        else:
            errors.add(line, "missing field 'image' (a file of the archive or sha256:<hex>)")
        row.source_dataset = _short_text(
            obj, ("source", "source_dataset", "dataset"), line, errors, 100
        )
        row.category = _short_text(obj, ("category", "type"), line, errors, 100)
        vh = corpora.first_value(obj, ("triggers_vh",))
        if vh is not None:
            flag = vh if isinstance(vh, bool) else _BOOLS.get(str(vh).strip().lower())
            if flag is None:
                errors.add(line, f"'triggers_vh' must be true or false, got {vh!r}")
            row.triggers_vh = flag
        if external_id in first_line:
            errors.add(
                line, f"duplicate id {external_id!r} (first on line {first_line[external_id]})"
            )
        else:
            first_line[external_id] = line
        rows.append(row)
    errors.raise_if_any("The test-case file has errors; nothing was imported.{more}")
    if not rows:
        raise Invalid("The file holds no test cases.", [{"line": 0, "error": "no rows"}])
    return rows


def images_in_reach(user) -> Any:
    """Stored images a curator may reference: those ``assets.images_for`` allows, plus the images
    of VH cases in the curator's projects. ``None`` (a job without a person) reaches all."""
    if user is None or roles.has_role(user, [roles.ADMIN]):
        return Image.objects.all()
    cases = VHCase.objects.filter(case_set__project__in=projects_for(user)).values("image_id")
    return Image.objects.filter(Q(pk__in=assets.images_for(user).values("pk")) | Q(pk__in=cases))


def _resolve_refs(
    rows: Sequence[CaseRow], *, source: corpora.Source | None, user
) -> tuple[dict[int, Image], dict[int, str]]:
    """{line: stored Image} and {line: archive member}; line errors for anything not found."""
    errors = LineErrors()
    reach = images_in_reach(user)
    shas = {r.sha256 for r in rows if r.sha256}
    ids = {r.image_id for r in rows if r.image_id is not None}
    by_sha = {i.sha256: i for i in reach.filter(sha256__in=shas)} if shas else {}
    by_id = {i.pk: i for i in reach.filter(pk__in=ids)} if ids else {}
    names = corpora.Index(source.names()) if source is not None else None
    stored: dict[int, Image] = {}
    members: dict[int, str] = {}
    for row in rows:
        if row.sha256:
            if row.sha256 not in by_sha:
                errors.add(row.line, f"no stored image has sha256 {row.sha256}")
            else:
                stored[row.line] = by_sha[row.sha256]
        elif row.image_id is not None:
            if row.image_id not in by_id:
                errors.add(row.line, f"no stored image has id {row.image_id}")
            else:
                stored[row.line] = by_id[row.image_id]
        elif row.member:
            if names is None:
                errors.add(
                    row.line,
                    f"{row.member!r} names a file but no archive was uploaded: upload the images "
                    "as a .zip or .tar, or reference stored images by image_id or sha256:<hex>",
                )
                continue
            member, problem = names.resolve(row.member)
            if member is None:
                errors.add(row.line, problem or f"{row.member!r} is not in the archive")
            else:
                members[row.line] = member
    errors.raise_if_any("Some images cannot be found; nothing was imported.{more}")
    return stored, members


def check_name(project: Project, name: str) -> str:
    name = " ".join((name or "").split())
    if not name:
        raise Invalid("Give the test-case set a name.", [{"line": 0, "error": "name is required"}])
    if len(name) > 200:
        raise Invalid("The name is longer than 200 characters.")
    if VHCaseSet.objects.filter(project=project, name=name).exists():
        raise Invalid(TAKEN.format(name=name))
    return name


def _read_images(source, members: dict[int, str], written: list[str], *, filename, job_id):
    """The archive's images the rows name, decoded and checked, as ImageEntry by member name;
    stored as blobs (listed in ``written``) until the first refusal, then only checked."""
    lines_of: dict[str, list[int]] = defaultdict(list)
    for line, member in members.items():
        lines_of[member].append(line)
    n = len(lines_of)
    job_progress(job_id=job_id, done=0, total=n + 1, message=f"Reading {n} images")
    if not lines_of or source is None:
        return {}

    def progress(done: int) -> None:
        if done % 25 == 0:
            job_progress(job_id=job_id, done=done, message=f"Checked {done} images")

    meta = {"source": filename or "vhexpansion import"}
    entries, errors = corpora.images_read(
        source, lines_of, written, meta=lambda name: meta, progress=progress
    )
    errors.raise_if_any("Some images were refused; nothing was imported.{more}")
    return entries


CASE_FIELDS = ("external_id", "image", "question", "answer", "source_dataset", "category")


def set_write(rows: Sequence[CaseRow], *, name: str, source: str, **fields) -> VHCaseSet:
    """The set (its fields) and its cases in row order, in one transaction."""
    with transaction.atomic():
        with taken_refused(TAKEN.format(name=name)):
            case_set = VHCaseSet.objects.create(name=name, source=source[:255], **fields)
        cases = [
            VHCase(
                case_set=case_set,
                position=position,
                triggers_vh=row.triggers_vh,
                **{f: getattr(row, f) for f in CASE_FIELDS},
            )
            for position, row in enumerate(rows)
        ]
        VHCase.objects.bulk_create(cases, batch_size=1000)
    return case_set


def case_set_import(
    *,
    project: Project,
    name: str,
    content: str,
    filename: str = "",
    source: corpora.Source | None = None,
    description: str = "",
    created_by=None,
    job_id: int | None = None,
) -> VHCaseSet:
    """Import test cases all or nothing. Images come from ``source`` (an archive) or are stored
    ones named by id or sha256. Archive images are decoded and validated before any row is
    written; blobs written for an import that fails are deleted again."""
    name = check_name(project, name)
    rows = parse_case_rows(content, filename)
    stored, members = _resolve_refs(rows, source=source, user=created_by)
    written: list[str] = []
    try:
        entries = _read_images(source, members, written, filename=filename, job_id=job_id)
        with transaction.atomic():
            by_sha, _new = assets.images_register(entries=entries.values(), created_by=created_by)
            for row in rows:
                row.image = stored.get(row.line) or by_sha[entries[members[row.line]].sha256]
            case_set = set_write(
                rows,
                project=project,
                name=name,
                description=description,
                source=filename,
                created_by=created_by,
            )
    except BaseException:
        assets.blobs_discard(written)
        raise
    assets.thumbnails_make(image_ids=list({row.image.pk for row in rows}))
    total = len(set(members.values())) + 1
    job_progress(job_id=job_id, done=total, message=f"Imported {len(rows)} test cases")
    return case_set


def case_set_import_start(
    *, project: Project, name: str, table, archive=None, description: str = "", created_by=None
) -> Job:
    """Check an upload now (every row and image reference, line-numbered errors), then import it
    in the ``vhexpansion.import_cases`` job (its total: the cases, then one step for the
    images)."""
    name = check_name(project, name)
    content = corpora.upload_text(table)
    rows = parse_case_rows(content, corpora.upload_name(table))
    source = None
    if archive is not None:
        if archive.size > corpora.max_upload_bytes():
            raise Invalid(f"{corpora.upload_name(archive)} is larger than the upload limit.")
        archive.seek(0)
        source = corpora.open_source(archive.file, label=corpora.upload_name(archive))
    try:
        _resolve_refs(rows, source=source, user=created_by)
    finally:
        if source is not None:
            source.close()
    return corpora.uploads_enqueue(
        kind=IMPORT_JOB,
        project=project,
        uploads={"table": table, "archive": archive},
        params={"project_id": project.pk, "name": name, "description": description},
        total=len(rows) + 1,
        created_by=created_by,
        prefix="vhx-",
    )


def case_set_import_run(_none, *, job_id: int | None = None, created_by=None, **params) -> dict:
    """The body of the import job: re-check and import the stored upload, then delete it (a
    refused import too; another failure keeps it for the job page's Retry)."""
    project = Project.objects.get(pk=params["project_id"])
    with corpora.uploads_kept_for_retry([params.get("table", ""), params.get("archive", "")]):
        with default_storage.open(params["table"], "rb") as handle:
            content = corpora.text_decoded(handle.read(), params.get("table_name", ""))
        archive = params.get("archive", "")
        with corpora.stored_source(archive, params.get("archive_name", "")) as source:
            case_set = case_set_import(
                project=project,
                name=params["name"],
                content=content,
                filename=params.get("table_name", ""),
                source=source,
                description=params.get("description", ""),
                created_by=created_by,
                job_id=job_id,
            )
        return {"case_set_id": case_set.pk, "cases": case_set.cases.count()}
