"""Who the VisIT-Bench judge can judge: the players of a version (each run's model, the
human-verified reference) and their responses; pairs drawn reproducibly for one model, and the
check that every pair can be judged (App. F)."""

from __future__ import annotations

import random
from typing import Any

from annotator.platform.errors import Invalid
from evaluation import services
from evaluation.models import BenchmarkItem, BenchmarkVersion, Prediction
from evaluation.parsed import pair_key
from evaluation.runners.common import failed_keys

from .judgments import OFFICIAL_REFERENCE_PLAYER as REFERENCE_PLAYER

DEFAULT_JUDGE_INSTANCES = 150
MAX_PAIRS = 20_000


def _player_of_run(version: BenchmarkVersion) -> dict[int, str]:
    """Run id → player name: the model's name, the first run (by id) of a model wins, as
    ``services.judgments_compute`` links players to runs."""
    names: dict[int, str] = {}
    taken: set[str] = set()
    for run_id, name in version.runs.order_by("id").values_list("id", "model__name"):
        if name not in taken:
            taken.add(name)
            names[run_id] = name
    return names


def judge_player_names(version: BenchmarkVersion) -> list[str]:
    """Models with responses on the version (two queries), for a "model to judge" choice."""
    names = _player_of_run(version)
    with_predictions = set(
        version.runs.filter(pk__in=names, prediction_count__gt=0).values_list("id", flat=True)
    )
    return sorted(names[r] for r in with_predictions)


def judge_players(version: BenchmarkVersion) -> dict[str, dict[int, str]]:
    """Responses per player and item pk: every run's predictions and the human-verified
    reference. Three queries, whatever the number of runs."""
    names = _player_of_run(version)
    players: dict[str, dict[int, str]] = {name: {} for name in names.values()}
    rows = Prediction.objects.filter(run_id__in=names).values_list(
        "run_id", "item_id", "raw_output", "scores"
    )
    for run_id, item_pk, raw, scores in rows:
        # A runner's failed call is no response to judge.
        if isinstance(raw, str) and not failed_keys(scores):
            players[names[run_id]][item_pk] = raw
    players = {name: responses for name, responses in players.items() if responses}
    players[REFERENCE_PLAYER] = {
        pk: str(data.get("reference", ""))
        for pk, data in version.items.filter(kept=True).values_list("pk", "data")
    }
    return players


def judge_pairs_sample(
    *,
    version: BenchmarkVersion,
    model: str,
    n: int = DEFAULT_JUDGE_INSTANCES,
    seed: int = 0,
    opponents: bool = True,
    players: dict[str, dict[int, str]] | None = None,
) -> list[dict]:
    """Pairs for judging ``model``: ``n`` kept instances drawn with ``seed``, each judged against
    the human-verified reference and, with ``opponents``, against one other player drawn at
    random among those that answered it (App. F: a new model against a random existing one).
    The same version, players and seed give the same pairs."""
    services.require_pairwise(version)
    players = players if players is not None else judge_players(version)
    if model not in players or model == REFERENCE_PLAYER:
        raise Invalid(f"{model!r} is not a run on this version.")
    if n < 1:
        raise Invalid("Judge at least one instance.")
    answered = players[model]
    positions = dict(version.items.filter(kept=True).values_list("pk", "position"))
    eligible = sorted((pk for pk in answered if pk in positions), key=positions.__getitem__)
    if not eligible:
        raise Invalid(f"{model!r} has no responses on the instances that count.")
    rng = random.Random(seed)
    chosen = sorted(rng.sample(eligible, min(n, len(eligible))), key=positions.__getitem__)
    ids = dict(version.items.filter(pk__in=chosen).values_list("pk", "item_id"))
    pairs = []
    others = sorted(p for p in players if p not in (model, REFERENCE_PLAYER))
    for pk in chosen:
        pairs.append({"instance_id": ids[pk], "a_model": model, "b_model": REFERENCE_PLAYER})
        if opponents:
            candidates = [p for p in others if pk in players[p]]
            if candidates:
                opponent = rng.choice(candidates)
                pairs.append({"instance_id": ids[pk], "a_model": model, "b_model": opponent})
    return pairs


def _pair_error(pair: Any, items: dict, players: dict, seen: set) -> tuple[str, Any]:
    """(error, None) for a pair that cannot be judged, else ("", (item, a, b))."""
    if not isinstance(pair, dict):
        return "each pair must be an object", None
    item = items.get(str(pair.get("instance_id", "")))
    a, b = str(pair.get("a_model", "")), str(pair.get("b_model", ""))
    if item is None:
        return f"unknown instance {pair.get('instance_id')!r}", None
    if not a or not b or a == b:
        return "a_model and b_model must be two players", None
    missing = [p for p in (a, b) if item.pk not in players.get(p, {})]
    if missing:
        return f"{', '.join(map(repr, missing))} did not answer this instance", None
    key = (item.pk, pair_key(a, b))
    if key in seen:
        return "this pair and instance are listed twice", None
    seen.add(key)
    return "", (item, a, b)


def judge_pairs_validate(
    *, version: BenchmarkVersion, pairs: Any, players: dict[str, dict[int, str]] | None = None
) -> list[tuple[BenchmarkItem, str, str]]:
    """Every pair names an instance of the version and two different players that answered it;
    line-numbered errors (1-based pair numbers) otherwise."""
    if not isinstance(pairs, list) or not pairs:
        raise Invalid("Give at least one pair to judge.", [{"line": 0, "error": "no pairs"}])
    if len(pairs) > MAX_PAIRS:
        raise Invalid(f"At most {MAX_PAIRS} pairs per judge run.")
    players = players if players is not None else judge_players(version)
    items = {i.item_id: i for i in version.items.only("id", "item_id", "data", "kept")}
    errors, out, seen = [], [], set()
    for n, pair in enumerate(pairs, start=1):
        error, checked = _pair_error(pair, items, players, seen)
        if error:
            errors.append({"line": n, "error": error})
        else:
            out.append(checked)
    if errors:
        raise Invalid("Some pairs cannot be judged; nothing was started.", errors[:200])
    return out
