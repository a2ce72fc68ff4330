"""The gateway's chat call (``calls.chat_create``: the client's ``post`` on the chat route) sends
what ``client.chat.completions.create`` sends, for every shape of request the gateway makes:
the body is one ``create``'s parameter transform leaves unchanged, its bytes are the client's
own serialisation's, and on the wire the route, the body, the bearer key and the answer read
back are the same as ``create``'s."""

from __future__ import annotations

import itertools
import json

import openai
import pytest
from openai._utils import maybe_transform
from openai._utils._json import openapi_dumps
from openai.types.chat import ChatCompletion, completion_create_params

from curation.gateway import calls
from curation.gateway.call_types import CallRequest, Endpoint
from curation.gateway.kept import Kept
from curation.gateway.rendering import build_messages
from tests.fake_openai import FakeOpenAI, reply

IMAGE = "data:image/jpeg;base64," + "QUJD" * 2048  # long enough for its JSON text to be kept
SMALL = "data:image/png;base64,QUJD"


def _requests() -> list[CallRequest]:
    """Each shape the gateway sends: with and without a system prompt, no image, one or two
    images (short and long data URLs), with and without a seed, with and without
    log-probabilities."""
    out = []
    images = ([], [IMAGE], [IMAGE, IMAGE], [SMALL, IMAGE])
    shapes = itertools.product(("", "You judge."), images, (None, 7))
    for (system, urls, seed), logprobs in itertools.product(shapes, (False, True)):
        endpoint = Endpoint(
            kind="openai", name="t", base_url="", api_key="sk-x", model="m", temperature=0.2
        )
        out.append(
            CallRequest(
                endpoint=endpoint,
                template_name="t",
                messages=build_messages(system=system, user="Is it blue?", image_urls=urls),
                variables={},
                seed=seed,
                logprobs=logprobs,
            )
        )
    return out


@pytest.mark.parametrize("request_", _requests(), ids=lambda r: str(len(r.messages)))
def test_the_clients_transform_leaves_every_gateway_body_unchanged(request_):
    body = calls._create_kwargs(request_)
    wanted = completion_create_params.CompletionCreateParamsNonStreaming
    assert maybe_transform(body, wanted) == body


@pytest.mark.parametrize("request_", _requests(), ids=lambda r: str(len(r.messages)))
def test_the_body_is_the_clients_bytes(request_):
    body = calls._create_kwargs(request_)
    assert calls.chat_body(body) == openapi_dumps(body)
    assert calls.chat_body(body) == openapi_dumps(body)  # again, the URLs' JSON text kept


def test_a_kept_url_is_written_as_json_whatever_it_holds():
    # An image URL with characters JSON escapes, and a question holding a token's look-alike
    odd = 'https://example.org/a"b\\c\n' + "é" * 5000
    body = {
        "model": "m",
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": '"blindspot-image-0-0123456789abcdef"'},
                    {"type": "image_url", "image_url": {"url": odd, "detail": "low"}},
                    {"type": "image_url", "image_url": {"url": IMAGE}},
                ],
            }
        ],
    }
    assert calls.chat_body(body) == openapi_dumps(body)
    assert json.loads(calls.chat_body(body)) == body


def test_chat_create_sends_what_create_sends_and_reads_the_same_answer():
    server = FakeOpenAI(keep_alive=True)
    server.default = reply("Yes.", prompt_tokens=11, completion_tokens=2)
    client = openai.OpenAI(base_url=server.base_url, api_key="sk-secret", max_retries=0)
    try:
        for request_ in _requests():
            body = calls._create_kwargs(request_)
            by_create = client.chat.completions.create(**body)
            by_post = calls.chat_create(client, body)
            sent_create, sent_post = server.chat_requests[-2:]
            assert sent_post["path"] == sent_create["path"] == "/v1/chat/completions"
            assert sent_post["body"] == sent_create["body"] == body
            for header in ("authorization", "content-type"):
                assert sent_post["headers"][header] == sent_create["headers"][header]
            assert sent_post["headers"]["authorization"] == "Bearer sk-secret"
            assert isinstance(by_post, ChatCompletion)
            assert by_post.choices[0].message.content == "Yes."
            assert by_post.usage.prompt_tokens == by_create.usage.prompt_tokens == 11
            assert by_post.model == by_create.model
    finally:
        client.close()
        server.close()


def test_chat_create_raises_the_clients_errors():
    server = FakeOpenAI()
    client = openai.OpenAI(base_url=server.base_url, api_key="sk-secret", max_retries=0)
    try:
        # Nothing scripted: the fake answers 400, which the client raises as it would for create
        with pytest.raises(openai.BadRequestError):
            calls.chat_create(client, {"model": "m", "messages": []})
    finally:
        client.close()
        server.close()


def test_kept_url_texts_stay_within_their_budget_oldest_out_first(monkeypatch):
    urls = [f"data:image/png;base64,{k}" + "QUJD" * 2048 for k in range(5)]
    one = len(openapi_dumps(urls[0]))
    monkeypatch.setattr(calls, "_url_jsons", Kept(4 * one + 10, weight=len))  # room for four
    for k in (1, 2, 3, 0, 4):  # urls[1] the oldest when urls[4] comes
        assert calls._url_json(urls[k]) == openapi_dumps(urls[k])
    assert calls._url_jsons.keys() == [urls[k] for k in (2, 3, 0, 4)]
    assert calls._url_jsons.weight == 4 * one
    # A text longer than a quarter of the budget is made, not kept
    assert calls._url_json(urls[0] * 3) == openapi_dumps(urls[0] * 3)
    assert len(calls._url_jsons) == 4
