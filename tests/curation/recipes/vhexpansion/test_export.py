"""The expanded set: JSONL + images and LLaVA conversations (Sec. 5.4), and the round trip through
the evaluation app's importer to accuracy, symmetric accuracy and new successful VH cases per
perturbation (Tables 3–5)."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections import Counter

import pytest

from annotator.platform.errors import Conflict
from curation.recipes.framework.publish import published_versions
from curation.recipes.framework.registry import recipe_of
from curation.recipes.vhexpansion import export, variants
from curation.recipes.vhexpansion.models import VHCase, VHNegation
from evaluation import services as evaluation_services
from evaluation.families.vhexpansion import parse as vh_parse
from evaluation.models import MetricResult
from tests.curation.recipes.vhexpansion import helpers
from tests.curation.recipes.vhexpansion.helpers import draft_negations, review, reviewers

pytestmark = pytest.mark.django_db
case_set = helpers.case_set
media = helpers.media


@pytest.fixture
def expanded(case_set):
    """c1 and c2 accepted by a reviewer, c3 rejected; brightness variants of every case."""
    draft_negations(case_set, reviewers=1, max_attempts=1)
    review(case_set.review_queue, reviewers(1), {"c1": "accept", "c2": "accept", "c3": "reject"})
    variants.variants_perturb(case_set=case_set, perturbations=["brightness"])
    return case_set


def _zip(blob) -> zipfile.ZipFile:
    return zipfile.ZipFile(io.BytesIO(blob.read()))


def test_jsonl_export_holds_pairs_links_and_images(expanded):
    zf = _zip(helpers.export_zip(expanded, fmt="jsonl"))
    rows = [json.loads(line) for line in zf.read("vhexpansion.jsonl").decode().splitlines()]
    c1 = expanded.cases.get(external_id="c1")
    bright = c1.variants.get(perturbation="brightness").image
    assert [(r["id"], r["pair_id"], r["answer"], r["negated"]) for r in rows] == [
        ("c1:original:q", "c1:original", "yes", False),
        ("c1:original:neg", "c1:original", "no", True),
        ("c1:brightness:q", "c1:brightness", "yes", False),
        ("c1:brightness:neg", "c1:brightness", "no", True),
        ("c2:original:q", "c2:original", "no", False),
        ("c2:original:neg", "c2:original", "yes", True),
        ("c2:brightness:q", "c2:brightness", "no", False),
        ("c2:brightness:neg", "c2:brightness", "yes", True),
    ]
    assert rows[3] == {
        "id": "c1:brightness:neg",
        "pair_id": "c1:brightness",
        "image": f"images/{bright.sha256}.png",
        "perturbation": "brightness",
        "source": "MMVP",
        "category": "",
        "case_id": "c1",
        "image_sha256": bright.sha256,
        "variant_of": "c1:original:q",
        "derivation": {"op": "brightness", "params": {"c": 0.5}},
        "question": "Is there no cat in the image?",
        "answer": "no",
        "negated": True,
        "negation_of": "c1:brightness:q",
    }
    images = sorted(n for n in zf.namelist() if n.startswith("images/"))
    assert len(images) == 4
    for name in images:
        assert hashlib.sha256(zf.read(name)).hexdigest() == name[7:71]
    assert "README.txt" in zf.namelist()


def test_llava_export_is_a_conversation_per_case(expanded):
    zf = _zip(helpers.export_zip(expanded, fmt="llava"))
    data = json.loads(zf.read("llava.json"))
    c2 = expanded.cases.get(external_id="c2")
    assert len(data) == 8
    assert data[5] == {
        "id": "c2:original:neg",
        "image": f"images/{c2.image.sha256}.png",
        "conversations": [
            {"from": "human", "value": "<image>\nIs it false that the cup is on the table?"},
            {"from": "gpt", "value": "Yes"},
        ],
    }
    assert all(d["image"] in zf.namelist() for d in data)


def test_export_round_trip_through_the_evaluation_importer(expanded, curator):
    # given the exported JSONL imported by the evaluation app as a VHExpansion version
    zf = _zip(helpers.export_zip(expanded, fmt="jsonl"))
    content = zf.read("vhexpansion.jsonl").decode()
    result = evaluation_services.import_run(
        {
            "target": "items",
            "project_id": expanded.project_id,
            "family": "vhexpansion",
            "benchmark": "MMVP expanded",
            "label": "v1",
            "content": content,
            "filename": "vhexpansion.jsonl",
        },
        created_by=curator,
    )
    assert (result["items"], result["kept"]) == (8, 8)
    # and a model that always answers "Yes" (the bias Sec. 3.1 describes)
    outputs = "".join(
        json.dumps({"id": json.loads(line)["id"], "output": "Yes."}) + "\n"
        for line in content.splitlines()
    )
    run_result = evaluation_services.import_run(
        {
            "target": "predictions",
            "family": "vhexpansion",
            "version_id": result["version_id"],
            "model": "always-yes",
            "content": outputs,
            "rounds": 20,
        }
    )
    metrics = {m.metric: m for m in MetricResult.objects.filter(run_id=run_result["run_id"])}
    # then accuracy (Def. 2) is the share of "yes" among the cases as given (c1 yes, c2 no:
    # q = 1/2) and symmetric accuracy 0 on every image, as Theorems 1-2 predict at p = 1
    acc, sym, new = metrics["accuracy"], metrics["symmetric_accuracy"], metrics["new_successful"]
    assert (acc.value, sym.value, acc.n) == (0.5, 0.0, 4)
    assert acc.details["yes_share"] == 0.5
    assert metrics["accuracy_all_cases"].value == 0.5
    assert {k: v["value"] for k, v in acc.breakdown["perturbation"].items()} == {
        "brightness": 0.5,
        "original": 0.5,
    }
    assert {k: v["value"] for k, v in sym.breakdown["perturbation"].items()} == {
        "brightness": 0.0,
        "original": 0.0,
    }
    # and new successful VH cases: c1's negation ("no" answered "yes") on each image, plus on
    # the perturbed image the case c2 itself (an original answered wrong does not count)
    assert new.value == 3.0
    assert {k: v["value"] for k, v in new.breakdown["perturbation"].items()} == {
        "brightness": 2.0,
        "original": 1.0,
    }


def test_publish_makes_a_frozen_version_with_the_links(expanded, curator):
    version = helpers.publish(expanded, "v1", created_by=curator)
    assert (version.benchmark.family, version.frozen, version.item_count) == (
        "vhexpansion",
        True,
        8,
    )
    assert version.benchmark.name == f"MMVP sample · {expanded.project.slug}"
    assert version.benchmark.project_id == expanded.project_id
    item = version.items.get(item_id="c2:brightness:neg")
    assert item.data["negation_of"] == "c2:brightness:q"
    assert item.data["variant_of"] == "c2:original:q"
    assert item.data["pair_id"] == "c2:brightness" and item.data["negated"] is True
    assert list(published_versions(recipe_of("vhexpansion"), expanded)) == [version]
    with pytest.raises(Conflict, match="already has a version 'v1'"):
        helpers.publish(expanded, "v1")


def test_only_accepted_negations_are_read(expanded):
    # given c3, whose only negation was rejected
    c3 = VHCase.objects.get(external_id="c3")
    assert c3.negation_state == "dropped"
    rows = export.expanded_set(case_set=expanded).rows
    assert not any(r["id"].startswith("c3:") for r in rows)
    assert VHNegation.objects.filter(case=c3, status="rejected").count() == 1
    assert {r["case_id"] for r in rows} == {"c1", "c2"}
    pairs = Counter(r["perturbation"] for r in rows if r["negated"])
    assert pairs == {"original": 2, "brightness": 2}


def test_predictions_file_parses_with_the_same_ids(expanded):
    rows = export.expanded_set(case_set=expanded).rows
    parsed = vh_parse.parse_items(export.jsonl_text(rows))
    assert [p.item_id for p in parsed] == [r["id"] for r in rows]
