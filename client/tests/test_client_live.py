"""blindspot-client against a live server: queues, uploads, annotators through the API,
outcomes as a DataFrame and a Dataset, jobs, evaluation, webhooks, and every error status."""

from __future__ import annotations

import hashlib
import json
import zipfile

import httpx
import pytest
from blindspot_client import (
    ENDPOINTS,
    ChecksumMismatch,
    Client,
    Conflict,
    Forbidden,
    InvalidRequest,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    Unauthorized,
)

from annotator.models import TaskQueue
from evaluation.families.naturalbench import demo as nb_demo
from tests.webhook_receiver import Receiver

pytestmark = pytest.mark.django_db(transaction=True)


def vqa(i: int) -> dict:
    return {
        "image": {"url": f"/static/demo/img{i}.png"},
        "question": f"Is the cube red? ({i})",
        "choices": ["Yes", "No"],
    }


def annotate_all(client: Client, queue_id: int, answer=lambda task: "Yes", respond=None) -> int:
    """One annotator answers every task the server hands them, through the API."""
    answered = 0
    task = client.next_task(queue_id)
    while task is not None:
        response = respond(task) if respond else {"answer": answer(task)}
        result = client.submit(task["id"], response)
        answered += 1
        task = result["next"]["task"]
    return answered


# --------------------------------------------------------------------------------------------
# The client and the schema never drift
# --------------------------------------------------------------------------------------------
def test_every_client_endpoint_is_in_the_openapi_schema(site, client_for):
    client = client_for()
    schema = client.http.get("/api/schema/", params={"format": "json"}).json()
    offered = {(method.upper(), path) for path, ops in schema["paths"].items() for method in ops}
    missing = sorted(set(ENDPOINTS.values()) - offered)
    assert not missing, f"client calls missing from the schema: {missing}"


def test_the_client_calls_no_path_outside_its_table():
    from pathlib import Path

    import blindspot_client

    source = "".join(
        p.read_text(encoding="utf-8") for p in Path(blindspot_client.__file__).parent.glob("*.py")
    )
    table = source.split("ENDPOINTS: dict", 1)[1].split("\n}\n", 1)[0]
    assert source.count('"/api/') == table.count('"/api/')


# --------------------------------------------------------------------------------------------
# Queues, uploads, outcomes
# --------------------------------------------------------------------------------------------
def test_queue_upload_decide_and_read_outcomes(site, client_for, tmp_path):
    import pandas as pd

    bs = client_for("curator")
    project = next(p for p in bs.projects() if p.id == site.project.pk)
    assert project.name == "Colours"
    assert [p.id for p in bs.projects()] == [site.project.pk]
    queue = bs.create_queue(project=project.id, kind="vqa_choice", title="Colours", redundancy=2)
    # dicts, chunked (5 tasks in chunks of 2), a JSONL file and a DataFrame
    created = bs.upload_tasks(
        queue.id, [{"payload": vqa(i), "id": f"t{i}"} for i in range(5)], chunk_size=2
    )
    jsonl = tmp_path / "tasks.jsonl"
    jsonl.write_text("\n".join(json.dumps(vqa(i)) for i in range(5, 7)) + "\n")
    created += bs.upload_tasks(queue.id, jsonl, progress=False)
    frame = pd.DataFrame({"payload": [vqa(7)], "id": ["t7"]})
    created += bs.upload_tasks(queue.id, frame, progress=False)
    assert created == 8
    assert bs.progress(queue.id)["total"] == 8 and bs.progress(queue.id)["open"] == 8
    # two annotators decide every task through the API
    assert annotate_all(client_for("worker1"), queue.id) == 8
    assert (
        annotate_all(client_for("worker2"), queue.id, lambda t: "No" if "(0)" in str(t) else "Yes")
        == 8
    )
    done = bs.wait_for_queue(queue.id, timeout=30, poll=0.2, progress=False)
    assert done.progress["open"] == 0
    # outcomes, lazily and paged
    rows = bs.outcomes(queue.id).to_list()
    all_rows = bs.outcomes(queue.id, decided_only=False).to_list()
    assert len(all_rows) == 8
    assert {r["state"] for r in all_rows} == {"decided", "undecided"}
    assert len(rows) == sum(r["state"] == "decided" for r in all_rows) == 7
    df = bs.outcomes(queue.id).to_pandas()
    assert len(df) == 7 and set(df["outcome.label"]) == {"Yes"}
    assert sorted(df["external_id"])[:3] == ["", "", "t1"]
    dataset = bs.outcomes(queue.id).to_datasets()
    assert dataset.num_rows == 7 and json.loads(dataset[0]["outcome"])["label"] == "Yes"
    agreement = bs.agreement(queue.id)
    assert agreement["n_items_compared"] == 8
    assert agreement["percent_agreement"] == pytest.approx(7 / 8)


def test_outcomes_page_lazily(site, client_for):
    bs = client_for("curator")
    queue = bs.create_queue(project=site.project.pk, kind="vqa_choice", title="Paged")
    bs.upload_tasks(queue.id, [vqa(i) for i in range(205)], progress=False)
    before = len(bs.calls)
    rows = iter(bs.outcomes(queue.id, decided_only=False))
    assert len(bs.calls) == before  # nothing read yet
    next(rows)
    assert len(bs.calls) == before + 1  # one page
    assert len(list(rows)) == 204
    assert len(bs.calls) == before + 3  # 205 rows in pages of 100


# --------------------------------------------------------------------------------------------
# Errors carry the server's message
# --------------------------------------------------------------------------------------------
def test_errors_by_status(site, client_for, settings):
    bs = client_for("curator")
    with pytest.raises(Unauthorized, match="Invalid token"):
        Client(site.url, "not-a-token").projects()
    other_queue = client_for("outsider").create_queue(
        project=site.other_project.pk, kind="vqa_choice", title="Theirs"
    )
    with pytest.raises(NotFound, match="Not found"):
        bs.queue(other_queue.id)
    with pytest.raises(InvalidRequest) as refused:
        bs.create_queue(project=site.project.pk, kind="no-such-kind", title="X")
    assert refused.value.errors and refused.value.errors[0]["field"] == "kind"
    queue = bs.create_queue(project=site.project.pk, kind="vqa_choice", title="Q")
    with pytest.raises(InvalidRequest) as bad_rows:
        bs.upload_tasks(
            queue.id, [vqa(1), vqa(2), {"payload": "not an object"}], chunk_size=2, progress=False
        )
    assert [e["task"] for e in bad_rows.value.errors] == [2]
    assert bs.progress(queue.id)["total"] == 2  # the first chunk is kept
    worker = client_for("worker1")
    task = worker.next_task(queue.id)
    worker.submit(task["id"], {"answer": "Yes"})
    with pytest.raises(Conflict):
        worker.submit(task["id"], {"answer": "No"})
    settings.BLINDSPOT_MAX_REQUEST_BYTES = 2000
    with pytest.raises(PayloadTooLarge, match="(?i)too large|limit|bytes"):
        bs.upload_tasks(queue.id, [vqa(i) for i in range(50)], chunk_size=50, progress=False)
    refusals = []
    for _ in range(6):
        try:
            Client.login(site.url, "c-curator", "wrong")
        except (InvalidRequest, RateLimited) as exc:
            refusals.append(exc)
    assert isinstance(refusals[0], InvalidRequest)
    assert "Wrong user name or password" in refusals[0].message
    assert isinstance(refusals[-1], RateLimited), refusals
    assert "Too many failed logins" in refusals[-1].message
    assert refusals[-1].retry_after and refusals[-1].retry_after > 0


def test_login_exchanges_a_password_for_the_token(site):
    from tests.factories import PASSWORD

    with Client.login(site.url, "c-researcher", PASSWORD) as bs:
        assert [p.name for p in bs.projects()] == ["Colours"]


def test_403_maps_to_forbidden():
    # The server answers 404 rather than 403 to keep ids secret; the mapping is checked on a
    # canned answer (the one place this suite does not use the live server).
    def handler(request):
        return httpx.Response(403, json={"message": "You do not have permission."})

    bs = Client("http://blindspot.test", "t", transport=httpx.MockTransport(handler))
    with pytest.raises(Forbidden, match="You do not have permission"):
        bs.projects()


# --------------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------------
def test_evaluation_import_run_and_leaderboard(site, client_for, tmp_path):
    bs = client_for("curator")
    items = tmp_path / "items.jsonl"
    items.write_text(nb_demo.naturalbench_items(8))
    job_id = bs.import_benchmark(
        project=site.project.pk, family="naturalbench", benchmark="NB", label="v1", path=items
    )
    job = bs.wait_for_job(job_id, timeout=60, poll=0.2, progress=False)
    assert job.status == "succeeded"
    (benchmark,) = bs.benchmarks()
    assert benchmark["name"] == "NB"
    version_id = benchmark["versions"][0]["id"]
    assert bs.version(version_id)["item_count"] > 0
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text(nb_demo.naturalbench_predictions(8, accuracy=0.7, seed=1))
    researcher = client_for("researcher")
    run_job = researcher.import_run(version_id, model="tiny-vlm", path=predictions)
    researcher.wait_for_job(run_job, timeout=60, poll=0.2, progress=False)
    (row,) = researcher.leaderboard(version_id)
    assert row["model"] == "tiny-vlm"
    numeric = {k: v for k, v in row.items() if k not in ("run", "model", "label")}
    assert numeric and all(v is None or isinstance(v, float | int) for v in numeric.values())


# --------------------------------------------------------------------------------------------
# Webhooks: a receiver hears the queue finish, signed
# --------------------------------------------------------------------------------------------
def test_a_receiver_hears_the_queue_finish(site, client_for, settings):
    import hashlib
    import hmac

    settings.BLINDSPOT_WEBHOOK_ALLOW_PRIVATE = True
    receiver = Receiver()
    try:
        bs = client_for("curator")
        hook = bs.create_webhook(
            project=site.project.pk, url=receiver.url, events=["queue.finished"]
        )
        queue = bs.create_queue(project=site.project.pk, kind="vqa_choice", title="Hooked")
        bs.upload_tasks(queue.id, [vqa(i) for i in range(2)], progress=False)
        annotate_all(client_for("worker1"), queue.id)
        assert receiver.received == []
        annotate_all(client_for("worker2"), queue.id)
        (got,) = receiver.received
        body = json.loads(got.body)
        assert body["event"] == "queue.finished" and body["data"]["queue"] == queue.id
        ts = got.headers["Blindspot-Timestamp"].encode()
        mac = hmac.new(hook["secret"].encode(), ts + b"." + got.body, hashlib.sha256)
        assert got.headers["Blindspot-Signature"] == "sha256=" + mac.hexdigest()
        (delivery,) = list(bs.webhook_deliveries(hook["id"]))
        assert (delivery["status"], delivery["response_code"]) == ("succeeded", 200)
    finally:
        receiver.close()


# --------------------------------------------------------------------------------------------
# Recipes: a pipeline's stage, an export downloaded and checked
# --------------------------------------------------------------------------------------------
def test_recipe_stage_export_and_download(site, client_for, settings, tmp_path):
    import io

    from django.contrib.auth import get_user_model
    from PIL import Image as PILImage

    from curation import assets
    from curation.recipes.vhexpansion import case_sources

    settings.MEDIA_ROOT = tmp_path / "media"
    settings.BLINDSPOT_PROTECTED_MEDIA_REDIRECT = ""
    curator = get_user_model().objects.get(username="c-curator")
    triples = []
    for colour in ("red", "blue", "green"):
        buf = io.BytesIO()
        PILImage.new("RGB", (40, 30), colour).save(buf, "PNG")
        image, _ = assets.image_ingest(data=buf.getvalue(), name=f"{colour}.png")
        question = f"Is the cube {colour}?"
        triples.append(case_sources.Triple(image=image, question=question, answer="yes"))
    case_set = case_sources.case_set_from_triples(
        project=site.project, name="Cubes", triples=triples, created_by=curator
    )
    bs = client_for("curator")
    vhx = next(r for r in bs.recipes() if r["key"] == "vhexpansion")
    assert "negate" in [s["name"] for s in vhx["stages"]]
    (pipeline,) = bs.pipelines("vhexpansion")
    assert pipeline["id"] == case_set.pk and pipeline["name"] == "Cubes"
    job = bs.start_stage("vhexpansion", case_set.pk, "negate")
    assert bs.wait_for_job(job.id, timeout=60, poll=0.2, progress=False).status == "succeeded"
    # people accept the drafted negations in the set's review queue, through the API
    (review,) = [q for q in bs.queues(project=site.project.pk) if q.kind == "review"]
    # (an accept ticks every criterion of the checklist: the kind refuses one that does not)
    ticked = list(range(len(TaskQueue.objects.get(pk=review.id).config.get("criteria", []))))
    accept = {"verdict": "accept", "checked": ticked}
    for worker in ("worker1", "worker2", "worker3"):  # three reviewers per negation
        annotate_all(client_for(worker), review.id, respond=lambda task: accept)
    assert bs.wait_for_queue(review.id, timeout=30, poll=0.2, progress=False)
    with pytest.raises(NotFound):
        bs.start_stage("vhexpansion", case_set.pk, "no-such-stage")
    with pytest.raises(InvalidRequest, match="Unknown export format"):
        bs.start_export("vhexpansion", case_set.pk, "vhexpansion.export", fmt="pdf")
    export = bs.start_export("vhexpansion", case_set.pk, "vhexpansion.export", fmt="jsonl")
    done = bs.wait_for_job(export.id, timeout=60, poll=0.2, progress=False)
    # a researcher of the project downloads it; the checksum is the job's
    saved = client_for("researcher").download_export(
        "vhexpansion", case_set.pk, export.id, tmp_path, progress=False
    )
    assert saved.name == done.result["filename"]
    assert hashlib.sha256(saved.read_bytes()).hexdigest() == done.result["sha256"]
    with zipfile.ZipFile(saved) as archive:  # the export's zip: images and the JSONL
        assert any(name.endswith(".jsonl") for name in archive.namelist())
    # a file changed in storage is refused and not kept
    stored = settings.MEDIA_ROOT / done.result["path"]
    stored.write_bytes(stored.read_bytes() + b"tampered")
    target = tmp_path / "again.jsonl"
    with pytest.raises(ChecksumMismatch):
        bs.download_export("vhexpansion", case_set.pk, export.id, target, progress=False)
    assert not target.exists()
    with pytest.raises(NotFound):
        client_for("outsider").download_export(
            "vhexpansion", case_set.pk, export.id, tmp_path / "x", progress=False
        )
