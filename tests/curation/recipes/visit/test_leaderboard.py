"""The living leaderboard: a researcher submits a new model's responses over the API (token auth)
or the page; they are imported as a run, paired (seeded, reproducibly) with the reference and a
random other model per instance, judged by the offline judge in both orders, and the leaderboard
shows the new rating with its interval. Bad uploads are refused with line numbers and store
nothing. Human tuples are sampled reproducibly from a seed."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotator.platform import roles
from curation.recipes.visit import dataset, ratings, submissions
from curation.recipes.visit.models import VisitSubmission
from evaluation.families.visit import judge, living, sampling
from evaluation.models import JudgmentSet, ModelRun
from evaluation.parsed import pair_key
from tests.curation.recipes.visit.helpers import (
    DATASET,
    MODEL_FILES,
    import_model,
    publish_version,
    read,
)
from tests.factories import UserFactory
from tests.paths import VISIT_BENCH, needs

pytestmark = [
    pytest.mark.django_db,
    needs(VISIT_BENCH),
]
PANDA = "PandaGPT (13B)"


@pytest.fixture
def board(pipeline, curator):
    """The published dataset with LLaVA and InstructBLIP imported on its version."""
    dataset.dataset_import(pipeline=pipeline, content=read(DATASET), filename=DATASET.name)
    version = publish_version(pipeline, created_by=curator)
    for name in ("LLaVA (13B)", "InstructBLIP (13B)"):
        import_model(version, name)
    pipeline.refresh_from_db()
    return pipeline, version


@pytest.fixture
def api(researcher):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=researcher).key}")
    return client


def _jsonl(version, n: int, text=lambda k: f"Answer {k}: " + "word " * k) -> str:
    ids = version.items.filter(kept=True).order_by("position").values_list("item_id", flat=True)
    return "".join(
        json.dumps({"instance_id": item_id, "response": text(k)}) + "\n"
        for k, item_id in enumerate(ids[:n])
    )


def test_submission_over_the_api_is_judged_and_rated(
    board, api, eager, django_capture_on_commit_callbacks
):
    pipeline, version = board
    url = reverse("api-visit-submissions", args=[pipeline.pk])
    # when a researcher submits PandaGPT's published output file (one extra column) by token
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(
            url,
            {
                "model": PANDA,
                "file": SimpleUploadedFile("panda.csv", read(MODEL_FILES[PANDA]).encode()),
                "seed": 7,
                "reference_pairs": 12,
            },
            format="multipart",
        )
    # then its 578 responses are a run, paired like the runner's seeded sample: 12 instances,
    # each against the reference and one random other model
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["model"], body["rows"], body["reference_pairs"]) == (PANDA, 578, 12)
    expected = judge.judge_pairs_sample(version=version, model=PANDA, n=12, seed=7)
    assert body["pairs"] == expected
    assert body["pair_count"] == 24
    assert sum(p["b_model"] == sampling.REFERENCE for p in body["pairs"]) == 12
    assert ModelRun.objects.get(version=version, model__name=PANDA).prediction_count == 578
    # and the offline judge judged every pair in both orders, then rated the version
    judged = JudgmentSet.objects.get(version=version, label=submissions.leaderboard_label(pipeline))
    assert (judged.status, judged.pair_count) == ("succeeded", 24)
    assert judged.provenance["offline"] is True
    assert judged.provenance["pairing"] == {"model": PANDA, "instances": 12, "seed": 7, "drawn": 12}
    assert all(len(j.order_winners) == 2 for j in judged.judgments.all())
    # so the leaderboard shows the new model's rating with its interval
    detail = api.get(reverse("api-visit-submission", args=[pipeline.pk, body["id"]])).json()
    rating = detail["rating"]
    assert detail["judge_job"]["status"] == "succeeded"
    assert rating["player"] == PANDA
    assert rating["low"] <= rating["elo"] <= rating["high"]
    assert rating["win_rate"]["n"] <= 12
    board_json = api.get(reverse("api-visit-leaderboard", args=[pipeline.pk])).json()
    assert board_json["judge"] == "Offline judge (length heuristic, not an LLM)"
    assert {p["player"] for p in board_json["players"]} >= {PANDA, sampling.REFERENCE}


def test_the_same_seed_gives_the_same_pairs(board):
    pipeline, version = board
    responses = living.responses_of(version)
    # human tuples: the same seed, the same sample; another seed, another one
    first = sampling.rating_tuples(responses, n=30, seed=11)
    assert sampling.rating_tuples(dict(reversed(list(responses.items()))), n=30, seed=11) == first
    assert sampling.rating_tuples(responses, n=30, seed=12) != first
    assert len({(t.instance_id, pair_key(t.model_a, t.model_b)) for t in first}) == 30
    # and through the service: sampled tuples store their seed, new samples skip old tuples
    assert ratings.pairs_sample(pipeline=pipeline, n=30, seed=11, votes=5) == 30
    stored = list(
        pipeline.pairs.order_by("id").values_list("item_id", "model_a", "model_b", "seed")
    )
    assert stored == [(t.instance_id, t.model_a, t.model_b, 11) for t in first]
    ratings.pairs_sample(pipeline=pipeline, n=30, seed=11)
    assert pipeline.pairs.values("item_id", "pair_key").distinct().count() == 60


def _csv(header: list[str], rows: list[list[str]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def _post(api, pipeline, content: str, name: str, model="My VLM"):
    return api.post(
        reverse("api-visit-submissions", args=[pipeline.pk]),
        {"model": model, "file": SimpleUploadedFile(name, content.encode()), "reference_pairs": 5},
        format="multipart",
    )


@pytest.mark.parametrize(
    ("make", "name", "line", "error"),
    [
        (lambda ids, dataset: "instance_id,answer_text\nabc,Yes\n", "r.csv", 1, "missing columns"),
        (
            lambda ids, dataset: (
                json.dumps({"instance_id": ids[0], "response": "A"})
                + "\n"
                + json.dumps({"instance_id": "no-such-id", "response": "B"})
                + "\n"
            ),
            "r.jsonl",
            2,
            "unknown instance 'no-such-id'",
        ),
        (
            lambda ids, dataset: (
                json.dumps({"instance_id": ids[0], "response": "A"})
                + "\n"
                + json.dumps({"instance_id": ids[1], "response": "B"})
                + "\n"
                + json.dumps({"instance_id": ids[0], "response": "C"})
                + "\n"
            ),
            "r.jsonl",
            3,
            "duplicate row for instance",
        ),
        (
            lambda ids, dataset: _csv(
                ["image", "instruction", "response"],
                [[dataset[0]["image"], dataset[0]["instruction"], r] for r in ("Yes", "No")],
            ),
            "r.csv",
            3,
            "duplicate row: this image and instruction are already on line 2",
        ),
        (
            lambda ids, dataset: json.dumps({"instance_id": ids[0]}) + "\n",
            "r.jsonl",
            1,
            "missing field response",
        ),
    ],
)
def test_bad_uploads_are_refused_with_line_numbers_and_nothing_stored(
    board, api, make, name, line, error
):
    pipeline, version = board
    ids = list(
        version.items.filter(kept=True).order_by("position").values_list("item_id", flat=True)
    )
    dataset = [i.data for i in version.items.order_by("position")[:1]]
    runs_before = ModelRun.objects.count()
    response = _post(api, pipeline, make(ids, dataset), name)
    assert response.status_code == 400
    body = response.json()
    assert body["errors"][0]["line"] == line
    assert error in body["errors"][0]["error"]
    assert ModelRun.objects.count() == runs_before
    assert not VisitSubmission.objects.exists()
    assert not JudgmentSet.objects.filter(version=version).exists()


def test_bad_upload_in_the_browser_shows_the_lines(board, client, researcher):
    pipeline, version = board
    client.force_login(researcher)
    response = client.post(
        reverse("curator-visit-leaderboard", args=[pipeline.pk]),
        {
            "model": "My VLM",
            "file": SimpleUploadedFile("r.jsonl", b'{"instance_id": "nope", "response": "x"}\n'),
            "reference_pairs": 5,
            "seed": 0,
        },
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "The submission does not match this version; nothing was stored." in html
    assert '<td class="num">1</td><td><code>unknown instance &#x27;nope&#x27;' in html
    assert not ModelRun.objects.filter(model__name="My VLM").exists()


def test_submission_in_the_browser_starts_the_judge(
    board, client, researcher, eager, django_capture_on_commit_callbacks
):
    pipeline, version = board
    client.force_login(researcher)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("curator-visit-leaderboard", args=[pipeline.pk]),
            {
                "model": "Echo",
                "file": SimpleUploadedFile("echo.jsonl", _jsonl(version, 8).encode()),
                "reference_pairs": 4,
                "seed": 1,
            },
        )
    assert response.status_code == 302
    submission = VisitSubmission.objects.get(model_name="Echo")
    assert (submission.rows, submission.format, len(submission.pairs)) == (8, "jsonl", 8)
    page = client.get(reverse("curator-visit-leaderboard", args=[pipeline.pk])).content.decode()
    assert "Echo" in page
    assert "offline judge: a length heuristic" in page


def test_api_roles_token_and_name_clash(board, api, crowdworker, researcher):
    pipeline, version = board
    url = reverse("api-visit-submissions", args=[pipeline.pk])
    content = _jsonl(version, 3)
    # anonymous: 401; a crowdworker's token: 404 like a missing pipeline; nothing stored
    anonymous = APIClient().post(url, {"model": "X", "content": content}, format="json")
    assert anonymous.status_code == 401
    worker = APIClient()
    worker.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=crowdworker).key}")
    assert worker.post(url, {"model": "X", "content": content}, format="json").status_code == 404
    outsider = UserFactory(username="r2", role=roles.RESEARCHER)
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=outsider).key}")
    assert other.get(url).status_code == 404
    # a model already on the board: 409
    clash = api.post(url, {"model": "LLaVA (13B)", "content": content}, format="json")
    assert clash.status_code == 409
    assert not VisitSubmission.objects.exists()
    assert ModelRun.objects.filter(version=version).count() == 2
