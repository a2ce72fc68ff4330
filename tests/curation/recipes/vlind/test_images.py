"""Counterfactual and factual images: uploads (refused ones store nothing), the image review's
2-of-3 rule, the best image, a context with no good image leaving the set, and generation
through an OpenAI-compatible ``images.generate`` endpoint (a small fake one in this file)."""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from annotator.models import Task
from annotator.platform.errors import Invalid
from curation.models import Generation, Image, LLMProvider
from curation.recipes.framework import stages
from curation.recipes.framework.registry import recipe_of
from curation.recipes.vlind import benches, export, generation, images, selectors
from curation.recipes.vlind.models import VLindImage
from tests.curation.recipes.vlind import helpers
from tests.curation.recipes.vlind.helpers import (
    draft_offline,
    kept,
    png_bytes,
    review_images,
    review_triples,
    reviewers,
    upload,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def one_kept(bench):
    draft_offline(bench, names=("color",), count=2)
    review_triples(bench, reviewers(), {1: 3, 2: 0})
    return kept(bench)[0]


def _stored() -> tuple[int, int]:
    return Image.objects.count(), VLindImage.objects.count()


def _files(root) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_upload_fills_the_styles_slots_and_sends_each_image_to_review(one_kept):
    # when two photorealistic and one cartoon image are uploaded
    rows = images.images_upload(
        triple=one_kept, style="photorealistic", files=[upload(1), upload(2)]
    )
    rows += images.images_upload(triple=one_kept, style="cartoon", files=[upload(3)])
    # then they take image ids 0, 1 and 8 (the published layout), style recorded per image
    assert [(r.slot, r.style, r.origin, r.status) for r in rows] == [
        (0, "photorealistic", "upload", "review"),
        (1, "photorealistic", "upload", "review"),
        (8, "cartoon", "upload", "review"),
    ]
    queue = one_kept.bench.image_queue
    assert (queue.kind, queue.redundancy, queue.outcome_handler) == (
        "review",
        3,
        "vlind.image_review",
    )
    assert len(queue.config["criteria"]) == 4
    task = Task.objects.get(pk=rows[2].task_id)
    assert task.payload["images"][0]["url"] == rows[2].image.file.url
    assert task.payload["fields"]["Context"] == one_kept.context
    assert Image.objects.get(pk=rows[0].image_id).thumbnail  # made for the pages


@pytest.mark.parametrize(
    ("files", "message", "errors"),
    [
        (
            [("ok.png", "png"), ("notes.txt", b"hello")],
            "Some files were refused; nothing was stored.",
            [{"line": 2, "error": "notes.txt: “.txt” files are not accepted"}],
        ),
        (
            [("ok.png", "png"), ("broken.png", b"\x89PNG\r\n\x1a\n" + b"\0" * 40)],
            "Some files were refused; nothing was stored.",
            [{"line": 2, "error": "broken.png"}],
        ),
        (
            [("a.png", "png"), ("b.png", "png")],
            "Some files were refused; nothing was stored.",
            [{"line": 2, "error": "b.png: the same picture as a.png"}],
        ),
        (
            [("empty.png", b"")],
            "Some files were refused; nothing was stored.",
            [{"line": 1, "error": "empty.png: the file is empty (0 bytes)"}],
        ),
    ],
)
def test_bad_uploads_are_refused_with_the_reason_and_nothing_is_stored(
    one_kept, media, files, message, errors
):
    # given a kept triple and no stored image yet
    before, blobs = _stored(), _files(media) if media.exists() else []
    sent = [
        images.Upload(name=name, data=png_bytes(7) if data == "png" else data)
        for name, data in files
    ]
    # when the batch holds a bad file
    with pytest.raises(Invalid) as exc:
        images.images_upload(triple=one_kept, style="illustration", files=sent)
    # then the message names the file and why; no image row, no blob, no task
    assert exc.value.message == message
    assert len(exc.value.errors) == len(errors)
    for got, want in zip(exc.value.errors, errors, strict=True):
        assert got["line"] == want["line"] and got["error"].startswith(want["error"])
    assert _stored() == before
    assert (_files(media) if media.exists() else []) == blobs
    assert Task.objects.filter(queue__outcome_handler="vlind.image_review").count() == 0


def test_more_files_than_free_slots_are_refused(one_kept):
    images.images_upload(triple=one_kept, style="cartoon", files=[upload(1), upload(2)])
    with pytest.raises(Invalid) as exc:
        images.images_upload(
            triple=one_kept, style="cartoon", files=[upload(3), upload(4), upload(5)]
        )
    assert exc.value.message == (
        "The cartoon style has 2 free slots of 4; 3 files were sent. Nothing was stored."
    )
    assert VLindImage.objects.count() == 2
    # the same picture again for this triple is refused too
    with pytest.raises(Invalid) as exc:
        images.images_upload(triple=one_kept, style="illustration", files=[upload(1)])
    assert exc.value.errors[0]["error"] == "img1.png: already image 8 of this triple"


def test_a_triple_not_kept_gets_no_images(bench):
    draft_offline(bench, names=("color",), count=1)
    triple = bench.triples.get()
    triple.bench = bench
    with pytest.raises(Invalid) as exc:
        images.images_upload(triple=triple, style="cartoon", files=[upload(1)])
    assert exc.value.message == "Only a kept triple gets images: this one is in review."
    assert Image.objects.count() == 0


def test_images_are_good_with_two_of_three_and_the_best_defaults_to_most_accepts(one_kept):
    rows = images.images_upload(
        triple=one_kept, style="photorealistic", files=[upload(k) for k in range(4)]
    )
    # when reviewed with 2, 3, 1 and 0 accepts
    review_images(
        one_kept.bench, reviewers(), dict(zip([r.pk for r in rows], [2, 3, 1, 0], strict=True))
    )
    got = {i.slot: (i.status, i.accepts) for i in VLindImage.objects.all()}
    # then images 0 and 1 are good; the best is the one with most accepts (image 1)
    assert got == {0: ("good", 2), 1: ("good", 3), 2: ("bad", 1), 3: ("bad", 0)}
    one_kept.refresh_from_db()
    shown = list(one_kept.images.all())
    assert images.best_of(one_kept, shown).slot == 1
    # when the curator picks image 0 it is the best; a rejected image cannot be picked
    images.best_image_pick(triple=one_kept, image_id=rows[0].pk)
    assert images.best_of(one_kept, shown).slot == 0
    with pytest.raises(Invalid, match="Only a good image"):
        images.best_image_pick(triple=one_kept, image_id=rows[2].pk)


def test_a_context_with_no_good_image_leaves_the_set(bench):
    # given two kept triples, each fully prepared, whose images are reviewed
    draft_offline(bench, names=("color",), count=2)
    review_triples(bench, reviewers(), {})
    first, second = kept(bench)
    people = reviewers()
    helpers.assemble(bench, first, seed=1, accepts=(3, 1, 2), people=people)
    helpers.assemble(bench, second, seed=2, accepts=(1, 0, 1), people=people)
    # then only the first is an instance; the second is "no good image"
    assert [i.triple.pk for i in export.instances(bench)] == [first.pk]
    funnel = selectors.funnel(bench)
    assert funnel["stages"]["no_good_image"] == 1 and funnel["assembled"] == 1
    assert funnel["image_status"] == {"review": 0, "good": 2, "bad": 4}
    rows = export.rows_of(bench)
    assert [r.data["context_id"] for r in rows] == [1]
    assert rows[0].data["aggregated_human_label_good_images"] == {"0": 3, "4": 1, "8": 2}


def test_factual_upload_and_context(one_kept):
    images.factual_upload(
        triple=one_kept, upload=upload(5, "fact.png"), factual_context="  Bananas are  yellow. "
    )
    one_kept.refresh_from_db()
    assert one_kept.factual_context == "Bananas are yellow."
    assert one_kept.factual_image.original_name == "fact.png"
    with pytest.raises(Invalid) as exc:
        images.factual_upload(triple=one_kept, upload=images.Upload("f.gif", b"GIF89a"))
    assert exc.value.errors[0]["error"].startswith("f.gif: ")
    one_kept.refresh_from_db()
    assert one_kept.factual_image.original_name == "fact.png"


# --------------------------------------------------------------------------------------------
# generation through an OpenAI-compatible image endpoint
# --------------------------------------------------------------------------------------------
class FakeImages:
    """POST /v1/images/generations: answers from a script ("ok" or an HTTP status), records
    each request's JSON body."""

    def __init__(self):
        self.script: list = []
        self.requests: list[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                return

            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append({"path": self.path, "body": body})
                what = fake.script.pop(0) if fake.script else 500
                if what == "ok":
                    n = len(fake.requests)
                    payload = {
                        "created": 0,
                        "data": [
                            {
                                "b64_json": base64.b64encode(png_bytes(100 + n)).decode(),
                                "revised_prompt": f"revised {n}",
                            }
                        ],
                    }
                    code = 200
                else:
                    payload, code = {"error": {"message": "no", "type": "fake"}}, what
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_images():
    fake = FakeImages()
    yield fake
    fake.close()


def test_without_an_endpoint_the_page_and_the_service_say_what_to_configure(one_kept):
    _endpoint, _model, problem = generation.image_endpoint(one_kept.bench)
    assert problem.startswith("No image endpoint is configured: choose an OpenAI-compatible")
    with pytest.raises(Invalid, match="No image endpoint is configured"):
        stages.stage_start(recipe_of("vlind"), "images", one_kept.bench)


def test_generation_fills_three_styles_records_generations_and_the_factual_image(
    one_kept, fake_images
):
    # given an image endpoint and one image per style
    bench = one_kept.bench
    provider = LLMProvider.objects.create(
        name="images", base_url=fake_images.base_url, api_key="sk-x", model="x", max_retries=0
    )
    benches.bench_settings(
        bench=bench, images_per_style=1, image_provider=provider, image_model="dall-e-3"
    )
    fake_images.script = ["ok", "ok", 400, "ok"]
    # when images are generated
    result = generation.images_generate(bench=bench)
    # then slots 0 and 4 are filled, the cartoon call failed (recorded), the factual image made
    assert result["images"] == 2 and result["factual"] == 1 and result["failed"] == 1
    rows = list(VLindImage.objects.order_by("slot"))
    assert [(r.slot, r.style, r.origin) for r in rows] == [
        (0, "photorealistic", "generated"),
        (4, "illustration", "generated"),
    ]
    assert [r["body"]["prompt"] for r in fake_images.requests] == [
        f"{one_kept.context} The image is in a photorealistic style.",
        f"{one_kept.context} The image is in a illustration style.",
        f"{one_kept.context} The image is in a cartoon style.",
        f"{one_kept.false_statement} The image is in a photorealistic style.",
    ]
    assert {r["body"]["response_format"] for r in fake_images.requests} == {"b64_json"}
    assert {r["body"]["model"] for r in fake_images.requests} == {"dall-e-3"}
    gens = list(Generation.objects.filter(purpose="vlind.image").order_by("id"))
    assert [g.status for g in gens] == ["ok", "ok", "failed", "ok"]
    assert gens[0].output["revised_prompt"] == "revised 1"
    assert rows[0].generation == gens[0] and rows[0].image.generation == gens[0]
    assert "400" in gens[2].error
    one_kept.refresh_from_db()
    assert one_kept.factual_image.sha256 == gens[3].output["image_sha256"]
    # and a re-run fills only the empty slot
    fake_images.script = ["ok"]
    assert generation.images_generate(bench=bench)["images"] == 1
    assert VLindImage.objects.get(slot=8).origin == "generated"


def test_generation_stops_after_three_failures_in_a_row(one_kept, fake_images):
    bench = one_kept.bench
    provider = LLMProvider.objects.create(
        name="images", base_url=fake_images.base_url, model="x", max_retries=0
    )
    benches.bench_settings(bench=bench, image_provider=provider, image_model="m")
    result = generation.images_generate(bench=bench)  # the fake answers 500 to everything
    assert (result["images"], result["failed"]) == (0, 3)
    assert result["errors"][-1] == "Stopped after 3 failed calls in a row."
    assert len(fake_images.requests) == 3
