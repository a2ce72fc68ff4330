"""The fake OpenAI-compatible server's own contract, which the hunt's benchmark relies on: a
reply's ``delay`` counts from the request's arrival (the server's own work inside it), and a
server made with ``record=False`` keeps no request."""

from __future__ import annotations

import time

import openai

from tests.fake_openai import FakeOpenAI, reply


def _ask(server: FakeOpenAI) -> float:
    client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
    started = time.perf_counter()
    client.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "hi"}])
    return time.perf_counter() - started


def test_a_delay_counts_from_the_requests_arrival():
    # Given a server that works 0.2 s on each request before its 0.3 s reply
    server = FakeOpenAI()
    try:

        def slow(_body):
            time.sleep(0.2)
            return reply("ok", delay=0.3)

        server.default = slow
        # Then the answer comes 0.3 s after the request, not 0.5 s
        took = _ask(server)
        assert 0.29 <= took < 0.45, took
        assert len(server.chat_requests) == 1
    finally:
        server.close()


def test_a_server_that_records_nothing_keeps_no_request():
    server = FakeOpenAI(record=False)
    try:
        server.default = reply("ok")
        _ask(server)
        assert server.requests == []
    finally:
        server.close()
