"""VisIT-Bench pairwise judgments on the real instances and responses: import (judge battles in
the sandbox's head-to-head layout, crowd votes in the published CSV layout), ratings, win-rates,
agreement with the crowd, the judge-runner path, and bad input that stores nothing.

The votes are simulated (the family's demo); the instances, references and model responses are the
real VisIT-Bench files. Expected numbers are recomputed here the way the official
elo_analysis.py does, independently of evaluation.metrics.
"""

from __future__ import annotations

import collections
import csv
import hashlib
import io
import json
from collections import defaultdict
from functools import partial

import numpy as np
import pytest

from annotator.platform.errors import Conflict, Invalid
from evaluation import importers, services
from evaluation.families.naturalbench import demo as nb_demo
from evaluation.families.visit import parse as visit_parse
from evaluation.metrics import textmetrics
from evaluation.models import JudgmentSet, PairJudgment
from tests.evaluation.helpers import eval_version
from tests.evaluation.judgment_files import ROUNDS, human_file, import_llm, llm_file
from tests.paths import VISIT_BENCH, needs

pytestmark = needs(VISIT_BENCH)


# --- The official elo_analysis.py, restated for the expected numbers ---------------------------


def official_battles(records: list[dict]) -> tuple[list[tuple[str, str, str]], dict]:
    done, battles, pairs2win = set(), [], defaultdict(list)
    for r in records:
        k = tuple(sorted([r["A_model"], r["B_model"]]))
        key = (k, r["image_url"], r["instruction"])
        if key in done:
            continue
        done.add(key)
        wins = [y for y in r["auto_evaluation_result"] if y != "tie"]
        if len(wins) == 0 or len(wins) == len(set(wins)):
            outcome = "tie"
        else:
            winner = collections.Counter(wins).most_common(1)[0][0]
            pairs2win[k].append(winner)
            outcome = "model_a" if winner == r["A_model"] else "model_b"
        battles.append((r["A_model"], r["B_model"], outcome))
    return battles, pairs2win


def official_elo(battles, k=4, scale=400, base=10, init=1000):
    rating = defaultdict(lambda: init)
    for a, b, win in battles:
        ra, rb = rating[a], rating[b]
        ea = 1 / (1 + base ** ((rb - ra) / scale))
        eb = 1 / (1 + base ** ((ra - rb) / scale))
        sa = {"model_a": 1, "model_b": 0, "tie": 0.5}[win]
        rating[a] += k * (sa - ea)
        rating[b] += k * (1 - sa - eb)
    return dict(rating)


@pytest.mark.django_db
def test_judge_battles_import_and_reproduce_the_official_elo_and_win_rates(visit_version, files):
    # Given a head-to-head file on 40 real instances, with one battle repeated (kept once)
    records = json.loads(llm_file(files))
    records.append(dict(records[5], auto_evaluation_result=["tie", "tie"]))
    # When it is imported (ratings computed in the same job)
    result = import_llm(visit_version, json.dumps(records))
    judgment_set = JudgmentSet.objects.get(pk=result["judgment_set_id"])
    # Then one pair per (instance, unordered pair), the repeat dropped and counted
    assert judgment_set.pair_count == len(records) - 1 == 40 * 6
    assert judgment_set.provenance["duplicates_dropped"] == 1
    assert judgment_set.judge == "simulated-judge" and judgment_set.with_reference is False
    # And the two-order aggregation matches the official rule
    battles, pairs2win = official_battles(records)
    stored = list(judgment_set.judgments.order_by("position").values_list("winner", flat=True))
    assert stored == [{"model_a": a, "model_b": b, "tie": "tie"}[w] for a, b, w in battles]
    # And online Elo equals the official seed-1 shuffle and one pass, to the last bit
    shuffled = list(battles)
    np.random.seed(1)
    np.random.shuffle(shuffled)
    expected = official_elo(shuffled)
    players = {p["player"]: p for p in judgment_set.results["players"]}
    assert {name: p["online"] for name, p in players.items()} == expected
    # And win-rate vs reference is the official "x.xx% (n=…)" over decisive battles
    for model in ("llava13b_output", "instruct_blip_output", "panda_gpt_13b_output"):
        wins = pairs2win[tuple(sorted([model, "human_verified_reference"]))]
        text = f"{100 * wins.count(model) / len(wins):.2f}% (n={len(wins)})"
        assert players[model]["win_rate"]["text"] == text
    # And players are linked to the runs through their output column, the reference flagged
    assert players["llava13b_output"]["model"] == "LLaVA-13B"
    assert players["llava13b_output"]["run_id"] is not None
    assert players["human_verified_reference"]["is_reference"] is True
    assert players["human_verified_reference"]["win_rate"] is None
    # And bootstrap Elo has a seeded interval around its median, ordered like the qualities
    order = [p["player"] for p in judgment_set.results["players"]]
    assert order[0] == "human_verified_reference" and order[-1] == "panda_gpt_13b_output"
    assert all(p["low"] <= p["elo"] <= p["high"] for p in players.values())
    # And the bootstrap seed is a hash of the battles (never a database id): the first 32 bits
    # of SHA-256 over [A, B, winner, image, instruction] in file order, repeats dropped
    unique, seen = [], set()
    for r in records:
        key = (tuple(sorted([r["A_model"], r["B_model"]])), r["image_url"], r["instruction"])
        if key not in seen:
            seen.add(key)
            wins = [y for y in r["auto_evaluation_result"] if y != "tie"]
            tie = not wins or len(wins) == len(set(wins))
            winner = "tie" if tie else collections.Counter(wins).most_common(1)[0][0]
            unique.append([r["A_model"], r["B_model"], winner, r["image_url"], r["instruction"]])
    digest = hashlib.sha256(
        json.dumps(unique, ensure_ascii=False, separators=(",", ":")).encode()
    ).digest()
    assert judgment_set.results["bootstrap_seed"] == int.from_bytes(digest[:4], "big")
    assert judgment_set.results["rounds"] == ROUNDS
    assert judgment_set.results["ranked_by"] == "online"
    assert [p["online"] for p in judgment_set.results["players"]] == sorted(
        expected.values(), reverse=True
    )
    assert judgment_set.results["battles"] == len(battles)


@pytest.mark.django_db
def test_crowd_votes_count_per_response_and_each_vote_is_a_match(visit_version, files):
    # Given 80 real pairs with five simulated votes each (one row per vote)
    content = human_file(files)
    assert len(list(csv.reader(io.StringIO(content)))) == 1 + 80 * 5
    # When imported
    result = services.import_run(
        {
            "target": "judgments",
            "version_id": visit_version.pk,
            "kind": "human",
            "label": "Crowd",
            "content": content,
            "filename": "visit_bench_human_preferences.csv",
            "rounds": ROUNDS,
            "text_metrics": False,
        }
    )
    judgment_set = JudgmentSet.objects.get(pk=result["judgment_set_id"])
    # Then 80 pairs hold 400 votes, five each, winner = majority
    pairs = list(judgment_set.judgments.all())
    assert len(pairs) == 80 and judgment_set.provenance["votes"] == 400
    assert all(p.votes_a + p.votes_b == 5 for p in pairs)
    assert all(p.winner == (p.model_a if p.votes_a > p.votes_b else p.model_b) for p in pairs)
    # And every vote is a match in the crowd Elo (no de-duplication)
    results = judgment_set.results
    assert results["battles"] == 400 and results["deduplicated"] is False
    strata = collections.Counter(f"{max(p.votes_a, p.votes_b)}/5" for p in pairs)
    assert results["strata"] == dict(sorted(strata.items(), reverse=True))
    matches = collections.Counter()
    for p in pairs:
        matches[p.model_a] += 5
        matches[p.model_b] += 5
    assert {p["player"]: p["matches"] for p in results["players"]} == dict(matches)


@pytest.mark.django_db
def test_agreement_with_the_crowd_by_stratum(visit_version, files):
    # Given a judge with no ties on every pair of 60 instances and crowd votes on 80 pairs
    import_llm(visit_version, llm_file(files, n_instances=60, tie_rate=0.0), label="Judge")
    content = human_file(files, n_pairs=80, seed=9)
    services.import_run(
        {
            "target": "judgments",
            "version_id": visit_version.pk,
            "kind": "human",
            "label": "Crowd",
            "content": content,
            "rounds": ROUNDS,
            "text_metrics": False,
        }
    )
    crowd = JudgmentSet.objects.get(label="Crowd")
    judge = JudgmentSet.objects.get(label="Judge")
    agreement = crowd.results["agreement"]
    # Then pairs with the reference are left out; the rest have five votes
    human = list(crowd.judgments.select_related("item"))
    with_ref = [p for p in human if "human_verified_reference" in (p.model_a, p.model_b)]
    eligible = [p for p in human if p not in with_ref]
    assert agreement["excluded_reference"] == len(with_ref)
    assert agreement["pairs"] == len(eligible) and agreement["excluded_not_five"] == 0
    # And the judge's share is counted by hand over the pairs it judged, per stratum; a pair
    # the judge called a tie (the two orders disagreed) gets a seeded coin flip, in pair order
    verdicts = {(j.item_id, j.pair_key): j.winner for j in judge.judgments.all()}
    coin = np.random.default_rng(crowd.bootstrap_seed)
    hits, ties = defaultdict(list), 0
    for p in eligible:
        key = (p.item_id, p.pair_key)
        if key not in verdicts:
            continue
        pick = verdicts[key]
        if pick == "tie":
            ties += 1
            pick = p.model_a if coin.integers(2) == 0 else p.model_b
        majority = p.model_a if p.votes_a > p.votes_b else p.model_b
        stratum = f"{max(p.votes_a, p.votes_b)}/5"
        hits[stratum].append(pick == majority)
        hits["all"].append(pick == majority)
    entry = next(m for m in agreement["metrics"] if m["name"] == "Judge")
    assert entry["coverage"] == len(hits["all"]) > 0
    assert entry["ties_broken"] == ties > 0
    assert entry["overall"]["value"] == sum(hits["all"]) / len(hits["all"])
    for stratum in ("5/5", "4/5", "3/5"):
        cell = entry["strata"][stratum]
        assert cell["n"] == len(hits[stratum])
        if hits[stratum]:
            assert cell["value"] == sum(hits[stratum]) / len(hits[stratum])
    # And the length and random baselines cover every eligible pair
    names = [m["name"] for m in agreement["metrics"]]
    assert names == ["Judge", "Length (longer wins)", "Random"]
    assert all(m["coverage"] == len(eligible) for m in agreement["metrics"][1:])


@pytest.mark.django_db
def test_text_metric_agreement_rows_and_unavailable_ones(visit_version, files, monkeypatch):
    # Given crowd votes on a few pairs, with text metrics on: BLEU-4, ROUGE-L and CIDEr on
    # PTB-tokenized text; METEOR left out here (its jar takes half a minute to start, and
    # test_metrics_textmetrics covers it); BERTScore only with a local model
    monkeypatch.setattr(
        textmetrics,
        "meteor",
        lambda c, r: textmetrics.unavailable(textmetrics.METEOR, "left out in this test"),
    )
    monkeypatch.delenv(textmetrics.BERTSCORE_ENV, raising=False)
    services.import_run(
        {
            "target": "judgments",
            "version_id": visit_version.pk,
            "kind": "human",
            "label": "Crowd",
            "content": human_file(files, n_pairs=12, seed=2),
            "rounds": 20,
        }
    )
    metrics = {m["name"]: m for m in JudgmentSet.objects.get().results["agreement"]["metrics"]}
    # Then every baseline has a row; a missing BERTScore says why instead of a number
    assert list(metrics) == [
        "BLEU-4",
        "ROUGE-L",
        "METEOR",
        "CIDEr",
        "BERTScore",
        "Length (longer wins)",
        "Random",
    ]
    assert metrics["ROUGE-L"]["overall"]["n"] == metrics["Random"]["overall"]["n"] > 0
    assert metrics["CIDEr"]["coverage"] == metrics["BLEU-4"]["coverage"] > 0
    assert metrics["METEOR"] == {
        "name": "METEOR",
        "kind": "text",
        "unavailable": "left out in this test",
    }
    assert metrics["BERTScore"].get("unavailable") or metrics["BERTScore"]["overall"]["n"]


@pytest.mark.django_db
def test_aliases_rename_players_and_link_them(visit_version, files):
    content = llm_file(files, n_instances=5)
    aliases = importers.parse_aliases("panda_gpt_13b_output = PandaGPT-13B\n")
    import_llm(visit_version, content, aliases=aliases)
    judgment_set = JudgmentSet.objects.get()
    players = {p["player"]: p for p in judgment_set.results["players"]}
    assert "PandaGPT-13B" in players and "panda_gpt_13b_output" not in players
    assert players["PandaGPT-13B"]["run_id"] is not None
    assert judgment_set.provenance["aliases"] == {"panda_gpt_13b_output": "PandaGPT-13B"}


# --- Bad input: clear errors, nothing stored -----------------------------------------------------


def refused(version, kind: str, content: str, label: str = "Bad") -> Invalid:
    with pytest.raises(Invalid) as exc:
        services.judgments_import_start(
            version=version,
            kind=kind,
            label=label,
            judge="",
            with_reference=False,
            reference_player="human_verified_reference",
            aliases="",
            content=content,
            filename="f",
        )
    assert JudgmentSet.objects.count() == 0 and PairJudgment.objects.count() == 0
    return exc.value


@pytest.mark.django_db
def test_bad_judge_files_name_the_line_and_store_nothing(visit_version, files):
    records = json.loads(llm_file(files, n_instances=2))
    unknown = dict(records[0], instruction="Not an instruction of this benchmark")
    itself = dict(records[1], B_model=records[1]["A_model"])
    bad_vote = dict(records[2], auto_evaluation_result=["somebody", "tie"])
    one_order = dict(records[3], auto_evaluation_result=["tie"])
    lines = "\n".join(json.dumps(r) for r in [records[4], unknown, itself, bad_vote, one_order])
    error = refused(visit_version, "llm", lines)
    by_line = {e["line"]: e["error"] for e in error.errors}
    assert "against itself" in by_line[3]
    assert "'somebody'" not in by_line[4] and "must be" in by_line[4]
    assert "both orders" in by_line[5]
    # The unknown instance is reported once the file itself is valid
    error = refused(visit_version, "llm", "\n".join(json.dumps(r) for r in [records[4], unknown]))
    assert error.errors == [
        {
            "line": 2,
            "error": "unknown instance (image_url and instruction match no item of this version)",
        }
    ]
    error = refused(visit_version, "llm", "[]")
    assert "no judgments" in error.message


@pytest.mark.django_db
def test_bad_crowd_files_name_the_line_and_store_nothing(visit_version, files):
    header, first, *_ = csv.reader(io.StringIO(human_file(files, n_pairs=2)))
    both = first[:6] + ["True", "TRUE"]
    out = io.StringIO()
    csv.writer(out).writerows([header, first, both])
    error = refused(visit_version, "human", out.getvalue())
    assert error.errors[0]["error"].startswith("forced choice: exactly one")
    assert error.errors[0]["line"] > 2  # the second record, after the first one's lines
    error = refused(visit_version, "human", "image_url,instruction,A,B\nx,y,a,b\n")
    assert "missing columns: A_model, B_model, model_selection.A" in error.errors[0]["error"]
    error = refused(visit_version, "judge", out.getvalue())
    assert "Unknown judgment kind" in error.message


@pytest.mark.django_db
def test_label_taken_and_other_families_are_refused(visit_version, files):
    import_llm(visit_version, llm_file(files, n_instances=2), label="Judge")
    with pytest.raises(Conflict):
        services.judgments_import_start(
            version=visit_version,
            kind="llm",
            label="Judge",
            judge="",
            with_reference=False,
            reference_player="",
            aliases="",
            content=llm_file(files, n_instances=2),
            filename="",
        )
    version = eval_version(
        "naturalbench", "NB", importers.parse_items("naturalbench", nb_demo.naturalbench_items(2))
    )
    with pytest.raises(Invalid, match="VisIT-Bench"):
        services.judgments_compute_enqueue(version=version)
    assert JudgmentSet.objects.count() == 1
    with pytest.raises(Invalid) as exc:
        importers.parse_aliases("just a name")
    assert exc.value.errors == [
        {"line": 1, "error": "write one rename per line as: name in the file = new name"}
    ]


# --- The judge-runner path (for a later evaluation/runners.py) -----------------------------------


@pytest.mark.django_db
def test_runner_records_pairs_from_raw_judge_outputs_idempotently(visit_version):
    # Given an empty runner set and two kept instances
    judgment_set = services.judgment_set_create(
        version=visit_version,
        label="GPT-4o judge (runner)",
        judge="gpt-4o",
        provenance={"template": "visit-pairwise-v1"},
    )
    first, second = visit_version.items.filter(kept=True).order_by("position")[:2]
    a, b = "llava13b_output", "human_verified_reference"
    record = partial(services.judgment_record, judgment_set=judgment_set, model_a=a, model_b=b)
    # When order 1 is parsed directly and order 2 needs the extraction call
    pair = record(
        item=first,
        response_a="resp a",
        response_b="resp b",
        outputs=[
            {"shown_a": a, "shown_b": b, "judge_output": "… Overall, Response B is better."},
            {
                "shown_a": b,
                "shown_b": a,
                "judge_output": "Both are poor.",
                "extraction_output": "Final Answer: Response A",
                "generation_id": 17,
            },
        ],
    )
    # Then both orders name the reference: it wins
    assert pair.order_winners == [b, b] and pair.winner == b and pair.position == 0
    # And recording the same pair again changes nothing (a resumed run fills only gaps)
    again = record(
        item=first,
        model_a=b,
        model_b=a,
        response_a="x",
        response_b="y",
        outputs=[
            {"shown_a": a, "shown_b": b, "judge_output": "Response A is better"},
            {"shown_a": b, "shown_b": a, "judge_output": "Response A is better"},
        ],
    )
    assert again.pk == pair.pk and PairJudgment.objects.count() == 1
    # And an unparseable order with a failed extraction is a tie, so the pair is a tie
    tie = record(
        item=second,
        response_a="",
        response_b="",
        outputs=[
            {"shown_a": a, "shown_b": b, "judge_output": "Response A is better."},
            {"shown_a": b, "shown_b": a, "judge_output": "?", "extraction_output": "no idea"},
        ],
    )
    assert tie.order_winners == [a, "tie"] and tie.winner == "tie" and tie.position == 1
    # And a pending set is left out of the ratings until the runner finishes it
    services.judgments_compute(version=visit_version, rounds=10, text_metrics=False)
    judgment_set.refresh_from_db()
    assert judgment_set.results == {}
    services.judgment_set_finish(judgment_set=judgment_set)
    services.judgments_compute(version=visit_version, rounds=10, text_metrics=False)
    judgment_set.refresh_from_db()
    assert judgment_set.results["pairs"] == 2 and judgment_set.results["ties"] == 1
    # And bad outputs are refused
    with pytest.raises(Invalid, match="both orders"):
        record(
            item=second,
            model_b="panda_gpt_13b_output",
            response_a="",
            response_b="",
            outputs=[{"shown_a": a, "shown_b": "panda_gpt_13b_output", "judge_output": ""}],
        )


@pytest.mark.django_db
def test_same_judgments_give_the_same_elo_whatever_the_database_ids(visit_version, files):
    # Given the same head-to-head file imported on two versions of the same data, the second
    # created after other rows took ids (as a second, fresh database would number them)
    dataset, _models = files
    first = import_llm(visit_version, llm_file(files))
    for k in range(2):
        eval_version("visit", f"Filler {k}", visit_parse.parse_items(dataset)[:3], label="x")
    again = eval_version("visit", "VisIT again", visit_parse.parse_items(dataset), label="v")
    second = import_llm(again, llm_file(files))
    assert again.pk != visit_version.pk and first["judgment_set_id"] != second["judgment_set_id"]

    # Then every player's online Elo, bootstrap median and interval, and the seed, are the same
    def ratings(set_id):
        results = JudgmentSet.objects.get(pk=set_id).results
        keep = ("player", "online", "elo", "low", "high", "bt", "matches", "win_rate")
        return results["bootstrap_seed"], [{k: p[k] for k in keep} for p in results["players"]]

    assert ratings(first["judgment_set_id"]) == ratings(second["judgment_set_id"])
