"""Pairwise judgments of a version's runs (a family with ``pairwise``): imported or judged sets of
pairs, and the ratings and agreement computed from them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotator.platform.errors import Conflict, Invalid
from annotator.platform.jobs import job_enqueue
from evaluation.models import BenchmarkItem, BenchmarkVersion, JudgmentSet, ModelRun, PairJudgment
from evaluation.parsed import JudgmentFile, JudgmentRow, pair_key
from evaluation.registry import PairJudge, Pairwise, pairwise_of

from .benchmarks import clean_name, leaderboard_changed

JUDGMENTS_JOB = "evaluation.compute_judgments"


def require_pairwise(version: BenchmarkVersion) -> Pairwise:
    """The pairwise judgments of the version's family; Invalid when it has none."""
    return pairwise_of(version.benchmark.family)


def judge_start(
    *,
    version: BenchmarkVersion,
    judge: PairJudge,
    options: Mapping[str, Any],
    provider,
    created_by,
    pairs: list[dict] | None = None,
) -> tuple[Any, list[dict]]:
    """Judge `pairs` of `version` in both orders in a job; without `pairs`, the pairs drawn for
    ``options["model"]`` (its ``instances``, ``seed``, ``opponents``), recorded as the set's
    pairing. `options` also gives the set's ``label`` and ``with_reference``. Returns the job and
    the pairs."""
    pairing = None
    if pairs is None:
        pairing = {k: options[k] for k in ("model", "instances", "seed", "opponents")}
        pairs = judge.sample(
            version=version,
            model=pairing["model"],
            n=pairing["instances"],
            seed=pairing["seed"],
            opponents=pairing["opponents"],
        )
    job = judge.start(
        version=version,
        judgment_set_name=options["label"],
        pairs=pairs,
        provider=provider,
        created_by=created_by,
        seed=options["seed"],
        with_reference=options["with_reference"],
        pairing=pairing,
    )
    return job, pairs


def _instance_items(version: BenchmarkVersion, pairwise: Pairwise) -> dict[str, BenchmarkItem]:
    """Items by instance key; a repeated instance is matched to its first copy."""
    items: dict[str, BenchmarkItem] = {}
    for item in version.items.only("id", "item_id", "data", "kept").order_by("position"):
        items.setdefault(pairwise.item_key(item.data), item)
    return items


def match_judgments(
    version: BenchmarkVersion, parsed: JudgmentFile
) -> list[tuple[JudgmentRow, BenchmarkItem]]:
    pairwise = require_pairwise(version)
    items = _instance_items(version, pairwise)
    matched, errors = [], []
    for row in parsed.rows:
        item = items.get(pairwise.row_key(row))
        if item is None:
            errors.append(
                {
                    "line": row.line,
                    "error": "unknown instance (image_url and instruction match "
                    "no item of this version)",
                }
            )
        else:
            matched.append((row, item))
    if errors:
        raise Invalid(
            "Some judgments are about instances that are not in this version; nothing was "
            "imported.",
            errors[:200],
        )
    return matched


def check_set_label(version: BenchmarkVersion, label: str) -> str:
    label = clean_name(label, "label of the judgment set", 120)
    if JudgmentSet.objects.filter(version=version, label=label).exists():
        raise Conflict(f"This version already has judgments labelled {label!r}.")
    return label


@transaction.atomic
def judgment_set_import(
    *,
    version: BenchmarkVersion,
    kind: str,
    label: str,
    parsed: JudgmentFile,
    judge: str = "",
    with_reference: bool = False,
    reference_player: str = "",
    seed: int = 1,
    bootstrap_seed: int = 0,
    provenance: dict | None = None,
    created_by=None,
    job=None,
) -> JudgmentSet:
    """A finished, imported set of judged pairs, matched to the version's instances (all or
    nothing). Repeated (pair, instance) judgments were already dropped, first kept (App. E).
    An empty ``reference_player`` is the family's (the official files' name)."""
    pairwise = require_pairwise(version)
    if kind not in JudgmentSet.Kind.values:
        raise Invalid(f"Unknown judgment kind {kind!r}: use 'llm' or 'human'.")
    label = check_set_label(version, label)
    matched = match_judgments(version, parsed)
    judgment_set = JudgmentSet.objects.create(
        version=version,
        kind=kind,
        label=label,
        judge=judge[:200],
        with_reference=with_reference,
        reference_player=(reference_player or pairwise.reference_player)[:200],
        source=JudgmentSet.Source.IMPORTED,
        status=JudgmentSet.Status.SUCCEEDED,
        seed=seed,
        bootstrap_seed=bootstrap_seed,
        provenance={
            **(provenance or {}),
            "duplicates_dropped": parsed.duplicates,
            **({"votes": parsed.votes} if kind == JudgmentSet.Kind.HUMAN else {}),
        },
        pair_count=len(matched),
        created_by=created_by,
        job=job,
    )
    PairJudgment.objects.bulk_create(
        [
            PairJudgment(
                judgment_set=judgment_set,
                item=item,
                position=k,
                model_a=row.model_a,
                model_b=row.model_b,
                pair_key=row.pair_key,
                response_a=row.response_a,
                response_b=row.response_b,
                order_winners=row.order_winners,
                outputs=row.outputs,
                votes_a=row.votes_a,
                votes_b=row.votes_b,
                winner=row.winner,
            )
            for k, (row, item) in enumerate(matched)
        ],
        batch_size=1000,
    )
    return judgment_set


def judgment_set_create(
    *,
    version: BenchmarkVersion,
    label: str,
    judge: str,
    with_reference: bool = False,
    reference_player: str | None = None,
    provenance: dict | None = None,
    created_by=None,
    job=None,
) -> JudgmentSet:
    """An empty LLM-judge set that a judge runner fills pair by pair with `judgment_record`
    (prompt templates, provider and seed go into `provenance`); no ``reference_player`` is the
    family's."""
    pairwise = require_pairwise(version)
    label = check_set_label(version, label)
    return JudgmentSet.objects.create(
        version=version,
        kind=JudgmentSet.Kind.LLM,
        label=label,
        judge=judge[:200],
        with_reference=with_reference,
        reference_player=pairwise.reference_player
        if reference_player is None
        else reference_player,
        source=JudgmentSet.Source.RUNNER,
        status=JudgmentSet.Status.PENDING,
        provenance=provenance or {},
        created_by=created_by,
        job=job,
    )


@transaction.atomic
def judgment_record(
    *,
    judgment_set: JudgmentSet,
    item: BenchmarkItem,
    model_a: str,
    model_b: str,
    response_a: str,
    response_b: str,
    outputs: Sequence[dict],
) -> PairJudgment:
    """Store one pair judged in both orders from the judge's own outputs (App. F).

    `outputs` holds one dict per order: shown_a and shown_b (the models presented as Response A
    and B), judge_output, extraction_output (the reply of the extraction call, None when the
    judge output already named a winner) and optionally generation_id. The winner of each order
    is parsed here, so runners and imports agree. Idempotent per (set, instance, unordered pair):
    a re-run leaves judged pairs as they are and fills the missing ones.
    """
    if item.version_id != judgment_set.version_id:
        raise Invalid("The instance belongs to another version.")
    if model_a == model_b:
        raise Invalid(f"A model cannot be judged against itself ({model_a!r}).")
    if len(outputs) != 2:
        raise Invalid("A pair is judged in both orders: give two outputs.")
    for output in outputs:
        if {output.get("shown_a"), output.get("shown_b")} != {model_a, model_b}:
            raise Invalid("Each order must show the two models of the pair.")
    locked = (
        JudgmentSet.objects.select_related("version__benchmark")
        .select_for_update(of=("self",))
        .get(pk=judgment_set.pk)
    )
    pairwise = require_pairwise(locked.version)
    key = pair_key(model_a, model_b)
    existing = PairJudgment.objects.filter(judgment_set=locked, item=item, pair_key=key).first()
    if existing is not None:
        return existing
    winners = [
        pairwise.order_winner(
            o.get("judge_output") or "",
            o["shown_a"],
            o["shown_b"],
            extraction_output=o.get("extraction_output"),
        )
        for o in outputs
    ]
    judgment = PairJudgment.objects.create(
        judgment_set=locked,
        item=item,
        position=locked.pair_count,
        model_a=model_a,
        model_b=model_b,
        pair_key=key,
        response_a=response_a,
        response_b=response_b,
        order_winners=winners,
        outputs=[dict(o) for o in outputs],
        winner=pairwise.aggregate(winners[0], winners[1]),
    )
    JudgmentSet.objects.filter(pk=locked.pk).update(pair_count=locked.pair_count + 1)
    return judgment


def judgment_set_finish(
    *, judgment_set: JudgmentSet, failed: bool = False, error: str = ""
) -> JudgmentSet:
    """Mark a runner's set finished (it then counts in `judgments_compute`) or failed."""
    status = JudgmentSet.Status.FAILED if failed else JudgmentSet.Status.SUCCEEDED
    provenance = {**(judgment_set.provenance or {}), **({"error": error} if error else {})}
    JudgmentSet.objects.filter(pk=judgment_set.pk).update(status=status, provenance=provenance)
    judgment_set.refresh_from_db()
    return judgment_set


def _pairs_of(
    judgment_set: JudgmentSet, items: dict[int, BenchmarkItem], pairwise: Pairwise
) -> list:
    pairs = []
    for row in judgment_set.judgments.order_by("position").values_list(
        "item_id",
        "model_a",
        "model_b",
        "winner",
        "response_a",
        "response_b",
        "votes_a",
        "votes_b",
    ):
        item = items[row[0]]
        pairs.append(
            pairwise.compute.PairData(
                item_id=item.item_id,
                image=item.data.get("image", ""),
                instruction=item.data.get("instruction", ""),
                model_a=row[1],
                model_b=row[2],
                winner=row[3],
                response_a=row[4],
                response_b=row[5],
                votes_a=row[6],
                votes_b=row[7],
                reference=item.data.get("reference", ""),
            )
        )
    return pairs


def _player_runs(version: BenchmarkVersion) -> dict[str, ModelRun]:
    """Players named like a run's model or its output column (the official files' names)."""
    by_name: dict[str, ModelRun] = {}
    for run in version.runs.select_related("model").order_by("id"):
        for name in (run.model.name, (run.prompt_settings or {}).get("output_column")):
            if name:
                by_name.setdefault(name, run)
    return by_name


def judgments_compute(
    *, version: BenchmarkVersion, rounds: int = 1000, text_metrics: bool = True, progress=None
) -> dict:
    """Ratings of every finished judgment set of the version and, for crowd sets, the agreement
    of every judge set and text metric with the crowd majority. Returns {set id: results}."""
    pairwise = require_pairwise(version)
    sets = list(version.judgment_sets.filter(status=JudgmentSet.Status.SUCCEEDED))
    items = {i.pk: i for i in version.items.only("id", "item_id", "data")}
    runs = _player_runs(version)
    pairs = {s.pk: _pairs_of(s, items, pairwise) for s in sets}
    judges = {s.label: pairs[s.pk] for s in sets if s.kind == JudgmentSet.Kind.LLM}
    out = {}
    for k, judgment_set in enumerate(sets, start=1):
        if progress:
            progress(k - 1, len(sets), f"Rating {judgment_set.label}")
        results = pairwise.compute.set_results(
            pairs[judgment_set.pk],
            kind=judgment_set.kind,
            reference_player=judgment_set.reference_player,
            seed=judgment_set.seed,
            bootstrap_seed=judgment_set.bootstrap_seed,
            rounds=rounds,
        )
        for player in results["players"]:
            run = runs.get(player["player"])
            player["run_id"] = run.pk if run else None
            player["model"] = run.model.name if run else player["player"]
        if judgment_set.kind == JudgmentSet.Kind.HUMAN:
            results["agreement"] = pairwise.compute.agreement_results(
                pairs[judgment_set.pk],
                reference_player=judgment_set.reference_player,
                judges=judges,
                text_metrics=text_metrics,
                seed=judgment_set.bootstrap_seed,
                rounds=rounds,
            )
        out[judgment_set.pk] = results
    with transaction.atomic():
        now = timezone.now()
        for judgment_set in sets:
            JudgmentSet.objects.filter(pk=judgment_set.pk).update(
                results=out[judgment_set.pk],
                results_computed_at=now,
                code_version=pairwise.compute.CODE_VERSION,
            )
        leaderboard_changed(version=version, why="judgments")
    if progress:
        progress(len(sets), len(sets), "Stored")
    return out


def judgments_compute_enqueue(*, version: BenchmarkVersion, created_by=None):
    require_pairwise(version)
    if not version.judgment_sets.exists():
        raise Conflict("Import judgments first: there is nothing to rate.")
    return job_enqueue(
        kind=JUDGMENTS_JOB,
        params={"version_id": version.pk},
        created_by=created_by,
        project=version.benchmark.project,
        total=1,
    )
