"""VHExpansion services (vhexpansion.txt Sec. 3): test-case sets, negations drafted by the gateway
and checked by people, common and adversarial image variants. Each function is keyword-only and
each write is atomic; long work runs in ``jobs.py``.

Flow: import a set (JSONL/CSV + images, or (image, question, answer) triples, or NaturalBench
yes/no items) → ``negations_draft`` (LLM with the Fig. 3 prompt, offline negator as fallback)
puts every draft in a ``review`` queue → the outcome handler accepts it, or rejects it and the
case is drafted again (at most ``max_attempts`` times) or dropped → ``variants_perturb`` /
``variants_adversarial`` add perturbed images → ``export.py`` builds the expanded set.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import tempfile
import uuid
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.db.models import Max, Q
from django.utils import timezone

from annotator import services as annotator_services
from annotator.models import Task, TaskQueue
from annotator.platform import edge, roles
from annotator.platform.errors import Invalid
from annotator.platform.files import media_url
from annotator.platform.jobs import job_enqueue, job_progress
from annotator.platform.models import Job, Project
from annotator.platform.scoping import projects_for

from ... import assets, corpus_import, gateway
from ...models import Generation, Image, LLMProvider, Scorer
from ...models.vhexpansion import VHCase, VHCaseSet, VHNegation, VHVariant

IMPORT_JOB = "vhexpansion.import_cases"
NEGATE_JOB = "vhexpansion.draft_negations"
PERTURB_JOB = "vhexpansion.perturb"
ADVERSARIAL_JOB = "vhexpansion.adversarial"
# The export job (export.py) has its own cards, newest per format, so it is not in JOB_KINDS.
EXPORT_JOB = "vhexpansion.export"
JOB_KINDS = (IMPORT_JOB, NEGATE_JOB, PERTURB_JOB, ADVERSARIAL_JOB)

# The gateway's defaults seed this template with the Fig. 3 text; its offline rule has this name.
NEGATION_TEMPLATE = "vhexpansion-negation"
NEGATION_PURPOSE = "vhexpansion.negation"
OUTCOME_HANDLER = "vhexpansion.negation_review"
REVIEW_QUESTION = (
    "Is this exactly the negation of the original question, with nothing else changed?"
)
REVIEW_CRITERIA = [
    "The meaning is reversed (“Is it false that …” or “a/an” → “no”).",
    "Nothing else changed: tense, order of clauses, pronouns, letter case.",
    "For this image the answer flips.",
]
REVIEW_REASONS = [
    {"code": "not_negation", "label": "Not a negation"},
    {"code": "changed", "label": "Something else changed"},
    {"code": "answer", "label": "The answer would not flip"},
    {"code": "garbled", "label": "Ungrammatical or garbled"},
]
DEFAULT_REVIEWERS = 3
MAX_REVIEWERS = 10
MAX_ATTEMPTS = 10

ORIGINAL = "original"
ADVERSARIAL_METHODS = ("ifgsm", "pgd")
# Column order of Tables 4-5: the four common perturbations (App. C), then I-FGSM and PGD.
PERTURBATION_ORDER = (
    "gaussian_noise",
    "brightness",
    "defocus_blur",
    "jpeg_compression",
    "ifgsm",
    "pgd",
)
PERTURBATION_LABELS = {
    ORIGINAL: "Original",
    "gaussian_noise": "Gaussian noise",
    "brightness": "Brightness",
    "defocus_blur": "Defocus blur",
    "jpeg_compression": "JPEG compression",
    "ifgsm": "I-FGSM",
    "pgd": "PGD",
}

MAX_QUESTION = 2000
MAX_ERRORS = 200
MAX_TABLE_BYTES = 20 * 1024 * 1024
_SHA = re.compile(r"^(?:sha256:)?([0-9a-fA-F]{64})$")
_ANSWERS = {"yes": "yes", "no": "no"}
_BOOLS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}
_LABEL_PREFIX = re.compile(
    r"^(?:negated|rephrased|negation|new)?\s*(?:question)?\s*:\s*", re.IGNORECASE
)


def flip(answer: str) -> str:
    """¬y_A (Sec. 3.1)."""
    return "no" if answer == "yes" else "yes"


def perturbation_label(name: str) -> str:
    return PERTURBATION_LABELS.get(name, name.replace("_", " ").capitalize())


def perturbation_sort_key(name: str) -> tuple[int, str]:
    if name == ORIGINAL:
        return (-1, "")
    if name in PERTURBATION_ORDER:
        return (PERTURBATION_ORDER.index(name), "")
    return (len(PERTURBATION_ORDER), name)


def common_perturbations() -> list[str]:
    """Names in ``curation.perturb.PERTURBATIONS``, in table order."""
    from ... import perturb

    return sorted(perturb.PERTURBATIONS, key=perturbation_sort_key)


# ============================================================================================
# 1. Test-case sets
# ============================================================================================
@dataclass
class CaseRow:
    """One line of an import: an image reference, the question and its yes/no answer."""

    line: int
    external_id: str
    question: str
    answer: str
    member: str = ""  # a file of the uploaded archive
    sha256: str = ""  # an image already stored
    image_id: int | None = None  # an image already stored
    source_dataset: str = ""
    category: str = ""
    triggers_vh: bool | None = None


@dataclass
class Triple:
    """(image, question, answer) for ``case_set_from_triples`` (NaturalBench and other recipes)."""

    image: Image
    question: str
    answer: str
    external_id: str = ""
    source_dataset: str = ""
    category: str = ""


class _Errors:
    def __init__(self) -> None:
        self.rows: list[dict] = []
        self.count = 0

    def add(self, line: int, error: str) -> None:
        self.count += 1
        if len(self.rows) < MAX_ERRORS:
            self.rows.append({"line": line, "error": error})

    def raise_if_any(self, message: str) -> None:
        if self.count:
            more = f" (the first {MAX_ERRORS} are listed)" if self.count > MAX_ERRORS else ""
            raise Invalid(f"{message}{more}", list(self.rows))


def _field(obj: dict, *keys: str) -> Any:
    for key in keys:
        if key in obj and obj[key] not in (None, ""):
            return obj[key]
    return None


def _short_text(obj: dict, keys: tuple[str, ...], line: int, errors: _Errors, limit: int) -> str:
    value = _field(obj, *keys)
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
    from evaluation.importers import Errors as TableErrors
    from evaluation.importers import read_table

    table_errors = TableErrors()
    records = read_table(content, table_errors, filename)
    errors = _Errors()
    for problem in table_errors.rows:
        errors.add(problem["line"], problem["error"])
    rows: list[CaseRow] = []
    first_line: dict[str, int] = {}
    for line, obj in records:
        external_id = _short_text(obj, ("id", "case_id", "index"), line, errors, 200)
        external_id = external_id or f"case-{line}"
        question = _short_text(obj, ("question",), line, errors, MAX_QUESTION)
        if not question:
            errors.add(line, "missing field 'question'")
        raw_answer = _field(obj, "answer", "label")
        answer = _ANSWERS.get(str(raw_answer).strip().lower()) if raw_answer is not None else None
        if answer is None:
            errors.add(line, f"'answer' must be yes or no, got {raw_answer!r}")
        image = _field(obj, "image", "file", "image_file")
        image_id = _field(obj, "image_id")
        row = CaseRow(line=line, external_id=external_id, question=question, answer=answer or "")
        if image is not None and image_id is not None:
            errors.add(line, "give 'image' or 'image_id', not both")
        elif image_id is not None:
            try:
                row.image_id = int(str(image_id).strip())
            except ValueError:
                errors.add(line, f"'image_id' must be a whole number, got {image_id!r}")
        elif image is not None:
            ref = str(image).strip()
            sha = _SHA.match(ref)
            if sha:
                row.sha256 = sha.group(1).lower()
            elif corpus_import.safe_relpath(ref) is None:
                errors.add(line, f"'image' {ref!r} is not a safe relative file name")
            else:
                row.member = corpus_import.safe_relpath(ref) or ""
        else:
            errors.add(line, "missing field 'image' (a file of the archive or sha256:<hex>)")
        row.source_dataset = _short_text(
            obj, ("source", "source_dataset", "dataset"), line, errors, 100
        )
        row.category = _short_text(obj, ("category", "type"), line, errors, 100)
        vh = _field(obj, "triggers_vh")
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
    errors.raise_if_any("The test-case file has errors; nothing was imported.")
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


class _Names:
    """Finds a row's file among the archive's names: the exact path, or a unique path ending."""

    def __init__(self, names: Iterable[str]):
        self.exact = set(names)
        self.by_tail: dict[str, list[str]] = defaultdict(list)
        for name in self.exact:
            parts = name.split("/")
            for k in range(1, len(parts)):
                self.by_tail["/".join(parts[k:])].append(name)

    def resolve(self, ref: str) -> tuple[str | None, str]:
        if ref in self.exact:
            return ref, ""
        hits = self.by_tail.get(ref, [])
        if len(hits) == 1:
            return hits[0], ""
        if hits:
            return None, f"{ref!r} matches several files ({', '.join(sorted(hits)[:2])})"
        return None, f"{ref!r} is not in the archive"


def _resolve_refs(
    rows: Sequence[CaseRow], *, source: corpus_import.Source | None, user
) -> tuple[dict[int, Image], dict[int, str]]:
    """{line: stored Image} and {line: archive member}; line errors for anything not found."""
    errors = _Errors()
    reach = images_in_reach(user)
    shas = {r.sha256 for r in rows if r.sha256}
    ids = {r.image_id for r in rows if r.image_id is not None}
    by_sha = {i.sha256: i for i in reach.filter(sha256__in=shas)} if shas else {}
    by_id = {i.pk: i for i in reach.filter(pk__in=ids)} if ids else {}
    names = _Names(source.names()) if source is not None else None
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
                errors.add(row.line, problem)
            else:
                members[row.line] = member
    errors.raise_if_any("Some images cannot be found; nothing was imported.")
    return stored, members


def _check_name(project: Project, name: str) -> str:
    name = " ".join((name or "").split())
    if not name:
        raise Invalid("Give the test-case set a name.", [{"line": 0, "error": "name is required"}])
    if len(name) > 200:
        raise Invalid("The name is longer than 200 characters.")
    if VHCaseSet.objects.filter(project=project, name=name).exists():
        raise Invalid(f"This project already has a test-case set “{name}”; choose another name.")
    return name


def _create_set(
    *, project: Project, name: str, description: str, source: str, created_by
) -> VHCaseSet:
    try:
        with transaction.atomic():
            return VHCaseSet.objects.create(
                project=project,
                name=name,
                description=description,
                source=source[:255],
                created_by=created_by,
            )
    except IntegrityError:
        raise Invalid(
            f"This project already has a test-case set “{name}”; choose another name."
        ) from None


def case_set_import(
    *,
    project: Project,
    name: str,
    content: str,
    filename: str = "",
    source: corpus_import.Source | None = None,
    description: str = "",
    created_by=None,
    job_id: int | None = None,
) -> VHCaseSet:
    """Import test cases all or nothing. Images come from ``source`` (an archive) or are stored
    ones named by id or sha256. Archive images are decoded and validated before any row is
    written; blobs written for an import that fails are deleted again."""
    name = _check_name(project, name)
    rows = parse_case_rows(content, filename)
    stored, members = _resolve_refs(rows, source=source, user=created_by)
    wanted = sorted(set(members.values()))
    lines_of: dict[str, list[int]] = defaultdict(list)
    for line, member in members.items():
        lines_of[member].append(line)
    total = len(wanted) + 1
    if job_id:
        job_progress(job_id=job_id, done=0, total=total, message=f"Reading {len(wanted)} images")
    errors = _Errors()
    entries: dict[str, assets.ImageEntry] = {}
    written: list[str] = []
    try:
        if wanted and source is not None:
            limit = assets.max_image_bytes()
            for done, member in enumerate(source.read_many(wanted, limit), start=1):
                line = min(lines_of[member.name])
                if member.data is None:
                    errors.add(line, f"{member.name}: {member.error}")
                    continue
                try:
                    norm = assets.image_normalise(data=member.data, name=member.name)
                except assets.ImageRejected as exc:
                    errors.add(line, str(exc))
                    continue
                # After the first error nothing more is stored: the rest is only checked.
                if not errors.count and assets.blob_save(norm.path, norm.data):
                    written.append(norm.path)
                entries[member.name] = assets.ImageEntry.of(
                    norm, original_name=member.name, source=filename or "vhexpansion import"
                )
                if job_id and done % 25 == 0:
                    job_progress(job_id=job_id, done=done, message=f"Checked {done} images")
        errors.raise_if_any("Some images were refused; nothing was imported.")
        with transaction.atomic():
            by_sha, _new = assets.images_register(entries=entries.values(), created_by=created_by)
            case_set = _create_set(
                project=project,
                name=name,
                description=description,
                source=filename,
                created_by=created_by,
            )
            cases = []
            for position, row in enumerate(rows):
                image = stored.get(row.line) or by_sha[entries[members[row.line]].sha256]
                cases.append(
                    VHCase(
                        case_set=case_set,
                        external_id=row.external_id,
                        position=position,
                        image=image,
                        question=row.question,
                        answer=row.answer,
                        source_dataset=row.source_dataset,
                        category=row.category,
                        triggers_vh=row.triggers_vh,
                    )
                )
            VHCase.objects.bulk_create(cases, batch_size=1000)
    except BaseException:
        assets.blobs_discard(written)
        raise
    _thumbnails({c.image_id for c in cases})
    if job_id:
        job_progress(job_id=job_id, done=total, message=f"Imported {len(cases)} test cases")
    return case_set


def _thumbnails(image_ids: Iterable[int]) -> None:
    """Thumbnails for the funnel page, made inline (256 px, milliseconds each)."""
    assets.thumbnails_make(image_ids=list(image_ids))


def _upload_name(upload) -> str:
    return PurePosixPath(str(getattr(upload, "name", "") or "upload").replace("\\", "/")).name


def _store_upload(upload, folder: str) -> str:
    upload.seek(0)
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", _upload_name(upload))[-100:] or "upload"
    return default_storage.save(f"{folder}/{safe}", upload)


def _read_table(upload) -> str:
    if upload.size > MAX_TABLE_BYTES:
        raise Invalid(f"{_upload_name(upload)} is larger than {MAX_TABLE_BYTES // 2**20} MB.")
    upload.seek(0)
    return _decoded(upload.read(), _upload_name(upload))


def _decoded(content: bytes, name: str) -> str:
    try:
        return edge.decode_utf8(content)
    except edge.NotUtf8 as exc:
        raise Invalid(f"{name or 'The file'} is not UTF-8 text ({exc}).") from None


def case_set_import_start(
    *, project: Project, name: str, table, archive=None, description: str = "", created_by=None
) -> tuple[Job, int]:
    """Check an upload now (every row and image reference, line-numbered errors), then import it
    in the ``vhexpansion.import_cases`` job. Returns (job, number of cases)."""
    if table is None:
        raise Invalid("Choose the JSONL or CSV file with the test cases.")
    name = _check_name(project, name)
    content = _read_table(table)
    rows = parse_case_rows(content, _upload_name(table))
    source = None
    if archive is not None:
        if archive.size > corpus_import.max_upload_bytes():
            raise Invalid(f"{_upload_name(archive)} is larger than the upload limit.")
        archive.seek(0)
        source = corpus_import.open_source(archive.file, label=_upload_name(archive))
    try:
        _resolve_refs(rows, source=source, user=created_by)
    finally:
        if source is not None:
            source.close()
    folder = f"curation/uploads/vhx-{uuid.uuid4().hex}"
    with corpus_import.uploads_deleted_on_error([]) as stored:
        stored.append(_store_upload(table, folder))
        if archive is not None:
            stored.append(_store_upload(archive, folder))
        params = {
            "project_id": project.pk,
            "name": name,
            "description": description,
            "table": stored[0],
            "table_name": _upload_name(table),
            "archive": stored[1] if archive is not None else "",
            "archive_name": _upload_name(archive) if archive is not None else "",
        }
        job = job_enqueue(
            kind=IMPORT_JOB,
            params=params,
            created_by=created_by,
            project=project,
            total=len(rows) + 1,
        )
    return job, len(rows)


@contextlib.contextmanager
def _local_path(name: str) -> Iterator[str]:
    """A local file path for a stored upload (a temporary copy when storage is remote)."""
    try:
        yield default_storage.path(name)
        return
    except NotImplementedError:
        pass
    with tempfile.NamedTemporaryFile(suffix="".join(PurePosixPath(name).suffixes)[-16:]) as tmp:
        with default_storage.open(name, "rb") as handle:
            shutil.copyfileobj(handle, tmp)
        tmp.flush()
        yield tmp.name


def case_set_import_run(*, params: dict, created_by=None, job_id: int | None = None) -> dict:
    """The body of the import job: re-check and import the stored upload, then delete it (a
    refused import too; another failure keeps it for the job page's Retry)."""
    project = Project.objects.get(pk=params["project_id"])
    stored = [params.get("table", ""), params.get("archive", "")]
    with corpus_import.uploads_kept_for_retry(stored):
        return _import_stored(project, params, created_by=created_by, job_id=job_id)


def _import_stored(project: Project, params: dict, *, created_by, job_id: int | None) -> dict:
    with default_storage.open(params["table"], "rb") as handle:
        content = _decoded(handle.read(), params.get("table_name", ""))
    with contextlib.ExitStack() as stack:
        source = None
        if params.get("archive"):
            path = stack.enter_context(_local_path(params["archive"]))
            source = corpus_import.open_source(path, label=params.get("archive_name") or "archive")
            stack.callback(source.close)
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


def case_set_from_triples(
    *,
    project: Project,
    name: str,
    triples: Sequence[Triple],
    source: str = "",
    description: str = "",
    created_by=None,
) -> VHCaseSet:
    """A set from (image, question, answer) triples, e.g. NaturalBench's yes/no items."""
    name = _check_name(project, name)
    errors = _Errors()
    seen: dict[str, int] = {}
    cases = []
    for k, t in enumerate(triples, start=1):
        external_id = (t.external_id or f"case-{k}")[:200]
        question = " ".join((t.question or "").split())
        answer = _ANSWERS.get(str(t.answer).strip().lower())
        if not question or len(question) > MAX_QUESTION:
            errors.add(k, "the question is empty or too long")
        if answer is None:
            errors.add(k, f"the answer must be yes or no, got {t.answer!r}")
        if not isinstance(t.image, Image) or t.image.pk is None:
            errors.add(k, "the image must be a stored Image")
        if external_id in seen:
            errors.add(k, f"duplicate id {external_id!r} (first at {seen[external_id]})")
        seen.setdefault(external_id, k)
        cases.append((external_id, t, question, answer))
    errors.raise_if_any("Some triples cannot become test cases; nothing was created.")
    if not cases:
        raise Invalid("There are no test cases to create.")
    with transaction.atomic():
        case_set = _create_set(
            project=project,
            name=name,
            description=description,
            source=source,
            created_by=created_by,
        )
        VHCase.objects.bulk_create(
            [
                VHCase(
                    case_set=case_set,
                    external_id=external_id,
                    position=position,
                    image=t.image,
                    question=question,
                    answer=answer,
                    source_dataset=t.source_dataset[:100],
                    category=t.category[:100],
                )
                for position, (external_id, t, question, answer) in enumerate(cases)
            ],
            batch_size=1000,
        )
    _thumbnails({t.image.pk for _e, t, _q, _a in cases})
    return case_set


def image_by_reference(ref: str, *, reach) -> Image | None:
    """A stored image named by ``sha256:<hex>``, a bare SHA-256, ``image:<id>``, a content-
    addressed path (``images/<sha256>.png``, as exports write them), or a file name that exactly
    one stored image was uploaded as."""
    ref = (ref or "").strip()
    if not ref:
        return None
    sha = _SHA.match(ref) or _SHA.match(PurePosixPath(ref).stem)
    if sha:
        return reach.filter(sha256=sha.group(1).lower()).first()
    if ref.startswith("image:") and ref[6:].isdigit():
        return reach.filter(pk=int(ref[6:])).first()
    hits = list(reach.filter(original_name=PurePosixPath(ref).name)[:2])
    return hits[0] if len(hits) == 1 else None


def naturalbench_triples(*, version, user=None) -> list[Triple]:
    """Yes/no NaturalBench samples as four triples each (METRICS.md §1 layout: q0_i0 = Yes,
    q0_i1 = No, q1_i0 = No, q1_i1 = Yes). Images are looked up in the image store."""
    from evaluation.models import Family

    if version.benchmark.family != Family.NATURALBENCH:
        raise Invalid("Choose a NaturalBench version.")
    reach = images_in_reach(user)
    errors = _Errors()
    triples: list[Triple] = []
    items = version.items.order_by("position")
    for line, item in enumerate(items, start=1):
        data = item.data
        if data.get("question_type") != "yes_no":
            continue
        images = []
        for key in ("image_0", "image_1"):
            image = image_by_reference(str(data.get(key, "")), reach=reach)
            if image is None:
                errors.add(
                    line,
                    f"item {item.item_id}: {key} {data.get(key)!r} is not in the image store; "
                    "import the images first (as a corpus) or name them by sha256:<hex>",
                )
            images.append(image)
        if None in images:
            continue
        layout = (
            (0, "question_0", "yes"),
            (1, "question_0", "no"),
            (0, "question_1", "no"),
            (1, "question_1", "yes"),
        )
        for i, q, answer in layout:
            triples.append(
                Triple(
                    image=images[i],
                    question=str(data.get(q, "")),
                    answer=answer,
                    external_id=f"{item.item_id}:{q[-1]}:{i}",
                    source_dataset=str(data.get("source") or "NaturalBench")[:100],
                    category="naturalbench",
                )
            )
    errors.raise_if_any("Some NaturalBench items cannot be used; nothing was created.")
    if not triples:
        raise Invalid("This NaturalBench version has no yes/no items.")
    return triples


def case_set_from_naturalbench(*, project: Project, name: str, version, created_by=None):
    """A set from the yes/no items of a NaturalBench version of the evaluation app."""
    return case_set_from_triples(
        project=project,
        name=name,
        triples=naturalbench_triples(version=version, user=created_by),
        source=f"NaturalBench {version.benchmark.name} {version.label}",
        created_by=created_by,
    )


def case_set_settings(
    *, case_set: VHCaseSet, reviewers: int | None = None, max_attempts: int | None = None
) -> VHCaseSet:
    """N people per negation (the review queue's redundancy) and the drafting attempts per case."""
    with transaction.atomic():
        case_set = VHCaseSet.objects.select_for_update().get(pk=case_set.pk)
        if max_attempts is not None:
            if not 1 <= max_attempts <= MAX_ATTEMPTS:
                raise Invalid(f"Attempts per case must be between 1 and {MAX_ATTEMPTS}.")
            case_set.max_attempts = max_attempts
            case_set.save(update_fields=["max_attempts"])
        if reviewers is not None:
            review_queue_ensure(case_set=case_set, reviewers=reviewers)
    return case_set


# ============================================================================================
# 2. Negation (Sec. 3.1, Fig. 3) and its review
# ============================================================================================
def negation_template():
    """The current negation prompt: editable, seeded with the Fig. 3 text by the gateway."""
    return gateway.template_current(NEGATION_TEMPLATE)


def review_queue_ensure(*, case_set: VHCaseSet, reviewers: int | None = None) -> TaskQueue:
    """The set's ``review`` queue (created on first use); ``reviewers`` sets N per negation."""
    if reviewers is not None and not 1 <= reviewers <= MAX_REVIEWERS:
        raise Invalid(f"Reviewers per negation must be between 1 and {MAX_REVIEWERS}.")
    with transaction.atomic():
        # Read under a lock: two first drafts at once must not make two queues.
        fresh = VHCaseSet.objects.select_for_update(of=("self",)).select_related("review_queue")
        queue = fresh.get(pk=case_set.pk).review_queue
        queue = _review_queue_update(case_set, queue, reviewers)
    case_set.review_queue = queue
    return queue


def _review_queue_update(case_set: VHCaseSet, queue: TaskQueue | None, reviewers) -> TaskQueue:
    if queue is None:
        n = reviewers or DEFAULT_REVIEWERS
        queue = annotator_services.queue_create(
            project=case_set.project,
            kind="review",
            title=f"VHExpansion negations: {case_set.name}"[:200],
            instructions=(
                "Each item shows a yes/no question about the image and the negated question an "
                "LLM drafted from it.\n\n"
                f"**{REVIEW_QUESTION}**\n\n"
                "Accept only if the new question asks the opposite (by “Is it false that …” or "
                "by turning “a/an” into “no”) and changes nothing else: not the tense, the order "
                "of clauses, the pronouns or the case of letters. Its answer must be the "
                "opposite of the original answer."
            ),
            config={"criteria": REVIEW_CRITERIA, "reason_codes": REVIEW_REASONS},
            redundancy=n,
            max_redundancy=_with_tiebreak(n),
            rule=TaskQueue.Rule.MAJORITY,
            outcome_handler=OUTCOME_HANDLER,
        )
        VHCaseSet.objects.filter(pk=case_set.pk).update(review_queue=queue)
    elif reviewers is not None and reviewers != queue.redundancy:
        queue = annotator_services.queue_update(
            queue=queue, redundancy=reviewers, max_redundancy=_with_tiebreak(reviewers)
        )
    return queue


def _with_tiebreak(n: int) -> int:
    """An even number of reviewers can tie; a tie asks one more person."""
    return n + 1 if n % 2 == 0 else n


def clean_negation(text: Any) -> str:
    """The negated question out of a model's reply: its first line, without quotes or a label."""
    if not isinstance(text, str):
        return ""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    first = _LABEL_PREFIX.sub("", lines[0]).strip()
    first = first.strip("\"'`“”‘’ ").strip()
    return " ".join(first.split())[:MAX_QUESTION]


def _same_question(a: str, b: str) -> bool:
    def norm(s: str) -> str:
        return " ".join(s.casefold().split()).rstrip(" ?.")

    return norm(a) == norm(b)


@dataclass
class Draft:
    question: str
    generation: Generation | None
    fallback: bool
    error: str = ""


def negation_generate(
    *, case: VHCase, attempt: int, provider: LLMProvider | None = None, job_id=None, created_by=None
) -> Draft:
    """One negation through the gateway; the offline rule-based negator answers when the
    configured LLM fails (and is the provider itself when no LLM is configured)."""
    project = case.case_set.project
    common = {
        "template": NEGATION_TEMPLATE,
        "variables": {"question": case.question},
        "project": project,
        "purpose": NEGATION_PURPOSE,
        "seed": attempt,
        "job": job_id,
        "created_by": created_by,
        "item_key": f"vhcase-{case.pk}-a{attempt}",
    }
    generation = gateway.generate(provider=provider, **common)
    fallback = False
    if generation.status != Generation.Status.OK and not generation.is_offline:
        first_error = generation.error
        generation = gateway.generate(provider=gateway.provider_offline(), **common)
        fallback = True
        if generation.status != Generation.Status.OK:
            return Draft("", generation, True, f"LLM: {first_error} · offline: {generation.error}")
    if generation.status != Generation.Status.OK:
        return Draft("", generation, fallback, generation.error)
    text = clean_negation(generation.output)
    if not text:
        return Draft("", generation, fallback, "The drafter returned no question.")
    return Draft(text, generation, fallback)


def _review_payload(case: VHCase, negation: VHNegation) -> dict:
    image = case.image
    return {
        "title": REVIEW_QUESTION,
        "images": [
            {"url": media_url(image.file.name), "alt": f"Image of test case {case.external_id}"}
        ],
        "fields": {
            "Original question": case.question,
            "Original answer": case.get_answer_display(),
            "Negated question": negation.question,
            "Negated answer": negation.get_answer_display(),
        },
    }


def _next_attempt(case: VHCase) -> int:
    last = case.negations.aggregate(n=Max("attempt"))["n"] or 0
    return last + 1


def negation_record(
    *, case: VHCase, draft: Draft, attempt: int, queue: TaskQueue
) -> VHNegation | None:
    """Store a draft and put it in review (one transaction). Discards (no review) a draft that
    repeats the original or an earlier rejected attempt; drops the case when attempts run out."""
    with transaction.atomic():
        case = (
            VHCase.objects.select_for_update().select_related("case_set", "image").get(pk=case.pk)
        )
        if case.negation_state not in (VHCase.NegationState.PENDING, VHCase.NegationState.FAILED):
            return None  # another job drafted it meanwhile
        if attempt != _next_attempt(case):
            return None
        if not draft.question:
            case.negation_state = VHCase.NegationState.FAILED
            case.negation_error = draft.error[:2000]
            case.save(update_fields=["negation_state", "negation_error"])
            return None
        earlier = list(
            case.negations.filter(status__in=[VHNegation.Status.REJECTED]).values_list(
                "question", flat=True
            )
        )
        note = ""
        if _same_question(draft.question, case.question):
            note = "The draft repeats the original question."
        elif any(_same_question(draft.question, q) for q in earlier):
            note = "The draft repeats a rejected negation."
        negation = VHNegation.objects.create(
            case=case,
            attempt=attempt,
            question=draft.question,
            answer=flip(case.answer),
            generation=draft.generation,
            fallback=draft.fallback,
            status=VHNegation.Status.DISCARDED if note else VHNegation.Status.REVIEW,
            note=note,
        )
        case.negation_error = ""
        if note:
            # Never reviewed; the attempt counts, so a deterministic drafter cannot loop.
            exhausted = attempt >= case.case_set.max_attempts
            case.negation_state = (
                VHCase.NegationState.DROPPED if exhausted else VHCase.NegationState.PENDING
            )
            case.save(update_fields=["negation_state", "negation_error"])
            return negation
        row = annotator_services.TaskRow(
            payload=_review_payload(case, negation), external_id=f"vhx-negation-{negation.pk}"
        )
        annotator_services.tasks_bulk_create(queue=queue, rows=[row])
        task = Task.objects.get(queue=queue, external_id=row.external_id)
        VHNegation.objects.filter(pk=negation.pk).update(task=task)
        negation.task = task
        case.negation_state = VHCase.NegationState.REVIEW
        case.save(update_fields=["negation_state", "negation_error"])
    return negation


def negations_draft(
    *,
    case_set: VHCaseSet,
    case_ids: Sequence[int] | None = None,
    retry_failed: bool = True,
    provider: LLMProvider | None = None,
    job_id: int | None = None,
    created_by=None,
    rounds: int = 3,
) -> dict:
    """Draft negations for every case that needs one (not drafted yet, rejected with attempts
    left, or failed) and send them to review. Calls the LLM outside any transaction. Runs a few
    rounds so cases rejected while it ran are picked up too. Idempotent."""
    queue = review_queue_ensure(case_set=case_set)
    negation_template()  # seed the Fig. 3 prompt before the first call
    states = [VHCase.NegationState.PENDING]
    if retry_failed:
        states.append(VHCase.NegationState.FAILED)
    counts = {"drafted": 0, "in_review": 0, "discarded": 0, "failed": 0, "fallback": 0}
    done = 0
    for _round in range(rounds):
        cases = case_set.cases.filter(negation_state__in=states).select_related(
            "case_set__project", "image"
        )
        if case_ids is not None:
            cases = cases.filter(pk__in=list(case_ids))
        cases = list(cases.order_by("position"))
        if not cases:
            break
        if job_id:
            job_progress(job_id=job_id, done=done, total=done + len(cases), message="Drafting")
        for case in cases:
            attempt = _next_attempt(case)
            if attempt > case_set.max_attempts:
                VHCase.objects.filter(pk=case.pk).update(
                    negation_state=VHCase.NegationState.DROPPED
                )
                done += 1
                continue
            draft = negation_generate(
                case=case, attempt=attempt, provider=provider, job_id=job_id, created_by=created_by
            )
            negation = negation_record(case=case, draft=draft, attempt=attempt, queue=queue)
            counts["drafted"] += int(bool(draft.question))
            counts["fallback"] += int(draft.fallback and bool(draft.question))
            counts["failed"] += int(not draft.question)
            if negation is not None:
                key = "discarded" if negation.status == VHNegation.Status.DISCARDED else "in_review"
                counts[key] += 1
            done += 1
            if job_id:
                job_progress(
                    job_id=job_id,
                    done=done,
                    message=f"{counts['in_review']} in review, {counts['failed']} failed",
                )
        states = [VHCase.NegationState.PENDING]  # later rounds: fresh rejections only
    return counts


def negations_draft_start(*, case_set: VHCaseSet, created_by=None, reviewers: int | None = None):
    """Enqueue the drafting job (after commit)."""
    review_queue_ensure(case_set=case_set, reviewers=reviewers)
    todo = case_set.cases.filter(
        negation_state__in=[VHCase.NegationState.PENDING, VHCase.NegationState.FAILED]
    ).count()
    if not todo:
        raise Invalid("Every case already has a negation in review, accepted or dropped.")
    return job_enqueue(
        kind=NEGATE_JOB,
        params={"case_set_id": case_set.pk},
        created_by=created_by,
        project=case_set.project,
        total=todo,
    )


def _regenerate_later(case_set: VHCaseSet) -> None:
    """One queued drafting job per set picks up every rejected case (enqueued after commit)."""
    waiting = Job.objects.filter(
        kind=NEGATE_JOB, status=Job.Status.QUEUED, params__case_set_id=case_set.pk
    ).exists()
    if not waiting:
        job_enqueue(
            kind=NEGATE_JOB,
            params={"case_set_id": case_set.pk, "regenerate": True},
            project=case_set.project,
        )


def negation_review_record(*, task: Task, decision) -> VHNegation | None:
    """The review queue's outcome (called by the engine inside the submit's transaction).

    Accepted only on a decided "accept"; a rejection or no decision rejects the negation, and the
    case is drafted again while attempts remain, else dropped. Never reaches an export unless
    accepted."""
    negation = (
        VHNegation.objects.select_for_update()
        .select_related("case__case_set")
        .filter(task_id=task.pk)
        .first()
    )
    if negation is None or negation.status != VHNegation.Status.REVIEW:
        return negation
    accepted = bool(decision.decided and decision.label == "accept")
    negation.status = VHNegation.Status.ACCEPTED if accepted else VHNegation.Status.REJECTED
    negation.votes = dict(decision.counts or {})
    negation.decided_at = timezone.now()
    negation.save(update_fields=["status", "votes", "decided_at"])
    case = negation.case
    if accepted:
        case.negation_state = VHCase.NegationState.ACCEPTED
    elif negation.attempt >= case.case_set.max_attempts:
        case.negation_state = VHCase.NegationState.DROPPED
    else:
        case.negation_state = VHCase.NegationState.PENDING
    VHCase.objects.filter(pk=case.pk).update(negation_state=case.negation_state)
    if case.negation_state == VHCase.NegationState.PENDING:
        _regenerate_later(case.case_set)
    return negation


# ============================================================================================
# 3. Common perturbations (App. C) on the stored images
# ============================================================================================
def image_seed(seed: int, image: Image) -> int:
    """The noise seed of one image: the run's seed mixed with the image's content hash, so the
    same image gets the same noise wherever it appears."""
    return (int(seed) + int(image.sha256[:8], 16)) % 2**32


def perturbations_check(*, names: Sequence[str], params: dict | None = None) -> dict[str, dict]:
    """Known names and parameters the functions accept (a dry run on a grey image)."""
    import numpy as np

    from ... import perturb

    params = dict(params or {})
    if not names:
        raise Invalid("Choose at least one perturbation.")
    unknown = sorted(set(names) - set(perturb.PERTURBATIONS))
    if unknown:
        raise Invalid(f"Unknown perturbation(s): {', '.join(unknown)}.")
    extra = sorted(set(params) - set(names))
    if extra:
        raise Invalid(f"Parameters given for perturbations not chosen: {', '.join(extra)}.")
    # Large enough for any sensible kernel, so a refusal is about the parameters.
    probe = np.full((128, 128, 3), 0.5, dtype=np.float32)
    cleaned: dict[str, dict] = {}
    for name in names:
        given = params.get(name) or {}
        if not isinstance(given, dict):
            raise Invalid(f"Parameters of {name} must be an object.")
        try:
            perturb.perturbation_apply(name, probe, **given)
        except (TypeError, ValueError) as exc:
            raise Invalid(f"{perturbation_label(name)}: {exc}") from None
        cleaned[name] = given
    return cleaned


def variants_perturb(
    *,
    case_set: VHCaseSet,
    perturbations: Sequence[str],
    params: dict | None = None,
    seed: int = 0,
    job_id: int | None = None,
    created_by=None,
) -> dict:
    """Apply common perturbations to the set's images: each result is a new Image derived from
    the original with ``{"op": name, "params": {...}}``, and a VHVariant per case. Images are
    processed once however many cases share them; cases that have the variant are skipped, so a
    re-run resumes."""
    from ... import perturb

    params = perturbations_check(names=perturbations, params=params)
    names = sorted(set(perturbations), key=perturbation_sort_key)
    have = set(
        VHVariant.objects.filter(case__case_set=case_set, perturbation__in=names).values_list(
            "case_id", "perturbation"
        )
    )
    by_image: dict[int, list[VHCase]] = defaultdict(list)
    images: dict[int, Image] = {}
    for case in case_set.cases.select_related("image").order_by("position"):
        by_image[case.image_id].append(case)
        images[case.image_id] = case.image
    total = len(by_image) * len(names)
    done = created = 0
    if job_id:
        job_progress(job_id=job_id, done=0, total=total, message="Perturbing")
    new_images: set[int] = set()
    skipped: list[dict] = []
    for image_id, cases in by_image.items():
        todo = [n for n in names if any((c.pk, n) not in have for c in cases)]
        done += len(names) - len(todo)
        if not todo:
            continue
        image = images[image_id]
        array = assets.image_as_array(image)
        for name in todo:
            kwargs = dict(params.get(name, {}))
            if "seed" in perturb.PERTURBATIONS[name].defaults and "seed" not in kwargs:
                kwargs["seed"] = image_seed(seed, image)
            try:
                out, used = perturb.perturbation_apply(name, array, **kwargs)
            except ValueError as exc:
                # e.g. an image smaller than the blur kernel: reported, the others go on.
                skipped.append({"image": image.sha256, "perturbation": name, "error": str(exc)})
                done += 1
                continue
            derived, _new = assets.image_from_array(
                array=out,
                name=f"{image.sha256[:16]}-{name}",
                derived_from=image,
                derivation={"op": name, "params": used},
                created_by=created_by,
            )
            new_images.add(derived.pk)
            rows = [
                VHVariant(
                    case=c,
                    perturbation=name,
                    kind=VHVariant.Kind.COMMON,
                    image=derived,
                    params={"op": name, "params": used},
                    job_id=job_id,
                )
                for c in cases
                if (c.pk, name) not in have
            ]
            VHVariant.objects.bulk_create(rows, ignore_conflicts=True)
            created += len(rows)
            done += 1
        if job_id:
            job_progress(job_id=job_id, done=done, message=f"{created} variants")
    _thumbnails(new_images)
    return {
        "variants": created,
        "images": len(new_images),
        "perturbations": names,
        "skipped": skipped[:50],
    }


def variants_perturb_start(
    *,
    case_set: VHCaseSet,
    perturbations: Sequence[str],
    params: dict | None = None,
    seed: int = 0,
    created_by=None,
):
    perturbations_check(names=perturbations, params=params)
    if not case_set.cases.exists():
        raise Invalid("The set has no test cases yet.")
    return job_enqueue(
        kind=PERTURB_JOB,
        params={
            "case_set_id": case_set.pk,
            "perturbations": list(perturbations),
            "params": params or {},
            "seed": int(seed),
        },
        created_by=created_by,
        project=case_set.project,
    )


# ============================================================================================
# 4. Adversarial perturbations (Sec. 3.2, Eq. 1) against a scorer's vision tower
# ============================================================================================
BRANCH_CASE = "case"  # the case's own triggers_vh (import column), unknown → does not trigger
BRANCH_RUN = "run"  # a model run's predictions on the original cases (evaluation app)
BRANCH_NONE = "none"  # treat every case as not triggering VH
BRANCH_ALL = "all"  # treat every case as triggering VH
BRANCHES = (BRANCH_CASE, BRANCH_RUN, BRANCH_NONE, BRANCH_ALL)


def branches_from_run(*, case_set: VHCaseSet, run) -> dict[int, bool]:
    """Eq. 1's branch per case from a model run: the original case (unperturbed, not negated)
    answered wrong → it triggers VH. Cases the run did not answer are left out."""
    from .export import item_id

    cases = {item_id(c.external_id, ORIGINAL, negated=False): c for c in case_set.cases.all()}
    found: dict[int, bool] = {}
    rows = run.predictions.filter(item__item_id__in=list(cases)).values_list(
        "item__item_id", "item__data", "parsed_answer"
    )
    for iid, data, parsed in rows:
        found[cases[iid].pk] = parsed != data.get("answer")
    return found


def _branches(case_set: VHCaseSet, branch: str, run_id: int | None) -> dict[int, bool]:
    cases = list(case_set.cases.values_list("pk", "triggers_vh"))
    if branch == BRANCH_NONE:
        return {pk: False for pk, _ in cases}
    if branch == BRANCH_ALL:
        return {pk: True for pk, _ in cases}
    if branch == BRANCH_RUN:
        from evaluation.models import ModelRun

        from .export import published_versions

        # Only a run on one of the set's own published versions (the choices the page offers).
        run = ModelRun.objects.filter(pk=run_id, version__in=published_versions(case_set)).first()
        if run is None:
            raise Invalid("Choose a model run for the branch of Eq. 1.")
        found = branches_from_run(case_set=case_set, run=run)
        return {pk: found.get(pk, bool(vh)) for pk, vh in cases}
    return {pk: bool(vh) for pk, vh in cases}


def adversarial_check(
    *, scorer: Scorer | None, method: str, branch: str, run_id: int | None = None, steps=None
) -> None:
    from ...scorers import scorer_weights

    if method not in ADVERSARIAL_METHODS:
        raise Invalid(f"Choose I-FGSM or PGD, not {method!r}.")
    if branch not in BRANCHES:
        raise Invalid(f"Unknown branch source {branch!r}.")
    if branch == BRANCH_RUN and not run_id:
        raise Invalid("Choose the model run whose answers decide Eq. 1's branch.")
    if scorer is None:
        raise Invalid("Choose a scorer: its vision tower is the encoder the attack runs against.")
    status = scorer_weights(scorer)
    if status.missing:
        raise Invalid(status.message)
    if steps is not None and (not isinstance(steps, int) or not 1 <= steps <= 5000):
        raise Invalid("Steps must be a whole number between 1 and 5000.")


def variants_adversarial(
    *,
    case_set: VHCaseSet,
    scorer: Scorer,
    method: str = "ifgsm",
    branch: str = BRANCH_CASE,
    run_id: int | None = None,
    steps: int | None = None,
    seed: int = 0,
    batch_size: int = 8,
    job_id: int | None = None,
    created_by=None,
) -> dict:
    """I-FGSM or PGD (``curation.adversarial``) against ``scorer``'s image embedding, per case
    with the paper's settings for its branch (500 steps from δ = 0, minimising the cosine; or
    100 steps from ±5/255, maximising it). The adversarial image lives at the encoder's input
    resolution and is stored as a derived Image recording the config, seed, the final cosine and
    the ℓ∞ norm used. Batches are committed as they finish: a re-run resumes."""
    import torch

    from ... import adversarial
    from ...scorers import scorer_load

    adversarial_check(scorer=scorer, method=method, branch=branch, run_id=run_id, steps=steps)
    branch_of = _branches(case_set, branch, run_id)
    have = set(
        VHVariant.objects.filter(case__case_set=case_set, perturbation=method).values_list(
            "case_id", flat=True
        )
    )
    groups: dict[tuple[int, bool], list[VHCase]] = defaultdict(list)
    images: dict[int, Image] = {}
    for case in case_set.cases.select_related("image").order_by("position"):
        if case.pk in have:
            continue
        groups[(case.image_id, branch_of[case.pk])].append(case)
        images[case.image_id] = case.image
    keys = sorted(groups, key=lambda k: (k[1], k[0]))
    total = len(keys)
    if job_id:
        job_progress(job_id=job_id, done=0, total=total, message="Loading the scorer")
    if not keys:
        return {"variants": 0, "images": 0, "method": method}
    loaded = scorer_load(scorer)
    encoder = adversarial.OpenClipEncoder(loaded.model)
    if encoder.image_size is None:
        raise Invalid(f"Scorer {scorer.label!r} does not say its input size.")
    size = int(encoder.image_size[0])
    overrides = {"steps": steps} if steps is not None else {}
    done = created = 0
    new_images: set[int] = set()
    for triggers in (False, True):
        chunk_keys = [k for k in keys if k[1] is triggers]
        config = adversarial.AttackConfig.for_case(triggers_vh=triggers, method=method, **overrides)
        for start in range(0, len(chunk_keys), batch_size):
            chunk = chunk_keys[start : start + batch_size]
            pixels = torch.stack(
                [
                    adversarial.encoder_pixels(assets.image_as_array(images[k[0]]), size=size)
                    for k in chunk
                ]
            )
            result = adversarial.attack(encoder, pixels, config, seed=int(seed))
            for i, key in enumerate(chunk):
                image = images[key[0]]
                record = {
                    **result.config,
                    "seed": int(seed),
                    "scorer": scorer.label,
                    "scorer_id": scorer.pk,
                    "size": size,
                    "final_cosine": float(result.final_cosine[i]),
                    "linf": float(result.linf[i]),
                    "steps_run": int(result.steps_run[i]),
                    "stop_reason": result.stop_reason[i],
                }
                derived, _new = assets.image_from_array(
                    array=adversarial.array_from_pixels(result.adversarial[i]),
                    name=f"{image.sha256[:16]}-{method}",
                    derived_from=image,
                    derivation={"op": method, "params": record},
                    created_by=created_by,
                )
                new_images.add(derived.pk)
                rows = [
                    VHVariant(
                        case=c,
                        perturbation=method,
                        kind=VHVariant.Kind.ADVERSARIAL,
                        image=derived,
                        params={"op": method, "params": record},
                        triggers_vh=triggers,
                        final_cosine=record["final_cosine"],
                        linf=record["linf"],
                        job_id=job_id,
                    )
                    for c in groups[key]
                ]
                VHVariant.objects.bulk_create(rows, ignore_conflicts=True)
                created += len(rows)
            done += len(chunk)
            if job_id:
                job_progress(job_id=job_id, done=done, message=f"{created} adversarial variants")
    _thumbnails(new_images)
    return {"variants": created, "images": len(new_images), "method": method}


def variants_adversarial_start(
    *,
    case_set: VHCaseSet,
    scorer: Scorer | None,
    method: str,
    branch: str = BRANCH_CASE,
    run_id: int | None = None,
    steps: int | None = None,
    seed: int = 0,
    created_by=None,
):
    adversarial_check(scorer=scorer, method=method, branch=branch, run_id=run_id, steps=steps)
    if branch == BRANCH_RUN:
        _branches(case_set, branch, run_id)  # the run must exist
    if not case_set.cases.exists():
        raise Invalid("The set has no test cases yet.")
    return job_enqueue(
        kind=ADVERSARIAL_JOB,
        params={
            "case_set_id": case_set.pk,
            "scorer_id": scorer.pk,
            "method": method,
            "branch": branch,
            "run_id": run_id,
            "steps": steps,
            "seed": int(seed),
        },
        created_by=created_by,
        project=case_set.project,
    )
