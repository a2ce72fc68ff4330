"""The gateway through the real ``openai`` client against the fake server, one test per failure
mode; every Generation must carry its full provenance."""

from __future__ import annotations

import base64
import io
import json

import pytest
from PIL import Image as PILImage

from curation import gateway
from curation.gateway import calls
from curation.gateway.call_types import Backoff
from curation.models import Generation, LLMProvider
from tests.fake_openai import fake_provider, hang, malformed, reply, status

pytestmark = pytest.mark.django_db

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"enum": ["yes", "no"]}, "why": {"type": "string"}},
    "required": ["answer"],
}


@pytest.fixture
def template(db):
    return gateway.template_ensure(
        name="judge",
        system="You judge {thing}.",
        text="Is {thing} {quality}? Answer in JSON.",
        output_schema=SCHEMA,
        source="test",
    )


@pytest.fixture
def provider(fake_openai, project):
    return fake_provider(
        project, fake_openai, model="fake-model", temperature=0.2, max_tokens=64, max_retries=3
    )


@pytest.fixture
def delays(monkeypatch):
    """The backoff delays the gateway asked for, without waiting."""
    seen: list[float] = []
    monkeypatch.setattr(calls, "sleep", seen.append)
    return seen


def _call(project, **kwargs):
    defaults = {
        "template": "judge",
        "variables": {"thing": "the sky", "quality": "blue"},
        "project": project,
        "purpose": "test.judge",
        "seed": 7,
    }
    return gateway.generate(**{**defaults, **kwargs})


def assert_complete(gen: Generation) -> None:
    """Every provenance field of an OpenAI-path generation is filled."""
    assert gen.pk is not None
    assert gen.provider_id is not None and gen.provider_kind == "openai"
    assert gen.template_id is not None
    assert gen.template_name == gen.template.name
    assert gen.template_version == gen.template.version
    assert gen.template_sha256 == gen.template.sha256 and len(gen.template_sha256) == 64
    assert gen.purpose and gen.variables and gen.messages and gen.model
    assert {"temperature", "max_tokens", "timeout_s", "max_retries", "base_url"} <= set(gen.params)
    assert gen.seed is not None
    assert gen.raw_response
    assert gen.attempts >= 1 and len(gen.attempt_log) == gen.attempts
    assert gen.prompt_tokens is not None and gen.completion_tokens is not None
    assert gen.latency_ms >= 0 and gen.created_at is not None
    if gen.status == Generation.Status.OK:
        assert gen.output is not None and gen.error == ""
    else:
        assert gen.output is None and gen.error


def test_good_json_is_parsed_and_everything_is_recorded(fake_openai, template, provider, project):
    # given a server that answers with valid JSON
    fake_openai.script(reply({"answer": "yes", "why": "clear day"}, prompt_tokens=21))

    # when
    gen = _call(project)

    # then the output is parsed, and the request carried the rendered prompt and the params
    assert gen.status == "ok"
    assert gen.output == {"answer": "yes", "why": "clear day"}
    assert gen.attempts == 1
    assert (gen.prompt_tokens, gen.completion_tokens) == (21, 5)
    assert gen.messages == [
        {"role": "system", "content": "You judge the sky."},
        {"role": "user", "content": "Is the sky blue? Answer in JSON."},
    ]
    assert gen.params["temperature"] == 0.2 and gen.params["max_tokens"] == 64
    assert gen.model == "fake-model"
    assert gen.provider == provider and gen.template == template
    assert gen.attempt_log[0]["response_id"] == "chatcmpl-fake-1"
    sent = fake_openai.chat_requests[0]
    assert sent["body"]["messages"] == gen.messages
    assert sent["body"]["seed"] == 7 and sent["body"]["temperature"] == 0.2
    assert sent["body"]["max_tokens"] == 64
    assert "logprobs" not in sent["body"]
    assert sent["headers"]["authorization"] == "Bearer sk-test"
    assert_complete(gen)


def test_json_inside_a_fence_is_extracted(fake_openai, template, provider, project):
    fake_openai.script(reply('Here you go:\n```json\n{"answer": "no"}\n```\nAnything else?'))

    gen = _call(project)

    assert gen.status == "ok" and gen.output == {"answer": "no"}
    assert gen.raw_response.startswith("Here you go:")


def test_malformed_then_good_retries_with_backoff(fake_openai, template, provider, project, delays):
    # given one malformed answer, then a good one
    fake_openai.script(malformed("Sure! The sky is blue."), reply({"answer": "yes"}))

    gen = _call(project)

    # then it took two attempts, waited once, and both tries are logged
    assert gen.status == "ok" and gen.output == {"answer": "yes"}
    assert gen.attempts == 2
    assert [e["outcome"] for e in gen.attempt_log] == ["malformed", "ok"]
    assert gen.attempt_log[0]["raw_excerpt"] == "Sure! The sky is blue."
    assert delays == [0.001]
    # tokens are summed over both attempts
    assert (gen.prompt_tokens, gen.completion_tokens) == (20, 10)
    assert len(fake_openai.chat_requests) == 2
    assert_complete(gen)


def test_malformed_always_fails_with_raw_text_and_attempt_count(
    fake_openai, template, provider, project, delays
):
    # given a model that never answers in JSON (max_retries 3 → 4 attempts)
    fake_openai.script(*[malformed(f"no json {i}") for i in range(4)])

    gen = _call(project)

    # then the generation is failed, keeps the last raw text, and backed off exponentially
    assert gen.status == "failed"
    assert gen.attempts == 4
    assert gen.raw_response == "no json 3"
    assert gen.output is None
    assert gen.error.startswith("Failed after 4 attempts (malformed, malformed, malformed, ")
    assert "No JSON found" in gen.error
    assert delays == [0.001, 0.002, 0.004]
    assert len(fake_openai.chat_requests) == 4
    assert_complete(gen)


def test_schema_invalid_output_is_retried_then_accepted(
    fake_openai, template, provider, project, delays
):
    fake_openai.script(reply({"answer": "maybe"}), reply({"answer": "no"}))

    gen = _call(project)

    assert gen.status == "ok" and gen.output == {"answer": "no"}
    assert gen.attempt_log[0]["outcome"] == "schema"
    assert gen.attempt_log[0]["error"] == (
        "Output does not match the schema at answer: 'maybe' is not one of ['yes', 'no']"
    )


def test_rate_limit_honours_retry_after(fake_openai, template, provider, project, delays, settings):
    # given a 429 asking for 2 s, with the cap above that
    settings.BLINDSPOT_LLM_RETRY_AFTER_MAX_S = 5.0
    fake_openai.script(status(429, headers={"Retry-After": "2"}), reply({"answer": "yes"}))

    gen = _call(project)

    assert gen.status == "ok"
    assert [e["outcome"] for e in gen.attempt_log] == ["rate_limited", "ok"]
    assert gen.attempt_log[0]["retry_after_s"] == 2.0
    assert delays == [2.0]


def test_retry_after_is_capped(fake_openai, template, provider, project, delays, settings):
    settings.BLINDSPOT_LLM_RETRY_AFTER_MAX_S = 1.5
    fake_openai.script(status(429, headers={"Retry-After": "120"}), reply({"answer": "yes"}))

    gen = _call(project)

    assert gen.status == "ok" and delays == [1.5]


def test_timeout_then_success(fake_openai, template, provider, project, delays):
    # given a client timeout of 0.3 s and a server that hangs once
    provider.timeout_s = 0.3
    provider.save()
    fake_openai.script(hang(3), reply({"answer": "no"}))

    gen = _call(project)

    assert gen.status == "ok" and gen.output == {"answer": "no"}
    assert [e["outcome"] for e in gen.attempt_log] == ["timeout", "ok"]
    assert gen.attempt_log[0]["latency_ms"] >= 300


def test_timeout_always_fails(fake_openai, template, provider, project, delays):
    provider.timeout_s = 0.2
    provider.max_retries = 1
    provider.save()
    fake_openai.script(hang(3), hang(3))

    gen = _call(project)

    assert gen.status == "failed"
    assert gen.attempts == 2
    assert gen.error.startswith("Failed after 2 attempts (timeout, timeout): APITimeoutError")
    assert gen.raw_response == ""


def test_server_errors_back_off_then_succeed(fake_openai, template, provider, project, delays):
    fake_openai.script(status(500), status(503), reply({"answer": "yes"}))

    gen = _call(project)

    assert gen.status == "ok"
    assert [e["outcome"] for e in gen.attempt_log] == ["http_500", "http_503", "ok"]
    assert delays == [0.001, 0.002]


def test_server_error_every_time_fails(fake_openai, template, provider, project, delays):
    fake_openai.script(*[status(500)] * 4)

    gen = _call(project)

    assert gen.status == "failed" and gen.attempts == 4
    assert "InternalServerError" in gen.error


def test_client_errors_are_not_retried(fake_openai, template, provider, project, delays):
    fake_openai.script(status(401, {"error": {"message": "bad key", "type": "auth"}}))

    gen = _call(project)

    assert gen.status == "failed" and gen.attempts == 1 and delays == []
    assert [e["outcome"] for e in gen.attempt_log] == ["http_401"]
    assert "bad key" in gen.error


def test_connection_refused_is_recorded_not_raised(template, project, delays):
    # given a provider pointing at a closed port
    provider = LLMProvider.objects.create(
        name="down", base_url="http://127.0.0.1:9/v1", model="m", max_retries=1, timeout_s=1
    )

    gen = _call(project, provider=provider)

    assert gen.status == "failed" and gen.attempts == 2
    assert [e["outcome"] for e in gen.attempt_log] == ["connection_error", "connection_error"]


def test_logprobs_are_requested_and_stored(fake_openai, template, provider, project):
    fake_openai.script(
        reply(
            '{"answer": "yes"}',
            logprobs=[("yes", -0.05, [("yes", -0.05), ("no", -3.2)])],
        )
    )

    gen = _call(project, logprobs=True)

    body = fake_openai.chat_requests[0]["body"]
    assert body["logprobs"] is True and body["top_logprobs"] == 5
    assert gen.params["logprobs"] is True and gen.params["top_logprobs"] == 5
    assert gen.logprobs == {
        "content": [
            {
                "token": "yes",
                "logprob": -0.05,
                "top_logprobs": [
                    {"token": "yes", "logprob": -0.05},
                    {"token": "no", "logprob": -3.2},
                ],
            }
        ]
    }


def _png(color=(200, 30, 30)) -> bytes:
    out = io.BytesIO()
    PILImage.new("RGB", (8, 6), color).save(out, format="PNG")
    return out.getvalue()


def test_images_travel_as_data_urls_and_are_elided_in_the_record(
    fake_openai, template, provider, project
):
    # given a vision provider and two images
    provider.supports_vision = True
    provider.save()
    fake_openai.script(reply({"answer": "yes"}))
    first, second = _png(), _png((0, 0, 255))

    gen = _call(project, images=[first, second])

    # then the request carried two base64 data URLs that decode to images of the same size
    parts = fake_openai.chat_requests[0]["body"]["messages"][1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url", "image_url"]
    for part in parts[1:]:
        url = part["image_url"]["url"]
        assert url.startswith("data:image/jpeg;base64,")
        decoded = PILImage.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
        assert decoded.size == (8, 6)
    # and the stored messages hold placeholders with each image's SHA-256, not the bytes
    stored = gen.messages[1]["content"]
    import hashlib

    sha = hashlib.sha256(first).hexdigest()
    assert stored[1]["image_url"]["url"].startswith(f"<image/jpeg sha256:{sha} ")
    assert "base64" not in json.dumps(gen.messages)
    assert [i["sha256"] for i in gen.params["images"]] == [
        sha,
        hashlib.sha256(second).hexdigest(),
    ]


def test_images_for_a_text_only_provider_fail_without_a_call(
    fake_openai, template, provider, project
):
    gen = _call(project, images=[_png()])

    assert gen.status == "failed" and gen.attempts == 0
    assert "not marked as accepting images" in gen.error
    assert fake_openai.chat_requests == []


def test_missing_variable_is_a_clear_error_before_any_call(
    fake_openai, template, provider, project
):
    with pytest.raises(gateway.MissingVariables) as info:
        _call(project, variables={"thing": "the sky"})

    assert str(info.value) == "Template 'judge' needs quality; pass it in variables."
    assert fake_openai.requests == [] and Generation.objects.count() == 0


def test_api_key_from_environment(fake_openai, template, provider, project, monkeypatch):
    monkeypatch.setenv("FAKE_LLM_API_KEY", "sk-from-env")
    provider.api_key = "env:FAKE_LLM_API_KEY"
    provider.save()
    fake_openai.script(reply({"answer": "yes"}))

    gen = _call(project)

    assert gen.status == "ok"
    assert fake_openai.chat_requests[0]["headers"]["authorization"] == "Bearer sk-from-env"
    assert "sk-from-env" not in json.dumps(gen.params)


def test_unset_environment_key_fails_without_a_call(fake_openai, template, provider, project):
    provider.api_key = "env:NOT_SET_ANYWHERE_API_KEY"
    provider.save()

    gen = _call(project)

    assert gen.status == "failed" and gen.attempts == 0
    assert gen.error == (
        "Provider 'fake' reads its API key from the environment variable "
        "NOT_SET_ANYWHERE_API_KEY, which is not set."
    )
    assert fake_openai.requests == []


def test_environment_variables_other_than_api_keys_are_refused(
    fake_openai, template, provider, project, monkeypatch
):
    monkeypatch.setenv("DATABASE_URL", "postgres://secret")
    provider.api_key = "env:DATABASE_URL"
    provider.save()

    gen = _call(project)

    assert gen.status == "failed" and "not allowed" in gen.error
    assert fake_openai.requests == []


def test_provider_for_prefers_project_then_global_then_environment_then_offline(project, settings):
    settings.BLINDSPOT_LLM_BASE_URL = ""
    assert gateway.provider_for(project).kind == "offline"

    settings.BLINDSPOT_LLM_BASE_URL = "http://llm.internal/v1"
    settings.BLINDSPOT_LLM_MODEL = "env-model"
    env = gateway.provider_for(project)
    assert (env.name, env.base_url, env.model, env.api_key) == (
        "Environment default",
        "http://llm.internal/v1",
        "env-model",
        "env:BLINDSPOT_LLM_API_KEY",
    )

    shared = LLMProvider.objects.create(name="shared", base_url="http://x/v1", is_default=True)
    assert gateway.provider_for(project) == shared
    own = LLMProvider.objects.create(
        project=project, name="own", base_url="http://y/v1", is_default=True
    )
    assert gateway.provider_for(project) == own
    assert gateway.provider_for(None) == shared


def test_stored_images_go_through_the_asset_store(
    fake_openai, template, provider, project, settings, tmp_path
):
    # given an image ingested by curation.assets and a vision provider
    from curation import assets

    settings.MEDIA_ROOT = str(tmp_path)
    image, _created = assets.image_ingest(data=_png(), name="red.png")
    provider.supports_vision = True
    provider.save()
    fake_openai.script(reply({"answer": "yes"}))

    gen = _call(project, images=[image])

    url = fake_openai.chat_requests[0]["body"]["messages"][1]["content"][1]["image_url"]["url"]
    assert url == assets.image_data_url(image)
    assert gen.params["images"][0]["id"] == image.pk
    assert gen.params["images"][0]["sha256"] == image.sha256
    assert image.sha256 in gen.messages[1]["content"][1]["image_url"]["url"]


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_header_forms(headers, seconds):
    assert calls.retry_after_seconds(headers) == seconds


def test_backoff_doubles_and_is_capped():
    backoff = Backoff(base_s=0.5, max_s=3.0, retry_after_max_s=10.0)
    assert [backoff.delay(n) for n in (1, 2, 3, 4, 5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert backoff.delay(1, retry_after=30) == 10.0


def test_unreadable_image_is_recorded_as_a_failure_without_a_call(
    fake_openai, template, provider, project
):
    provider.supports_vision = True
    provider.save()

    gen = _call(project, images=[b"not an image"])

    assert gen.status == "failed" and gen.attempts == 0
    assert gen.error.startswith("Image 12 bytes could not be read: UnidentifiedImageError")
    assert fake_openai.requests == []
