"""A small OpenAI-compatible HTTP server for tests: real sockets on 127.0.0.1, ephemeral port.

Serves ``POST /v1/chat/completions`` from a script of behaviours (one per request, in order)
and ``GET /v1/models``. Records every request so tests can assert on what the real ``openai``
client sent (messages, image data URLs, seed, logprobs)::

    fake.script(malformed("Sure!"), reply({"answer": "yes"}))
    fake.script(status(429, headers={"Retry-After": "2"}), reply("ok"))
    fake.script(hang(5))                      # longer than the client's timeout
    fake.default = reply("ok")                # when the script has run out
    fake.default = VLMPlayers(delay=0.2)      # vision models and a blind one, by model name

A behaviour may also be a callable ``fn(request_body) -> behaviour`` for replies that depend on
the prompt. With nothing scripted and no default the server answers 400, so a test that forgot
to script a reply fails loudly instead of retrying.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from curation.models import LLMProvider


@dataclass
class Reply:
    content: str
    prompt_tokens: int = 10
    completion_tokens: int = 5
    finish_reason: str = "stop"
    logprobs: list | None = None  # [(token, logprob, [(alt, logprob), …]), …]
    model: str | None = None
    # Seconds from the request's arrival to the answer: the server's own work (reading and
    # parsing the request, hashing its images) is inside it, so a model "answering in 200 ms"
    # takes 200 ms of the caller's time however busy the server is.
    delay: float = 0.0


@dataclass
class Status:
    code: int
    body: dict | None = None
    headers: dict = field(default_factory=dict)


@dataclass
class Hang:
    seconds: float


def reply(content: str | dict | list, **kwargs) -> Reply:
    """A 200 answer; dicts and lists are sent as their JSON text."""
    text = content if isinstance(content, str) else json.dumps(content)
    return Reply(content=text, **kwargs)


def malformed(text: str = "Sure! Here are the questions you asked for.") -> Reply:
    return Reply(content=text)


def status(code: int, body: dict | None = None, headers: dict | None = None) -> Status:
    return Status(code=code, body=body, headers=headers or {})


def hang(seconds: float) -> Hang:
    """Say nothing for ``seconds`` (then answer "late"): a timeout for any shorter client."""
    return Hang(seconds=seconds)


Behaviour = Reply | Status | Hang | Callable[[dict], Any]


def _question_and_images(body: dict) -> tuple[str, list[str]]:
    """The last user message's text and its image URLs (data URLs as the gateway sends them)."""
    texts: list[str] = []
    images: list[str] = []
    for message in body.get("messages") or []:
        if message.get("role") != "user":
            continue
        texts, images = [], []
        content = message.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for part in parts:
            if part.get("type") == "text":
                texts.append(part.get("text", ""))
            elif part.get("type") == "image_url":
                images.append((part.get("image_url") or {}).get("url", ""))
    return "\n".join(texts), images


TWO_OPTION_SUFFIX = "Please output the letter corresponding to the correct option."


@dataclass
class VLMPlayers:
    """Deterministic players for model-in-the-loop tests (the hunt): every model answers
    "Yes" or "No" ("A" or "B" when the prompt asks for an option's letter, NaturalBench's
    multiple-choice suffix; a fixed "Yes" then reads "A") after ``delay`` seconds, from a hash
    of its name, the prompt's text and, when the request carries images, the images' bytes. A
    vision model's answer so changes with the image and the question; a request without images
    (a blind model) gets the same answer for the same text. ``fixed`` pins a model's answer
    ({"always-yes": "Yes"}). ``answer`` tells a test what a model will say."""

    delay: float = 0.0
    fixed: dict = field(default_factory=dict)

    def answer(self, model: str, prompt: str, images: list[str] | tuple = ()) -> str:
        two_option = prompt.rstrip().endswith(TWO_OPTION_SUFFIX)
        if model in self.fixed:
            fixed = self.fixed[model]
            return {"Yes": "A", "No": "B"}.get(fixed, fixed) if two_option else fixed
        digest = hashlib.sha256("\x1f".join([model, prompt, *images]).encode()).digest()
        return (("A", "B") if two_option else ("Yes", "No"))[digest[0] & 1]

    def __call__(self, body: dict) -> Reply:
        prompt, images = _question_and_images(body)
        text = self.answer(str(body.get("model", "")), prompt, images)
        return Reply(content=f"{text}.", delay=self.delay)


class FakeOpenAI:
    """``keep_alive``: answer HTTP/1.1 and keep each connection open for the client's next
    request, as real endpoints do (default: HTTP/1.0, one request per connection).
    ``record=False``: keep no request (``requests`` stays empty), for a long-running server
    (``benchmarks/hunt.py``) whose memory would otherwise grow with every image it was sent."""

    def __init__(
        self, models: list[str] | None = None, *, keep_alive: bool = False, record: bool = True
    ):
        self.models = list(models or ["fake-model"])
        self.record = record
        self.default: Behaviour | None = None
        self.requests: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._queue: deque[Behaviour] = deque()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._counter = 0
        handler = _make_handler(self)
        if keep_alive:
            handler.protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes: without TCP_NODELAY the body of each
            # answer on a kept connection waits for the client's delayed ACK (~40 ms).
            handler.disable_nagle_algorithm = True
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self.port = self._server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    def script(self, *behaviours: Behaviour) -> FakeOpenAI:
        with self._lock:
            self._queue.extend(behaviours)
        return self

    @property
    def chat_requests(self) -> list[dict]:
        return [r for r in self.requests if r["path"].endswith("/chat/completions")]

    def close(self) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()

    # -- used by the handler ------------------------------------------------------------------
    def _next(self, body: dict) -> Behaviour | None:
        with self._lock:
            behaviour = self._queue.popleft() if self._queue else self.default
        if callable(behaviour) and not isinstance(behaviour, Reply | Status | Hang):
            behaviour = behaviour(body)
        return behaviour

    def _record(self, entry: dict) -> None:
        if not self.record:
            return
        with self._lock:
            self.requests.append(entry)

    def _enter(self) -> int:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self._counter += 1
            return self._counter

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1


def _completion(fake: FakeOpenAI, n: int, body: dict, r: Reply) -> dict:
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": r.content},
        "finish_reason": r.finish_reason,
        "logprobs": None,
    }
    if r.logprobs is not None:
        choice["logprobs"] = {
            "content": [
                {
                    "token": tok,
                    "logprob": lp,
                    "bytes": list(tok.encode()),
                    "top_logprobs": [
                        {"token": t, "logprob": p, "bytes": list(t.encode())} for t, p in top
                    ],
                }
                for tok, lp, top in r.logprobs
            ]
        }
    return {
        "id": f"chatcmpl-fake-{n}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": r.model or body.get("model", "fake-model"),
        "choices": [choice],
        "usage": {
            "prompt_tokens": r.prompt_tokens,
            "completion_tokens": r.completion_tokens,
            "total_tokens": r.prompt_tokens + r.completion_tokens,
        },
    }


def _headers(message) -> dict:
    """Request headers with lower-case names (HTTP names are case-insensitive)."""
    return {k.lower(): v for k, v in message.items()}


def _make_handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format, *args):  # noqa: A002 - keep test output quiet
            return

        def _send(self, code: int, payload: dict, headers: dict | None = None) -> None:
            data = json.dumps(payload).encode()
            try:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, str(v))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test)

        def do_GET(self):  # noqa: N802 - http.server's naming
            fake._record({"method": "GET", "path": self.path, "headers": _headers(self.headers)})
            if self.path.rstrip("/").endswith("/models"):
                data = [
                    {"id": m, "object": "model", "created": 0, "owned_by": "fake"}
                    for m in fake.models
                ]
                self._send(200, {"object": "list", "data": data})
            else:
                self._send(404, {"error": {"message": "not found", "type": "not_found"}})

        def do_POST(self):  # noqa: N802
            arrived = time.monotonic()
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                body = {"_raw": raw.decode(errors="replace")}
            fake._record(
                {
                    "method": "POST",
                    "path": self.path,
                    "headers": _headers(self.headers),
                    "body": body,
                }
            )
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, {"error": {"message": "not found", "type": "not_found"}})
                return
            n = fake._enter()
            try:
                self._answer(n, body, arrived)
            finally:
                fake._leave()

        def _answer(self, n: int, body: dict, arrived: float) -> None:
            behaviour = fake._next(body)
            if behaviour is None:
                self._send(
                    400,
                    {"error": {"message": "fake server: nothing scripted", "type": "test"}},
                )
            elif isinstance(behaviour, Hang):
                fake._closing.wait(behaviour.seconds)
                self._send(200, _completion(fake, n, body, Reply(content="late")))
            elif isinstance(behaviour, Status):
                payload = behaviour.body or {
                    "error": {"message": f"fake status {behaviour.code}", "type": "fake"}
                }
                self._send(behaviour.code, payload, behaviour.headers)
            else:
                if behaviour.delay:  # from the request's arrival
                    fake._closing.wait(max(0.0, behaviour.delay - (time.monotonic() - arrived)))
                self._send(200, _completion(fake, n, body, behaviour))

    return Handler


def fake_provider(project, fake: FakeOpenAI, *, is_default: bool = True, **fields) -> LLMProvider:
    """The fake server ``fake`` as an LLM of ``project`` (None: of every project), its default
    one unless ``is_default=False``; ``fields`` set anything else of the provider."""
    values = {"name": "fake", "model": "fake-gpt-4", "timeout_s": 2.0, "max_retries": 1, **fields}
    return LLMProvider.objects.create(
        project=project, base_url=fake.base_url, api_key="sk-test", is_default=is_default, **values
    )
