"""A round's validated blindspots as a NaturalBench-family version (the published record layout,
METRICS.md Sec. 1, read back through the family's own importer), each item carrying the hunt's
provenance: round, worker, candidate, the partner proposal, every model answer with its prompt's
Generation. Also the round's items with every model answer, as JSON lines for an export."""

from __future__ import annotations

import json

from django.db.models import Prefetch
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from annotator.platform.errors import Invalid
from curation.export_files import export_store
from evaluation import importers

from . import checks, parquet
from .models import HuntAnswer, HuntCandidate, HuntRound

FAMILY = "naturalbench"
JSONL_NAME = "hunt.jsonl"


def _answers(candidate: HuntCandidate) -> list[dict]:
    return [
        {
            "slot": a.slot,
            "model": "blind" if a.target_id is None else a.target.alias,
            "provider": a.generation.provider.name
            if a.generation and a.generation.provider
            else "",
            "text": a.text,
            "parsed": a.parsed or None,
            "correct": a.correct,
            "generation": a.generation_id,
            "prompt": (a.generation.template_name if a.generation else ""),
            "prompt_version": (a.generation.template_version if a.generation else None),
        }
        for a in candidate.answers.all()
    ]


def provenance(candidate: HuntCandidate) -> dict:
    return {
        "round": candidate.round_id,
        "round_name": candidate.round.name,
        "candidate": candidate.pk,
        "worker": candidate.worker.get_username(),
        "first_image_answer": checks.label(candidate.round.question_type, candidate.answer),
        "partners": candidate.neighbours,
        "duplicate_of": candidate.duplicate_of_id,
        "verdict": candidate.verdict,
        "answers": _answers(candidate),
    }


def _candidates(round_: HuntRound, states):
    answers = HuntAnswer.objects.select_related("target", "generation__provider").order_by(
        "slot", "target__position"
    )
    return (
        round_.candidates.filter(state__in=states)
        .select_related("round", "worker")
        .prefetch_related(Prefetch("answers", queryset=answers))
        .order_by("pk")
    )


def published_items(round_: HuntRound) -> list:
    """The validated candidates as ItemRows of the NaturalBench family (Index = candidate id),
    provenance under ``hunt``; refuses when there is none."""
    validated = list(_candidates(round_, [HuntCandidate.State.VALIDATED]))
    if not validated:
        raise Invalid(
            "Nothing to publish yet: no hunted item has been validated by its verifiers.",
            [{"line": 0, "error": "no validated item"}],
        )
    lines = [json.dumps({"Index": c.pk, **c.record}, ensure_ascii=False) for c in validated]
    items = importers.parse_items(FAMILY, "\n".join(lines) + "\n", JSONL_NAME)
    by_id = {str(c.pk): c for c in validated}
    for item in items:
        item.data["hunt"] = provenance(by_id[item.item_id])
    return items


EXPORT_JOB = "hunt.export"
# The datasets pages: what the export holds and what reads it.
EXPORT_LAYOUT = gettext_lazy(
    "One JSON line per item the round's hunters wrote, in every state: candidate, state, "
    "question_0, question_1, image and partner (SHA-256), record (the NaturalBench 2 × 2 sample "
    "once validated), points, created_at, and every model's answer with its provenance."
)
EXPORT_READS = gettext_lazy(
    "Any JSON-lines reader; the published version's items are NaturalBench records, read by "
    "Baiqi-Li/NaturalBench's evaluation."
)
ALL_STATES = tuple(HuntCandidate.State.values)


def item_line(candidate: HuntCandidate) -> dict:
    """One line of the round's export: the candidate as written, its state and 2 × 2 record,
    and every model answer with its provenance."""
    return {
        "candidate": candidate.pk,
        "state": candidate.state,
        "question_0": candidate.question,
        "question_1": candidate.question_1 or None,
        "image": candidate.image.sha256,
        "partner": candidate.partner.sha256 if candidate.partner_id else None,
        "record": candidate.record or None,
        "points": candidate.points,
        "created_at": candidate.created_at.isoformat(),
        **provenance(candidate),
    }


FORMATS = ("jsonl", "parquet")


def export_params(round_: HuntRound, kwargs: dict, data) -> dict:
    """JSONL: the round's items; Parquet: a published version (``version_id``, else the
    newest; None when there is none, which ``export_check`` refuses)."""
    fmt = kwargs.get("fmt", "")
    if fmt != "parquet":
        return {"fmt": fmt}
    raw = (data.get("version_id") or "").strip()
    try:
        version_id = int(raw) if raw else None
        version = parquet.version_of(round_, version_id)
    except ValueError:
        raise Invalid("That version is not one of this round's.") from None
    except Invalid:
        if version_id is not None:
            raise
        version = None
    return {"fmt": "parquet", "version_id": None if version is None else version.pk}


def export_unknown(params: dict) -> str:
    return "" if params.get("fmt") in FORMATS else _("Unknown export format.")


def export_check(round_: HuntRound, params: dict) -> int:
    return parquet.parquet_check(round_, params) if params["fmt"] == "parquet" else 0


def export_label(params: dict) -> str:
    if params.get("fmt") == "parquet":
        return parquet.parquet_label(params)
    return _("Items with every model answer (JSONL)")


def export_run(
    round_: HuntRound, *, job_id: int, created_by=None, fmt: str = "jsonl", version_id=None
) -> dict:
    """The round's items (every state) with every model answer, as JSON lines; or a published
    version as NaturalBench Parquet (``parquet``)."""
    if fmt == "parquet":
        return parquet.parquet_run(round_, job_id=job_id, version_id=version_id)

    def write(fh) -> None:
        rows = _candidates(round_, ALL_STATES).select_related("image", "partner")
        for candidate in rows.iterator(chunk_size=500):
            fh.write(json.dumps(item_line(candidate), ensure_ascii=False).encode() + b"\n")

    return export_store(
        job_id=job_id,
        recipe="hunt",
        object_id=round_.pk,
        filename=f"hunt-round-{round_.pk}.jsonl",
        content_type="application/jsonl",
        write=write,
    )
