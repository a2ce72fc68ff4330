"""Hostile text at the edge (issue 13, item 5): NUL characters and lone surrogates anywhere a
request carries text answer 400 naming the field, never a 500, and write nothing.

Run on PostgreSQL: it is the database that refuses NUL in text and jsonb. The test client and
APIClient re-raise unhandled exceptions, so a 500 would fail these tests loudly.
"""

from __future__ import annotations

import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.handlers.exception import convert_exception_to_response
from django.http import HttpResponse
from django.test import RequestFactory
from django.urls import reverse
from rest_framework.test import APIClient

from annotator import services
from annotator.models import Annotation, Assignment, Task
from annotator.platform import edge
from annotator.platform.models import Job
from curation.models import Corpus
from tests.annotator.helpers import session_api as api
from tests.factories import QueueFactory, TaskFactory, vqa_payload

SURROGATE = edge.SURROGATE
NUL = edge.NUL


def written() -> tuple[int, int, int, int, int]:
    return (
        Task.objects.count(),
        Assignment.objects.filter(state=Assignment.State.SUBMITTED).count(),
        Annotation.objects.count(),
        Job.objects.count(),
        Corpus.objects.count(),
    )


def vqa_line(question: str) -> str:
    """A JSON line whose question holds ``question`` verbatim (escapes stay escapes)."""
    good = json.dumps(vqa_payload(1))
    return good.replace('"Is the cube red? (1)"', f'"{question}"')


# --------------------------------------------------------------------------------------------
# the check itself
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, problem",
    [
        ("plain text, 中文, हिन्दी, 😀", None),
        ("a\x00b", NUL),
        ("a\ud800b", SURROGATE),
        ("\udfff", SURROGATE),
        ("", None),
    ],
)
def test_text_problem(text, problem):
    assert edge.text_problem(text) == problem


def test_find_bad_text_names_the_json_path_in_document_order():
    body = {"response": {"text": "ok", "notes": ["fine", "bad\x00", "\ud800"]}, "z": "\ud800"}

    assert edge.find_bad_text(body) == ("response.notes.1", NUL)
    assert edge.find_bad_text([{"a": 1}, {"b\x00c": "x"}]) == ("1.b\\u0000c", f"its name {NUL}")
    assert edge.find_bad_text({"ok": [1, 2.5, None, True, "fine"]}) is None


def test_find_bad_text_survives_deep_nesting():
    deep: list = ["\x00"]
    for _ in range(5000):
        deep = [deep]

    assert edge.find_bad_text(deep) == (".".join(["0"] * 5001), NUL)


def test_row_problem_and_line_problem_messages():
    assert edge.row_problem({"file": "a.png", "caption": "x\x00"}) == (f"field “caption”: {NUL}")
    assert edge.row_problem({"captions": [{"text": "\udc80"}]}) == (
        f"field “captions.0.text”: {SURROGATE}"
    )
    assert edge.row_problem({"file": "a.png"}) is None
    assert edge.line_problem("x" * 2049, 7, limit=2048) == "line 7 is longer than 2 KB"
    assert edge.line_problem("é" * 1024, 7, limit=2048) is None  # 2048 bytes: at the limit
    assert edge.line_problem("é" * 1025, 7, limit=2048) == "line 7 is longer than 2 KB"
    assert edge.size_text(4 * 1024**2) == "4 MB"


def test_decode_utf8_names_the_first_bad_byte():
    with pytest.raises(edge.NotUtf8) as caught:
        edge.decode_utf8(b'{"a": 1}\n{"b": "caf\xe9"}\n')

    assert str(caught.value) == (
        "line 2: byte 0xE9 at column 11 is not UTF-8 (Latin-1 or Windows-1252 text?)"
    )
    assert edge.decode_utf8("\ufeffcafé".encode()) == "café"


# --------------------------------------------------------------------------------------------
# the API: JSON bodies (the parser), JSON Lines bodies (the row check), query strings
# --------------------------------------------------------------------------------------------
TASKS = "/api/queues/{queue}/tasks/"


@pytest.mark.parametrize(
    "body, content_type, errors",
    [
        pytest.param(
            "[" + vqa_line("\\ud800") + "]",
            "application/json",
            [{"field": "0.question", "error": SURROGATE}],
            id="json-list-lone-surrogate",
        ),
        pytest.param(
            '[{"payload": ' + vqa_line("ok") + ', "id": "a\\u0000b"}]',
            "application/json",
            [{"field": "0.id", "error": NUL}],
            id="json-list-nul-in-id",
        ),
        pytest.param(
            '[{"bad\\u0000key": 1}]',
            "application/json",
            [{"field": "0.bad\\u0000key", "error": f"its name {NUL}"}],
            id="json-list-nul-in-a-key",
        ),
        pytest.param(
            vqa_line("fine") + "\n" + vqa_line("Is it\\udc80?"),
            "application/x-ndjson",
            [{"line": 2, "error": f"field “question”: {SURROGATE}"}],
            id="jsonl-lone-surrogate",
        ),
        pytest.param(
            vqa_line("Is it\\u0000red?") + "\n" + vqa_line("fine"),
            "application/jsonl",
            [{"line": 1, "error": f"field “question”: {NUL}"}],
            id="jsonl-nul",
        ),
    ],
)
def test_api_task_upload_refuses_hostile_text(queue, curator, body, content_type, errors):
    before = written()

    response = api(curator).post(
        TASKS.format(queue=queue.pk), body.encode(), content_type=content_type
    )

    assert response.status_code == 400, response.content
    assert response.json()["errors"] == errors
    assert "Error:" not in response.json()["message"]  # no raw exception text
    assert written() == before


def test_api_task_upload_refuses_an_over_long_line(queue, curator, settings):
    settings.BLINDSPOT_MAX_LINE_BYTES = 1024
    body = vqa_line("fine") + "\n" + vqa_line("x" * 2000)

    response = api(curator).post(
        TASKS.format(queue=queue.pk), body.encode(), content_type="application/x-ndjson"
    )

    assert response.status_code == 400
    assert response.json()["errors"] == [{"line": 2, "error": "line 2 is longer than 1 KB"}]
    assert Task.objects.count() == 0


def test_api_task_upload_still_takes_good_unicode(queue, curator):
    body = vqa_line("Is the cube red? 立方体是红色的吗? 😀") + "\n" + vqa_line("\\ud83d\\ude00")

    response = api(curator).post(
        TASKS.format(queue=queue.pk), body.encode(), content_type="application/x-ndjson"
    )

    assert response.status_code == 201, response.content
    questions = sorted(t.payload["question"] for t in Task.objects.all())
    assert questions == ["Is the cube red? 立方体是红色的吗? 😀", "😀"]


@pytest.mark.parametrize(
    "text, problem", [("\\ud800", SURROGATE), ("a\\u0000b", NUL)], ids=["surrogate", "nul"]
)
def test_write_text_submit_refuses_hostile_text(project, crowdworker, text, problem):
    queue = QueueFactory(project=project, kind="write_text")
    task = TaskFactory(queue=queue, payload={"prompt": "Describe the picture"})
    services.assignment_claim(queue=queue, annotator=crowdworker)
    before = written()

    response = api(crowdworker).post(
        f"/api/tasks/{task.pk}/submit/",
        ('{"response": {"text": "' + text + '"}}').encode(),
        content_type="application/json",
    )

    assert response.status_code == 400
    assert response.json() == {
        "message": f"Invalid input: response.text: {problem}",
        "errors": [{"field": "response.text", "error": problem}],
    }
    assert written() == before
    assert Assignment.objects.get(task=task).state == Assignment.State.LEASED


def test_api_query_string_with_nul_is_400_json(curator):
    response = api(curator).get("/api/queues/?search=%00")

    assert response.status_code == 400
    assert response.json() == {
        "message": f"Query parameter “search”: {NUL}; nothing was changed.",
        "errors": [{"field": "search", "error": NUL}],
    }


# --------------------------------------------------------------------------------------------
# HTML pages: query strings, form fields, the path, uploaded task files, cookies
# --------------------------------------------------------------------------------------------
@pytest.fixture
def corpus(project):
    return Corpus.objects.create(project=project, name="Shapes", slug="shapes")


@pytest.mark.parametrize("query", ["q=%00", "lang=%00", "q=red&lang=en%00"])
def test_corpus_page_query_with_nul_is_400(client, curator, corpus, query):
    client.force_login(curator)

    response = client.get(f"{reverse('curator-corpus', args=[corpus.pk])}?{query}")

    assert response.status_code == 400
    name = query.rsplit("&", 1)[-1].split("=")[0]
    assert f"Query parameter “{name}”: {NUL}; nothing was changed." in response.content.decode()
    assert response.templates[0].name == "edge_error.html"


def test_nul_in_a_form_field_is_400_and_writes_nothing(client, curator, queue):
    client.force_login(curator)
    before = written()

    response = client.post(
        reverse("curator-queue-upload", args=[queue.pk]), {"text": vqa_line("a\x00b")}
    )

    assert response.status_code == 400
    assert f"Form field “text”: {NUL}; nothing was changed." in response.content.decode()
    assert written() == before


@pytest.mark.parametrize(
    "content, line, error",
    [
        pytest.param(
            (vqa_line("ok") + "\n" + vqa_line("a\\u0000b")).encode(),
            2,
            f"field “question”: {NUL}",
            id="nul-escape",
        ),
        pytest.param(
            (vqa_line("ok") + "\n" + vqa_line("a\x00b")).encode(),
            2,
            "not valid JSON: Invalid control character at (column 59)",
            id="raw-nul-byte",
        ),
        pytest.param(
            (vqa_line("\\udbff") + "\n").encode(),
            1,
            f"field “question”: {SURROGATE}",
            id="lone-surrogate",
        ),
    ],
)
def test_task_upload_form_lists_hostile_lines(client, curator, queue, content, line, error):
    client.force_login(curator)
    before = written()

    response = client.post(
        reverse("curator-queue-upload", args=[queue.pk]),
        {"file": SimpleUploadedFile("tasks.jsonl", content)},
    )

    assert response.status_code == 400
    assert response.context["error"].errors == [{"line": line, "error": error}]
    assert written() == before


def test_task_upload_form_names_the_first_byte_that_is_not_utf8(client, curator, queue):
    client.force_login(curator)
    content = (vqa_line("ok") + "\n" + vqa_line("caf\xe9")).encode("latin-1")

    response = client.post(
        reverse("curator-queue-upload", args=[queue.pk]),
        {"file": SimpleUploadedFile("tasks.jsonl", content)},
    )

    assert response.status_code == 400
    assert response.context["error"].message == (
        "The file is not UTF-8 text (line 2: byte 0xE9 at column 61 is not UTF-8 (Latin-1 or "
        "Windows-1252 text?)); save it as UTF-8 and upload it again."
    )
    assert written() == (0, 0, 0, 0, 0)


def test_nul_in_the_path_is_400(client, curator):
    client.force_login(curator)

    # <str:fmt> takes any text: the check runs before the view looks anything up.
    response = client.get("/curate/vhexpansion/1/export/a%00b/")

    assert response.status_code == 400
    assert f"The address: {NUL}" in response.content.decode()


def test_a_session_cookie_with_nul_is_dropped_not_a_500(client):
    client.cookies["sessionid"] = "abcdefgh\x00ijklmnop"

    response = client.get(reverse("home"))

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


# --------------------------------------------------------------------------------------------
# a body without Content-Length is counted as it is read
# --------------------------------------------------------------------------------------------
def test_a_body_without_length_is_stopped_at_the_limit(settings, db):
    settings.BLINDSPOT_MAX_REQUEST_BYTES = 1000
    request = RequestFactory().post(
        "/api/queues/1/tasks/", data=b"", content_type="application/x-ndjson"
    )
    request.META.pop("CONTENT_LENGTH", None)
    request._stream = io.BytesIO(b"x" * 5000)  # a chunked body, as an ASGI server hands it on
    request.resolver_match = None

    def view(req):
        req.read()
        return HttpResponse("read it all")

    def inner(req):
        return middleware.process_view(req, view, (), {}) or view(req)

    middleware = edge.BodyLimitMiddleware(convert_exception_to_response(inner))
    response = middleware(request)

    assert response.status_code == 413
    assert json.loads(response.content)["message"].startswith(
        "The request is larger than 1000 bytes, the limit for this address"
    )


def test_a_header_with_nul_is_400(client, curator):
    client.force_login(curator)

    response = client.get(reverse("home"), HTTP_USER_AGENT="curl\x00/8")

    assert response.status_code == 400
    assert f"Header “User-Agent”: {NUL}; nothing was changed." in response.content.decode()


def test_an_api_token_with_nul_is_400_not_a_500(db):
    client = APIClient()

    response = client.get("/api/queues/", HTTP_AUTHORIZATION="Token abc\x00def")

    assert response.status_code == 400
    assert response.json()["errors"] == [{"field": "Authorization", "error": NUL}]
