"""VisIT-Bench's living leaderboard (visit-bench.txt Sec. 1, 4.2, App. F) on a version: a new
model's responses imported as a run, paired (seeded) with the reference and a random other model
per instance and judged by the LLM judge in both orders; the models already imported judged the
same way; and the crowd's forced choices stored as the version's crowd-vote judgment set. The
curation recipe keeps its own records (submissions, rated tuples) and calls these."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from annotator.platform.errors import Conflict, Invalid
from annotator.platform.models import Job
from evaluation import parsed
from evaluation import services as eval_services
from evaluation.models import JudgmentSet, ModelRun

from .judge import judge_start
from .judgments import OFFICIAL_REFERENCE_PLAYER as REFERENCE
from .players import DEFAULT_JUDGE_INSTANCES, judge_pairs_sample, judge_players
from .submissions import match_submission, parse_submission, submission_format


def rating_options() -> dict:
    """Bootstrap rounds and text metrics of the judge's rating step (settings, for the demo)."""
    return {
        "rounds": int(getattr(settings, "BLINDSPOT_VISIT_ROUNDS", 1000)),
        "text_metrics": bool(getattr(settings, "BLINDSPOT_VISIT_TEXT_METRICS", True)),
    }


def _instances(reference_pairs: int | None) -> int:
    return DEFAULT_JUDGE_INSTANCES if reference_pairs is None else int(reference_pairs)


def _judge(
    version, label: str, pairs: list, provider, created_by, *, seed: int, model: str, n: int
):
    """The LLM judge started on ``pairs`` (both orders) into the set ``label``, rating the
    version when it ends; its provenance names the ``model``(s) paired, ``n`` and the seed."""
    return judge_start(
        version=version,
        judgment_set_name=label,
        pairs=pairs,
        provider=provider,
        created_by=created_by,
        seed=seed,
        pairing={"model": model, "instances": n, "seed": seed},
        **rating_options(),
    )


@dataclass
class Submitted:
    """What a submission made: its run, the pairs drawn, the judge's job, the file's format and
    how many rows matched."""

    run: ModelRun
    pairs: list[dict]
    job: Job
    format: str
    rows: int
    instances: int


def submission_judge(
    *,
    version,
    model_name: str,
    content: str,
    filename: str,
    label: str,
    provider,
    seed: int = 0,
    reference_pairs: int | None = None,
    created_by=None,
) -> Submitted:
    """Import a new model's responses as a run of ``version``, pair them (seeded) with the
    reference and a random other model per instance (``judge_pairs_sample``, 150 instances by
    default), and start the LLM judge in both orders on the set ``label`` (``judge_start``, which
    rates the version when it ends). Call it in a transaction: a bad file, or a judge still busy
    with the previous submission, stores nothing."""
    players = {REFERENCE} | set(
        ModelRun.objects.filter(version=version).values_list("model__name", flat=True)
    )
    if model_name in players:
        raise Conflict(f"“{model_name}” is already on this leaderboard; name the new model anew.")
    n = _instances(reference_pairs)
    if not 1 <= n <= 10000:
        raise Invalid("Reference pairs must be between 1 and 10000.")
    rows = parse_submission(content, filename)
    matched = match_submission(version, rows)
    run = eval_services.run_import(
        version=version,
        model_name=model_name,
        rows=[
            parsed.PredictionRow(item_id=item_id, raw_output=row.response, line=row.line)
            for row, item_id in matched
        ],
        prompt_settings={"source_file": filename, "submitted_to": "living leaderboard"},
        seed=seed,
        created_by=created_by,
    )
    pairs = judge_pairs_sample(version=version, model=model_name, n=n, seed=seed)
    job = _judge(version, label, pairs, provider, created_by, seed=seed, model=model_name, n=n)
    fmt = submission_format(content, filename)
    return Submitted(run=run, pairs=pairs, job=job, format=fmt, rows=len(matched), instances=n)


def models_judge(
    *,
    version,
    label: str,
    provider,
    seed: int = 0,
    reference_pairs: int | None = None,
    created_by=None,
) -> Job:
    """Start the leaderboard from the version's models already imported: each is paired as a
    submission would be (seed + its rank among the models), duplicates dropped, one judge run."""
    n = _instances(reference_pairs)
    players = judge_players(version)
    models = sorted(p for p in players if p != REFERENCE)
    if not models:
        raise Invalid("Import some models' responses for this version first.")
    seen: set[tuple[str, str]] = set()
    pairs = []
    for k, model in enumerate(models):
        if not players[model]:
            continue
        for pair in judge_pairs_sample(
            version=version, model=model, n=n, seed=seed + k, players=players
        ):
            key = (pair["instance_id"], parsed.pair_key(pair["a_model"], pair["b_model"]))
            if key not in seen:
                seen.add(key)
                pairs.append(pair)
    if not pairs:
        raise Invalid("No verified instance has responses to compare.")
    return _judge(
        version, label, pairs, provider, created_by, seed=seed, model=", ".join(models), n=n
    )


def responses_of(version) -> dict[str, dict[str, str]]:
    """{item id: {player: response}} over the version's verified (kept) instances: the
    reference and every run's answers, as the judge runner sees them (``judge_players``)."""
    ids = dict(version.items.filter(kept=True).values_list("pk", "item_id"))
    responses: dict[str, dict[str, str]] = {item_id: {} for item_id in ids.values()}
    for player, answers in judge_players(version).items():
        for item_pk, text in answers.items():
            if item_pk in ids:
                responses[ids[item_pk]][player] = text
    return responses


def crowd_rows(version, pairs: Iterable[Any]) -> list[parsed.JudgmentRow]:
    """Rated tuples (``item_id``, ``model_a`` / ``model_b``, their responses, ``votes_a`` /
    ``votes_b``, ``winner``), in order, as the evaluation app's judgment rows."""
    pairs = list(pairs)
    items = dict(
        version.items.filter(item_id__in={p.item_id for p in pairs}).values_list("item_id", "data")
    )
    return [
        parsed.JudgmentRow(
            line=k,
            image=items[p.item_id].get("image", ""),
            instruction=items[p.item_id].get("instruction", ""),
            model_a=p.model_a,
            model_b=p.model_b,
            response_a=p.response_a,
            response_b=p.response_b,
            votes_a=p.votes_a,
            votes_b=p.votes_b,
            winner=p.winner if p.winner in (p.model_a, p.model_b) else "tie",
        )
        for k, p in enumerate(pairs, start=1)
    ]


def crowd_set_replace(
    *,
    version,
    previous_id: int | None,
    label: str,
    owner_id: int,
    rows: list,
    provenance: dict,
    job_id=None,
) -> JudgmentSet | None:
    """The version's crowd-vote set ``previous_id`` replaced by one holding ``rows`` (None
    without rows), keeping its label (a new set takes ``label``, with `` #<owner_id>`` when
    taken). Call it in a transaction, under the lock of the object that points at the set."""
    previous = JudgmentSet.objects.filter(pk=previous_id, version=version).first()
    if previous is not None:
        label = previous.label
        # Replaced as a whole: the votes only grow, and the evaluation app has no append for
        # crowd sets (judgment_record is the LLM judge's two-order record).
        previous.delete()
    elif JudgmentSet.objects.filter(version=version, label=label).exists():
        label = f"{label} #{owner_id}"[:120]
    if not rows:
        return None
    return eval_services.judgment_set_import(
        version=version,
        kind=JudgmentSet.Kind.HUMAN,
        label=label,
        parsed=parsed.JudgmentFile(rows=rows, votes=sum(r.votes_a + r.votes_b for r in rows)),
        judge="crowd (Blindspot forced choice)",
        provenance=provenance,
        job=Job.objects.filter(pk=job_id).first() if job_id else None,
    )


def crowd_rate(version, rows: list, *, rounds: int | None = None, text_metrics: bool = True):
    """Rate every judgment set of the version once crowd votes exist: Elo and win-rate vs the
    reference (Table 3) and each judge's agreement with the crowd by 5/5, 4/5, 3/5 stratum
    (Fig. 7), by ``evaluation.services.judgments_compute``."""
    if not rows:
        return {}
    return eval_services.judgments_compute(
        version=version,
        rounds=rounds or int(getattr(settings, "BLINDSPOT_VISIT_ROUNDS", 1000)),
        text_metrics=text_metrics,
    )
