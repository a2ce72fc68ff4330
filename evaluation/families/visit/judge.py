"""The VisIT-Bench LLM judge (App. F) on (instance, A, B) pairs in BOTH orders, with the one
extraction call when a verdict is unclear, fed to ``services.judgment_record``;
``players.judge_pairs_sample`` draws the pairs reproducibly. Generic code reaches it as
``family.pairwise.judge`` (``LLM_JUDGE``); its job kind is ``runners.JUDGE_JOB``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction

from annotator.platform.errors import Conflict, Invalid
from annotator.platform.models import Job
from curation.gateway.pins import template_record
from curation.models import Generation, LLMProvider
from evaluation import prompts, services
from evaluation.metrics import visit
from evaluation.models import BenchmarkItem, BenchmarkVersion, JudgmentSet, PairJudgment
from evaluation.parsed import pair_key
from evaluation.registry import PairJudge
from evaluation.runners import EXTRACTION_PURPOSE, JUDGE_JOB, JUDGE_PURPOSE, provider_is_blind
from evaluation.runners.common import (
    Progress,
    job_create,
    marks_failed,
    progress,
    templates_pinned,
)
from evaluation.runners.pool import Call, CallSpec, Pool

from .judgments import OFFICIAL_REFERENCE_PLAYER as REFERENCE_PLAYER
from .parse import item_captions
from .players import (
    DEFAULT_JUDGE_INSTANCES,
    judge_pairs_sample,
    judge_pairs_validate,
    judge_player_names,
    judge_players,
)
from .prompts import (
    JUDGE,
    JUDGE_EXTRACTION,
    JUDGE_MULTI,
    JUDGE_MULTI_REFERENCE,
    JUDGE_REFERENCE,
    multi_image_context,
)

# (reference-free, reference-backed) judge templates for single- and multi-image instances.
JUDGE_TEMPLATES = {False: (JUDGE, JUDGE_REFERENCE), True: (JUDGE_MULTI, JUDGE_MULTI_REFERENCE)}


def _judgment_set(
    version: BenchmarkVersion, name: str, provider: LLMProvider, provenance: dict, **create
) -> JudgmentSet:
    """The set to fill: a new one, or the runner set with this label again (resume) when it
    was judged the same way."""
    existing = (
        JudgmentSet.objects.select_for_update(of=("self",))
        .select_related("job")
        .filter(version=version, label=name)
        .first()
    )
    if existing is None:
        return services.judgment_set_create(
            version=version, label=name, provenance=provenance, **create
        )
    if existing.source != JudgmentSet.Source.RUNNER:
        raise Conflict(f"This version already has imported judgments labelled {name!r}.")
    if existing.job is not None and not existing.job.is_finished:
        raise Conflict(f"The judge run {name!r} is still running.")
    if existing.with_reference != create["with_reference"]:
        raise Conflict(f"{name!r} used the other judge prompt; give the new run another label.")
    judged_by = (existing.provenance or {}).get("provider_id")
    if judged_by not in (None, provider.pk):
        # One set, one judge: mixing judges would make its Elo meaningless.
        raise Conflict(f"{name!r} was judged by another provider; give the new run another label.")
    existing.provenance = {**(existing.provenance or {}), **provenance}
    JudgmentSet.objects.filter(pk=existing.pk).update(provenance=existing.provenance)
    return existing


def judge_start(
    *,
    version: BenchmarkVersion,
    judgment_set_name: str,
    pairs: list[dict],
    provider: LLMProvider,
    created_by,
    seed: int = 0,
    with_reference: bool = False,
    rounds: int = 1000,
    text_metrics: bool = True,
    pairing: dict | None = None,
    enqueue: bool = True,
) -> Job:
    """Judge ``pairs`` ({instance_id, a_model, b_model}) in both orders with the App. F prompt
    in a job, feeding ``services.judgment_record``. A runner set with the same name resumes
    (judged pairs stay, missing ones are filled)."""
    services.require_pairwise(version)
    judge_pairs_validate(version=version, pairs=pairs)
    name = services.clean_name(judgment_set_name, "label of the judgment set", 120)
    offline = provider_is_blind(provider)
    provenance = {
        "runner": True,
        "provider_id": provider.pk,
        "provider": provider.name,
        "provider_kind": provider.kind,
        "model": provider.model,
        "offline": offline,
        "seed": int(seed),
        "pairs_requested": len(pairs),
        **(
            {"pairing": {**pairing, "drawn": len({p["instance_id"] for p in pairs})}}
            if pairing
            else {}
        ),
    }
    with transaction.atomic():
        judgment_set = _judgment_set(
            version,
            name,
            provider,
            provenance,
            judge=prompts.OFFLINE_JUDGE_LABEL if offline else (provider.model or provider.name),
            with_reference=with_reference,
            reference_player=REFERENCE_PLAYER,
            created_by=created_by,
        )
        job = job_create(
            enqueue=enqueue,
            kind=JUDGE_JOB,
            params={
                "judgment_set_id": judgment_set.pk,
                "pairs": pairs,
                "provider_id": provider.pk,
                "seed": int(seed),
                "with_reference": with_reference,
                "rounds": int(rounds),
                "text_metrics": bool(text_metrics),
            },
            created_by=created_by,
            project=version.benchmark.project,
            total=len(pairs) + 1,
        )
        JudgmentSet.objects.filter(pk=judgment_set.pk).update(
            job=job, status=JudgmentSet.Status.PENDING
        )
    return job


@dataclass
class _PairState:
    item: BenchmarkItem
    model_a: str
    model_b: str
    outputs: list = field(default_factory=lambda: [None, None])
    resolved: int = 0
    error: str = ""

    def shown(self, order: int) -> tuple[str, str]:
        """The models shown as Response A and B in this order."""
        return (self.model_a, self.model_b) if order == 0 else (self.model_b, self.model_a)


@dataclass
class _Judging:
    """The pairs of one judge job: both orders asked, an extraction call when an order names
    no single winner (``visit.needs_extraction``), then ``judgment_record``."""

    judgment_set: JudgmentSet
    players: dict[str, dict[int, str]]
    pending: list[_PairState]
    judge_name: str
    with_reference: bool
    progress: Progress
    templates: dict = field(default_factory=dict)
    counts: dict = field(
        default_factory=lambda: {"judged": 0, "failed": 0, "extractions": 0, "ties": 0, "calls": 0}
    )
    errors: list[str] = field(default_factory=list)

    def _key(self, k: int, order: int) -> str:
        return f"evaljudge{self.judgment_set.pk}|{self.pending[k].item.pk}|{k}|{order}"

    def _template(self, state: _PairState) -> str:
        """The judge prompt for the pair's instance: the multi-image one (the images described
        in sequence, as the sandbox asks with multi_image) or the single-image one."""
        multi = bool(state.item.data.get("multi_image"))
        return JUDGE_TEMPLATES[multi][self.with_reference]

    def _variables(self, state: _PairState, order: int) -> dict:
        shown = state.shown(order)
        data = state.item.data
        out = {
            "caption": data.get("caption", ""),
            "instruction": data.get("instruction", ""),
            "response_a": self.players[shown[0]][state.item.pk],
            "response_b": self.players[shown[1]][state.item.pk],
        }
        if data.get("multi_image"):
            del out["caption"]
            out["captions"] = multi_image_context(item_captions(data))
        if self.with_reference:
            out["reference"] = data.get("reference", "")
        return out

    def calls(self):
        return (
            Call(
                (k, order),
                CallSpec("judge", self._template(state), self._variables(state, order)),
                self._key(k, order),
                JUDGE_PURPOSE,
            )
            for k, state in enumerate(self.pending)
            for order in (0, 1)
        )

    def _resolve(self, k: int, order: int, output: dict | None, error: str = "") -> None:
        state = self.pending[k]
        state.outputs[order] = output
        state.resolved += 1
        if error:
            state.error = state.error or error
        if state.resolved < 2:
            return
        if state.error:
            self.counts["failed"] += 1
            if len(self.errors) < 20:
                self.errors.append(state.error)
        else:
            judgment = services.judgment_record(
                judgment_set=self.judgment_set,
                item=state.item,
                model_a=state.model_a,
                model_b=state.model_b,
                response_a=self.players[state.model_a][state.item.pk],
                response_b=self.players[state.model_b][state.item.pk],
                outputs=state.outputs,
            )
            self.counts["judged"] += 1
            self.counts["ties"] += judgment.winner == visit.TIE
        self.progress(self.counts["judged"] + self.counts["failed"])

    def on_result(self, call: Call, generation: Generation) -> list:
        k, order = call.tag
        state = self.pending[k]
        self.counts["calls"] += 1
        if generation.status != Generation.Status.OK:
            self._resolve(k, order, None, generation.error or "the judge call failed")
            return []
        if call.spec.key != "judge":
            output = dict(state.outputs[order])
            output["extraction_output"] = generation.raw_response
            output["extraction_generation_id"] = generation.pk
            self._resolve(k, order, output)
            return []
        shown = state.shown(order)
        output = {
            "shown_a": shown[0],
            "shown_b": shown[1],
            "judge_output": generation.raw_response,
            "extraction_output": None,
            "generation_id": generation.pk,
        }
        if not visit.needs_extraction(generation.raw_response):
            self._resolve(k, order, output)
            return []
        self.counts["extractions"] += 1
        state.outputs[order] = output
        variables = {"judge_output": generation.raw_response}
        spec = CallSpec("extraction", JUDGE_EXTRACTION, variables)
        return [Call((k, order), spec, self._key(k, order) + "|x", EXTRACTION_PURPOSE)]


def judge_run(
    *,
    judgment_set_id: int,
    pairs: list[dict],
    provider_id: int,
    seed: int = 0,
    with_reference: bool = False,
    job_id: int | None = None,
    rounds: int = 1000,
    text_metrics: bool = True,
) -> dict:
    """The body of a judge job: each pending pair in both orders (the App. F prompt; one
    extraction call when an order names no single winner, ``visit.needs_extraction``), then
    ``judgment_record``; failed calls leave the pair for a re-run. Rates the version at the end."""
    with marks_failed(
        JudgmentSet, judgment_set_id, JudgmentSet.Status.RUNNING, JudgmentSet.Status.FAILED
    ):
        judgment_set = JudgmentSet.objects.select_related("version__benchmark").get(
            pk=judgment_set_id
        )
        provider = LLMProvider.objects.filter(pk=provider_id).first()
        if provider is None:
            raise Invalid("The judge's provider was deleted; start the judge with another one.")
        judging, total = _prepare(judgment_set, pairs, with_reference, job_id)
        pool = Pool(
            provider=provider,
            templates=judging.templates,
            job_id=job_id,
            project=judgment_set.version.benchmark.project,
            created_by=judgment_set.created_by,
            seed=seed,
            blind=True,  # the judge reads the instruction-conditioned caption, never the image
        )
        pool.run(judging.calls(), judging.on_result)
        return _finish(
            judging, job_id=job_id, total=total, rounds=rounds, text_metrics=text_metrics
        )


def _prepare(
    judgment_set: JudgmentSet, pairs: list[dict], with_reference: bool, job_id: int | None
) -> tuple[_Judging, int]:
    """Pin the templates, mark the set running and list the pairs not judged yet."""
    judge_name = JUDGE_TEMPLATES[False][with_reference]
    templates = templates_pinned(
        [judge_name, JUDGE_TEMPLATES[True][with_reference], JUDGE_EXTRACTION],
        project=judgment_set.version.benchmark.project,
        recorded=(judgment_set.provenance or {}).get("templates"),
    )
    JudgmentSet.objects.filter(pk=judgment_set.pk).update(
        status=JudgmentSet.Status.RUNNING,
        provenance={**(judgment_set.provenance or {}), "templates": template_record(templates)},
    )
    players = judge_players(judgment_set.version)
    checked = judge_pairs_validate(version=judgment_set.version, pairs=pairs, players=players)
    done = set(
        PairJudgment.objects.filter(judgment_set=judgment_set).values_list("item_id", "pair_key")
    )
    pending = [
        _PairState(item, a, b) for item, a, b in checked if (item.pk, pair_key(a, b)) not in done
    ]
    total = len(pending) + 1
    progress(job_id, 0, total, f"{len(pending)} of {len(checked)} pairs to judge, both orders")
    judging = _Judging(
        judgment_set, players, pending, judge_name, with_reference, Progress(job_id), templates
    )
    return judging, total


def _finish(
    judging: _Judging, *, job_id: int | None, total: int, rounds: int, text_metrics: bool
) -> dict:
    """Record the attempt, finish the set and rate the version."""
    judgment_set, counts, errors = judging.judgment_set, judging.counts, judging.errors
    judgment_set.refresh_from_db()
    recorded = judgment_set.pair_count
    provenance = {
        **(judgment_set.provenance or {}),
        "last_attempt": counts,
        "failed_pairs": counts["failed"],
        **({"errors": errors} if errors else {}),
    }
    JudgmentSet.objects.filter(pk=judgment_set.pk).update(provenance=provenance)
    judgment_set.refresh_from_db()
    failed = recorded == 0
    services.judgment_set_finish(
        judgment_set=judgment_set,
        failed=failed,
        error=(errors[0] if failed and errors else ""),
    )
    result = {"judgment_set_id": judgment_set.pk, "pairs": recorded, **counts}
    if failed:
        raise Invalid("No pair could be judged. " + (f"First error: {errors[0]}" if errors else ""))
    progress(job_id, total - 1, message=f"{counts['judged']} pairs judged; rating the version")
    services.judgments_compute(
        version=judgment_set.version, rounds=rounds, text_metrics=text_metrics
    )
    retry = " — run the judge again with the same label to retry them" if counts["failed"] else ""
    progress(
        job_id,
        total,
        message=f"{counts['judged']} pairs judged, {counts['extractions']} extraction calls, "
        f"{counts['failed']} failed" + retry,
    )
    return result


LLM_JUDGE = PairJudge(
    start=judge_start,
    run=judge_run,
    sample=judge_pairs_sample,
    player_names=judge_player_names,
    players=judge_players,
    default_instances=DEFAULT_JUDGE_INSTANCES,
)
