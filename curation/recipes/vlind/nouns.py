"""VLind-Bench visual-perception nouns (Sec. 4, App. A): two key nouns and two absent nouns per
kept triple from the LLM, and the person's pick of one of each (s_exist, s_nil)."""

from __future__ import annotations

import re

from annotator.platform.errors import Invalid
from annotator.platform.jobs import job_progress
from curation import gateway
from curation.models import Generation, LLMProvider

from . import prompts
from .benches import MAX_NOUN, NOUNS_PURPOSE
from .images import require_kept
from .models import VLindBench, VLindTriple


def _noun_list(value, limit: int = 2) -> list[str]:
    out: list[str] = []
    for item in value if isinstance(value, list) else []:
        text = " ".join(str(item).split())[:MAX_NOUN]
        if text and text.casefold() not in {o.casefold() for o in out}:
            out.append(text)
    return out[:limit]


def nouns_draft(
    bench: VLindBench,
    *,
    provider: LLMProvider | None = None,
    job_id: int | None = None,
    created_by=None,
) -> dict:
    """Two key nouns and two absent nouns per kept triple (App. A prompt); a person then picks
    one of each. Triples that have candidates are skipped; failed ones are tried again."""
    gateway.templates_ensure(prompts.TEMPLATES)
    triples = bench.triples.filter(status=VLindTriple.Status.KEPT)
    todo = [t for t in triples.order_by("pk") if not t.noun_candidates.get("nouns")]
    result = {"drafted": 0, "failed": 0, "errors": []}
    job_progress(job_id=job_id, done=0, total=len(todo), message="Drafting nouns")
    for done, triple in enumerate(todo, start=1):
        generation = gateway.generate(
            template=prompts.NOUNS_TEMPLATE,
            variables={"context": triple.context},
            project=bench.project,
            provider=provider,
            purpose=NOUNS_PURPOSE,
            seed=triple.pk,
            job=job_id,
            created_by=created_by,
            item_key=f"vlind-nouns-{triple.pk}",
        )
        if generation.status == Generation.Status.OK:
            candidates = {
                "nouns": _noun_list(generation.output.get("nouns")),
                "non-existent_nouns": _noun_list(generation.output.get("non-existent_nouns")),
            }
            result["drafted"] += 1
        else:
            candidates = {"error": generation.error[:500]}
            result["failed"] += 1
            result["errors"].append(generation.error[:300])
        VLindTriple.objects.filter(pk=triple.pk).update(
            noun_candidates=candidates, noun_generation=generation
        )
        job_progress(job_id=job_id, done=done, message=f"{result['drafted']} drafted")
    result["errors"] = result["errors"][:10]
    return result


def nouns_check(bench: VLindBench, params: dict) -> int:
    if not bench.triples.filter(status=VLindTriple.Status.KEPT).exists():
        raise Invalid("No kept triple yet: nouns are drafted for triples people accepted.")
    return 0


def nouns_pick(*, triple: VLindTriple, existent: str, non_existent: str) -> VLindTriple:
    """The person's choice of the pair (Sec. 4): s_exist and s_nil follow the template."""
    require_kept(triple)
    existent = " ".join((existent or "").split())
    non_existent = " ".join((non_existent or "").split())
    if not existent or not non_existent:
        raise Invalid("Pick (or type) both nouns: one in the image, one absent from it.")
    if len(existent) > MAX_NOUN or len(non_existent) > MAX_NOUN:
        raise Invalid(f"A noun is at most {MAX_NOUN} characters.")
    if existent.casefold() == non_existent.casefold():
        raise Invalid("The two nouns must differ.")
    words = {w.casefold() for w in re.findall(r"[\w'’-]+", triple.context)}
    absent_words = {w.casefold() for w in re.findall(r"[\w'’-]+", non_existent)}
    clash = sorted(absent_words & words - {"a", "an", "the"})
    if clash:
        raise Invalid(
            f"“{non_existent}” should be absent from the image, but the context mentions "
            f"{', '.join(clash)}."
        )
    triple.existent_noun = existent
    triple.non_existent_noun = non_existent
    triple.save(update_fields=["existent_noun", "non_existent_noun"])
    return triple
