"""VisIT-Bench pairwise judgments → ratings, win-rates and metric-vs-human agreement, by calling
``evaluation.metrics.visit``; the family's ``pairwise.compute`` (rank correlations:
``evaluation.rankings``).

No database access: ``services.judgments_compute`` loads the pairs, calls these functions and
stores the JSON they return on each JudgmentSet. Every rating carries a seeded bootstrap interval
over battles (METRICS.md Sec. 2 and 6).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from evaluation.compute import code_version
from evaluation.metrics import textmetrics, visit
from evaluation.metrics.bootstrap import DEFAULT_ROUNDS, Interval

HUMAN = "human"
LLM = "llm"


# The code behind a set's results: the pure metrics, then this module.
CODE_VERSION = code_version(
    [*sorted((Path(__file__).parents[2] / "metrics").glob("*.py")), Path(__file__)]
)


@dataclass(frozen=True)
class PairData:
    """One judged pair as the computations need it (no ORM objects)."""

    item_id: str
    image: str
    instruction: str
    model_a: str
    model_b: str
    winner: str  # model_a, model_b or "tie"
    response_a: str = ""
    response_b: str = ""
    votes_a: int = 0
    votes_b: int = 0
    reference: str = ""  # the instance's human-verified GPT-4 response (text metrics)

    @property
    def key(self) -> tuple[str, frozenset[str]]:
        return self.item_id, frozenset((self.model_a, self.model_b))


def battles_of(pairs: Sequence[PairData], kind: str) -> list[visit.Battle]:
    """Elo matches: one per judged pair for a judge; one per crowd vote for humans ("treating
    each pairwise human judgement as a match", Sec. 4.2), in file order, A votes first."""
    battles = []
    for p in pairs:
        if kind == HUMAN:
            for winner, count in ((p.model_a, p.votes_a), (p.model_b, p.votes_b)):
                battles.extend(
                    visit.Battle(p.model_a, p.model_b, winner, p.image, p.instruction)
                    for _ in range(count)
                )
        else:
            battles.append(visit.Battle(p.model_a, p.model_b, p.winner, p.image, p.instruction))
    return battles


def _interval(interval: Interval | None) -> dict:
    if interval is None:
        return {"low": None, "high": None}
    return {"low": interval.low, "high": interval.high}


def set_results(
    pairs: Sequence[PairData],
    *,
    kind: str,
    reference_player: str,
    seed: int = 1,
    bootstrap_seed: int = 0,
    rounds: int = DEFAULT_ROUNDS,
) -> dict:
    """Bootstrap Elo (median, 95% interval), online Elo (recorded shuffle seed), Bradley–Terry,
    matches and win-rate vs the reference for every player of one judgment set (Sec. 4.2,
    Tables 3-4, App. E)."""
    battles = battles_of(pairs, kind)
    # A judge's repeated (pair, instance) battles are dropped as in elo_analysis.py; crowd votes
    # on one pair are separate matches.
    dedup = kind != HUMAN
    # Seeded from the battles (+ the set's offset): the same judgments, the same intervals anywhere.
    salt, bootstrap_seed = bootstrap_seed, visit.battles_seed(battles, salt=bootstrap_seed)
    boot = visit.bootstrap_elo(battles, rounds=rounds, seed=bootstrap_seed, deduplicate=dedup)
    online = visit.online_elo(battles, seed=seed, deduplicate=dedup)
    bt = visit.bradley_terry(battles, deduplicate=dedup)
    has_reference = reference_player in boot.ratings
    reference_elo = boot.ratings[reference_player].median if has_reference else None
    players = []
    for name, rating in boot.ratings.items():
        entry = {
            "player": name,
            "elo": rating.median,
            "low": rating.low,
            "high": rating.high,
            "online": online.ratings.get(name),
            "bt": bt.get(name),
            "matches": online.matches.get(name, 0),
            "is_reference": name == reference_player,
            "win_rate": None,
            "p_beats_reference": None,
        }
        if has_reference and name != reference_player:
            win = visit.win_rate_vs_reference(
                battles,
                name,
                reference_player,
                seed=bootstrap_seed,
                rounds=rounds,
                deduplicate=dedup,
            )
            entry["win_rate"] = {
                "wins": win.wins,
                "n": win.n,
                "value": win.rate,
                **_interval(win.interval),
                "text": str(win),
            }
            entry["p_beats_reference"] = visit.elo_win_probability(rating.median, reference_elo)
        players.append(entry)
    # Ranked by online Elo as elo_analysis.py prints it (App. E); the bootstrap median beside it.
    players.sort(key=lambda e: (-(e["online"] or 0.0), e["player"]))
    outcomes = Counter("tie" if p.winner == visit.TIE else "decisive" for p in pairs)
    strata = Counter(
        visit.HumanPairVotes(p.votes_a, p.votes_b).stratum
        for p in pairs
        if kind == HUMAN and p.votes_a + p.votes_b > 0
    )
    return {
        "kind": kind,
        "players": players,
        "pairs": len(pairs),
        "battles": boot.n_battles,
        "ties": outcomes.get("tie", 0),
        "strata": dict(sorted(strata.items(), reverse=True)),
        "reference_player": reference_player,
        "reference_elo": reference_elo,
        "online_seed": seed,
        "bootstrap_seed": bootstrap_seed,
        "bootstrap_seed_offset": salt,
        "bootstrap_seed_rule": "sha256(battles)[:4] + offset",
        "ranked_by": "online",
        "rounds": rounds,
        "deduplicated": dedup,
    }


# --- Metric-vs-human agreement (Sec. 4.3, Fig. 7) -----------------------------------------------


def _choice(winner: str, model_a: str, model_b: str) -> str | None:
    """The judged winner as "A"/"B" relative to the crowd pair's presentation; None for a tie."""
    if winner == model_a:
        return visit.VOTE_A
    if winner == model_b:
        return visit.VOTE_B
    return None


def _agreement_entry(
    name: str,
    kind: str,
    votes: Sequence[visit.HumanPairVotes],
    choices: Sequence[str | None],
    *,
    seed: int,
    rounds: int,
    coverage: int | None = None,
) -> dict:
    result = visit.metric_human_agreement(votes, choices, seed=seed, rounds=rounds)

    def cell(a: visit.Agreement) -> dict:
        return {"value": a.share, "n": a.n, **_interval(a.interval)}

    return {
        "name": name,
        "kind": kind,
        "overall": cell(result.overall),
        "strata": {s: cell(a) for s, a in result.strata.items()},
        "ties_broken": result.ties_broken,
        "coverage": len(votes) if coverage is None else coverage,
        "unavailable": "",
    }


def agreement_results(
    human: Sequence[PairData],
    *,
    reference_player: str,
    judges: Mapping[str, Sequence[PairData]],
    text_metrics: bool = True,
    seed: int = 0,
    rounds: int = DEFAULT_ROUNDS,
) -> dict:
    """How often each metric reproduces the crowd majority on pairs with five votes where both
    responses are model-generated, overall and for the 5/5, 4/5 and 3/5 strata; a metric's tie
    becomes a seeded random choice (Sec. 4.3, Fig. 7). Judges count on the pairs they judged."""
    eligible = [
        p
        for p in human
        if reference_player not in (p.model_a, p.model_b) and p.votes_a + p.votes_b == 5
    ]
    excluded_reference = sum(1 for p in human if reference_player in (p.model_a, p.model_b))
    votes = [visit.HumanPairVotes(p.votes_a, p.votes_b) for p in eligible]
    options = {"seed": seed, "rounds": rounds}
    metrics = []
    for name, judged in judges.items():
        by_key = {}
        for p in judged:
            by_key.setdefault(p.key, p)
        covered = [(k, by_key[p.key]) for k, p in enumerate(eligible) if p.key in by_key]
        choices = [_choice(j.winner, eligible[k].model_a, eligible[k].model_b) for k, j in covered]
        metrics.append(
            _agreement_entry(
                name,
                "judge",
                [votes[k] for k, _ in covered],
                choices,
                coverage=len(covered),
                **options,
            )
        )
    if text_metrics:
        candidates, references = {}, {}
        for k, p in enumerate(eligible):
            for side, text in (("a", p.response_a), ("b", p.response_b)):
                candidates[f"{k}{side}"] = text
                references[f"{k}{side}"] = p.reference
        labels = {
            textmetrics.BLEU4: "BLEU-4",
            textmetrics.ROUGE_L: "ROUGE-L",
            textmetrics.METEOR: "METEOR",
            textmetrics.CIDER: "CIDEr",
            textmetrics.BERTSCORE: "BERTScore",
        }
        for key, result in textmetrics.all_text_metrics(candidates, references).items():
            if not result.available:
                metrics.append({"name": labels[key], "kind": "text", "unavailable": result.reason})
                continue
            choices = [
                visit.score_choice(result.scores.get(f"{k}a"), result.scores.get(f"{k}b"))
                for k in range(len(eligible))
            ]
            metrics.append(_agreement_entry(labels[key], "text", votes, choices, **options))
    length = [visit.length_choice(p.response_a, p.response_b) for p in eligible]
    metrics.append(_agreement_entry("Length (longer wins)", "baseline", votes, length, **options))
    chance = visit.random_choices(len(eligible), seed=seed)
    metrics.append(_agreement_entry("Random", "baseline", votes, chance, **options))
    return {
        "pairs": len(eligible),
        "excluded_reference": excluded_reference,
        "excluded_not_five": len(human) - len(eligible) - excluded_reference,
        "strata": {s: sum(1 for v in votes if v.stratum == s) for s in visit.STRATA},
        "metrics": metrics,
        "seed": seed,
        "rounds": rounds,
    }
