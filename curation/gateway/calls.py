"""One gateway call: the attempt loop around the real ``openai`` client, or the offline drafter.

No Django import and no database access: the batch job runs ``execute`` in worker threads while
the main thread records results. Every attempt is logged; retries back off exponentially
(``base · 2^(n-1)``, capped) and honour ``Retry-After`` (capped) on rate limits and 5xx answers.
"""

from __future__ import annotations

import email.utils
import functools
import os
import queue
import secrets
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Any, TypeVar

import httpx
import openai
from openai._utils._json import openapi_dumps
from openai.types.chat import ChatCompletion

from .call_types import CallRequest, CallResult, Endpoint
from .kept import Kept
from .offline import run_offline
from .parsing import OutputInvalid, parse_output

# Looked up at call time so tests can record the delays instead of sleeping.
sleep = time.sleep

TOP_LOGPROBS = 5


def execute(request: CallRequest) -> CallResult:
    """Run the call with its retries. Never raises for anything the endpoint or model does."""
    if request.blocked:
        return CallResult(ok=False, error=request.blocked, model=request.endpoint.model)
    if request.endpoint.kind == "offline":
        return run_offline(request)
    return _execute_openai(request)


Tag = TypeVar("Tag")


def execute_concurrently(
    next_call: Callable[[], tuple[Tag, CallRequest] | None],
    *,
    workers: int,
    name: str,
    gather_s: float = 0.0,
) -> Iterator[list[tuple[Tag, CallResult]]]:
    """Keep up to ``workers`` calls in flight on the process's call threads (``CallThreads``;
    each named after ``name`` while it runs one); yield the answers that arrived together, each
    with the tag it was asked with. ``next_call`` is asked whenever a call ends (None: nothing
    now); it runs in the caller's thread, and so does the code that handles what is yielded, so
    both may use the database. ``gather_s``: once a call ends, the others in flight get up to
    that long to end too and come in the same list (no wait at all once every one has ended).
    Calls still in flight when the caller stops iterating end on their own, unread."""
    in_flight: dict[Future, Tag] = {}

    def fill() -> None:
        while len(in_flight) < workers and (call := next_call()) is not None:
            tag, request = call
            in_flight[call_threads.submit(execute, request, name=name)] = tag

    fill()
    while in_flight:
        finished, _ = wait(in_flight, return_when=FIRST_COMPLETED)
        if gather_s > 0 and len(finished) < len(in_flight):
            finished, _ = wait(in_flight, timeout=gather_s)  # every one, or the bound
        yield [(in_flight.pop(future), future.result()) for future in finished]
        fill()


class CallThreads:
    """The process's threads for gateway calls, kept between batches: a call goes to an idle
    thread, or to a new one when none is idle; a thread idle for ``idle_s`` ends. (A pool made
    per batch started its threads again every time: three per hunt step, each start waiting for
    the GIL behind the job's own thread; py-spy found ``Thread.start`` in ~9 % of the hunt
    worker's job samples.) Calls touch no database, so a kept thread holds no connection."""

    def __init__(self, idle_s: float = 60.0) -> None:
        self.idle_s = idle_s
        self._lock = threading.Lock()
        self._idle: list[_CallThread] = []  # the most recently idle last (taken first)
        self._pid = os.getpid()
        self._made = 0

    def submit(self, fn: Callable[..., Any], *args: Any, name: str = "call") -> Future:
        future: Future = Future()
        with self._lock:
            if self._pid != os.getpid():  # a forked child: the parent's threads are not here
                self._idle, self._pid = [], os.getpid()
            thread = self._idle.pop() if self._idle else None
            if thread is None:
                self._made += 1
                thread = _CallThread(self, f"gateway-call-{self._made}")
                thread.start()
        thread.inbox.put((future, fn, args, name))
        return future

    def idle(self) -> int:
        with self._lock:
            return len(self._idle)

    def _rest(self, thread: _CallThread) -> None:
        with self._lock:
            self._idle.append(thread)

    def _retire(self, thread: _CallThread) -> bool:
        """True when ``thread`` may end: still idle (nobody took it to give it work)."""
        with self._lock:
            if thread in self._idle:
                self._idle.remove(thread)
                return True
            return False


class _CallThread(threading.Thread):
    def __init__(self, owner: CallThreads, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.owner, self.base_name = owner, name
        self.inbox: queue.SimpleQueue = queue.SimpleQueue()

    def run(self) -> None:
        while True:
            try:
                future, fn, args, label = self.inbox.get(timeout=self.owner.idle_s)
            except queue.Empty:
                if self.owner._retire(self):
                    return
                continue  # taken a moment ago: its work is on the way
            if future.set_running_or_notify_cancel():
                self.name = f"{label}-{self.base_name}"
                try:
                    future.set_result(fn(*args))
                except BaseException as exc:  # noqa: BLE001 - handed to the caller
                    future.set_exception(exc)
                self.name = self.base_name
            del future, fn, args  # nothing of the call kept while idle
            self.owner._rest(self)


call_threads = CallThreads()


def retry_after_seconds(headers: Any) -> float | None:
    """``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date), else None."""
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value:
        try:
            return float(value) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context per process, made as httpx makes its default one (certifi, and the
    SSL_CERT_FILE / SSL_CERT_DIR environment): loading the certificates takes 10–100 ms, which
    every call paid again when each client made its own."""
    return httpx.create_ssl_context(trust_env=True)


def client(endpoint: Endpoint, *, max_retries: int = 0) -> openai.OpenAI:
    """The ``openai`` client of ``endpoint``. Its own retries are off by default: the chat
    calls' attempt loop decides when to try again."""
    return openai.OpenAI(
        base_url=endpoint.base_url,
        api_key=endpoint.api_key,
        timeout=endpoint.timeout_s,
        max_retries=max_retries,
        http_client=openai.DefaultHttpxClient(verify=_tls()),
    )


# One chat client per (process, endpoint URL, key, timeout), kept for the process's later calls:
# its connection pool keeps the endpoint's connections open (keep-alive), so a call no longer
# opens a TCP (and TLS) connection and builds a client of its own. The newest POOL_SIZE are
# kept; an evicted client is dropped, not closed (a thread may still be using it).
POOL_SIZE = 32
_pool: Kept[openai.OpenAI] = Kept(POOL_SIZE)


def pooled_client(endpoint: Endpoint) -> openai.OpenAI:
    """The process's chat client of ``endpoint`` (made once, shared by its threads)."""
    key = (os.getpid(), endpoint.base_url, endpoint.api_key, float(endpoint.timeout_s))
    found = _pool.get(key)
    return found if found is not None else _pool.put(key, client(endpoint))


# The chat call goes through the client's own request method (``client.post``, its README's way to
# a route by hand) with what ``chat.completions.create`` would send: the same route, body bytes,
# response type and bearer key, the same timeout, errors and connection pool. Two things differ,
# both CPU on a hunt step's path, where the calls leave one process one after the other (one GIL):
# - ``create``'s ``maybe_transform`` is left out: it walks every message and image part against
#   the typed parameters to rename aliased or format dated fields, and a chat request has none
#   (the body is sent unchanged; tested on every shape the gateway sends, with this client);
# - the body is serialised here, as the client would (``openapi_dumps``), except that each image
#   data URL's JSON text is made once and kept (``_url_json``): a hunt's targets all send the
#   same picture, and JSON-escaping a 150 KB base64 string took ~1 ms a call on a 2-core machine.
# tests/curation/test_gateway_body.py holds both to ``create``'s bytes on the wire.
CHAT_ROUTE = "/chat/completions"
CHAT_OPTIONS: dict[str, Any] = {"security": {"bearer_auth": True}}
URL_JSON_MIN = 4096  # image URLs at least this long have their JSON text kept
URL_JSON_BYTES = 32 * 1024 * 1024  # the newest kept, within this many bytes of JSON text
_url_jsons: Kept[bytes] = Kept(URL_JSON_BYTES, weight=len)


def _url_json(url: str) -> bytes:
    """``url`` as JSON text (UTF-8), as ``openapi_dumps`` writes a string, made once per URL."""
    found = _url_jsons.get(url)
    return found if found is not None else _url_jsons.put(url, openapi_dumps(url))


def chat_body(body: dict) -> bytes:
    """``openapi_dumps(body)``, the bytes ``create`` sends, with the long image URLs' JSON text
    spliced in from ``_url_json`` (the rest of the body, a few hundred bytes, dumped as usual)."""
    swaps: list[tuple[bytes, str]] = []
    messages = []
    for message in body.get("messages", ()):
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            parts = []
            for part in content:
                image = part.get("image_url") if isinstance(part, dict) else None
                url = image.get("url") if isinstance(image, dict) else None
                if isinstance(url, str) and len(url) >= URL_JSON_MIN:
                    token = f"blindspot-image-{len(swaps)}-{secrets.token_hex(8)}"
                    swaps.append((openapi_dumps(token), url))
                    part = {**part, "image_url": {**image, "url": token}}
                parts.append(part)
            message = {**message, "content": parts}
        messages.append(message)
    if not swaps:
        return openapi_dumps(body)
    out = openapi_dumps({**body, "messages": messages})
    for token, url in swaps:
        out = out.replace(token, _url_json(url), 1)
    return out


def chat_create(client: openai.OpenAI, body: dict) -> ChatCompletion:
    """``client.chat.completions.create(**body)``: the same request, less the client's CPU."""
    return client.post(
        CHAT_ROUTE, content=chat_body(body), cast_to=ChatCompletion, options=CHAT_OPTIONS
    )


def _create_kwargs(request: CallRequest) -> dict:
    ep = request.endpoint
    kwargs: dict[str, Any] = {
        "model": ep.model,
        "messages": request.messages,
        "temperature": ep.temperature,
        "max_tokens": ep.max_tokens,
    }
    if request.seed is not None:
        kwargs["seed"] = request.seed
    if request.logprobs:
        kwargs["logprobs"] = True
        kwargs["top_logprobs"] = TOP_LOGPROBS
    return kwargs


def _logprobs_of(choice: Any) -> dict | None:
    lp = getattr(choice, "logprobs", None)
    content = getattr(lp, "content", None) if lp is not None else None
    if not content:
        return None
    return {
        "content": [
            {
                "token": t.token,
                "logprob": t.logprob,
                "top_logprobs": [
                    {"token": top.token, "logprob": top.logprob} for top in (t.top_logprobs or [])
                ],
            }
            for t in content
        ]
    }


def _execute_openai(request: CallRequest) -> CallResult:
    ep = request.endpoint
    allowed = 1 + max(0, ep.max_retries)
    result = CallResult(ok=False, model=ep.model)
    started = time.monotonic()
    try:
        openai_client = pooled_client(ep)
    except Exception as exc:  # noqa: BLE001 - e.g. a base URL the HTTP library cannot parse
        result.error = f"Cannot set up the client for {ep.name!r}: {type(exc).__name__}: {exc}"
        return result
    for attempt in range(1, allowed + 1):
        entry, retryable, retry_after = _attempt(openai_client, request, result, attempt)
        result.attempts = attempt
        result.attempt_log.append(entry)
        if result.ok or not retryable or attempt == allowed:
            break
        delay = request.backoff.delay(attempt, retry_after)
        entry["backoff_s"] = round(delay, 3)
        sleep(delay)
    result.latency_ms = int((time.monotonic() - started) * 1000)
    if not result.ok:
        last = result.attempt_log[-1] if result.attempt_log else {}
        outcomes = ", ".join(e["outcome"] for e in result.attempt_log)
        result.error = (
            f"Failed after {result.attempts} attempt{'s' if result.attempts != 1 else ''} "
            f"({outcomes}): {last.get('error', 'no attempt made')}"
        )
    return result


def _attempt(
    client: openai.OpenAI, request: CallRequest, result: CallResult, attempt: int
) -> tuple[dict, bool, float | None]:
    """One request; fills ``result`` on success. Returns (log entry, retryable, retry-after)."""
    entry: dict[str, Any] = {"attempt": attempt}
    t0 = time.monotonic()
    retry_after: float | None = None
    try:
        response = chat_create(client, _create_kwargs(request))
    except openai.RateLimitError as exc:
        retry_after = retry_after_seconds(exc.response.headers)
        return _failed(entry, t0, "rate_limited", exc, retry_after), True, retry_after
    except openai.APITimeoutError as exc:
        return _failed(entry, t0, "timeout", exc), True, None
    except openai.APIConnectionError as exc:
        return _failed(entry, t0, "connection_error", exc), True, None
    except openai.APIStatusError as exc:
        if exc.status_code >= 500 or exc.status_code == 408:
            retry_after = retry_after_seconds(exc.response.headers)
            return (
                _failed(entry, t0, f"http_{exc.status_code}", exc, retry_after),
                True,
                retry_after,
            )
        # 400 / 401 / 404: the same request would fail the same way.
        return _failed(entry, t0, f"http_{exc.status_code}", exc), False, None
    except Exception as exc:  # noqa: BLE001 - generate() never raises for an endpoint's failure
        return _failed(entry, t0, "error", exc), False, None

    entry["latency_ms"] = int((time.monotonic() - t0) * 1000)
    entry["response_id"] = getattr(response, "id", "") or ""
    entry["response_model"] = getattr(response, "model", "") or ""
    usage = getattr(response, "usage", None)
    prompt_tokens = getattr(usage, "prompt_tokens", None) if usage else None
    completion_tokens = getattr(usage, "completion_tokens", None) if usage else None
    entry["prompt_tokens"], entry["completion_tokens"] = prompt_tokens, completion_tokens
    _add_tokens(result, prompt_tokens, completion_tokens)
    choices = getattr(response, "choices", None) or []
    if not choices:
        entry.update(outcome="malformed", error="The response has no choices.")
        return entry, True, None
    choice = choices[0]
    text = getattr(choice.message, "content", None) or ""
    entry["finish_reason"] = getattr(choice, "finish_reason", "") or ""
    result.raw_text = text
    if entry["response_model"]:
        result.model = entry["response_model"]
    try:
        output = parse_output(text, request.output_schema)
    except OutputInvalid as exc:
        message = str(exc)
        if entry["finish_reason"] == "length":
            message += " The answer was cut at max_tokens; raise it on the provider."
        entry.update(outcome=exc.kind, error=message, raw_excerpt=text[:500])
        return entry, True, None
    entry["outcome"] = "ok"
    result.ok = True
    result.output = output
    result.logprobs = _logprobs_of(choice)
    return entry, False, None


def _failed(
    entry: dict, t0: float, outcome: str, exc: Exception, retry_after: float | None = None
) -> dict:
    entry["latency_ms"] = int((time.monotonic() - t0) * 1000)
    entry["outcome"] = outcome
    entry["error"] = f"{type(exc).__name__}: {exc}"[:2000]
    if retry_after is not None:
        entry["retry_after_s"] = retry_after
    return entry


def _add_tokens(result: CallResult, prompt: int | None, completion: int | None) -> None:
    # Tokens spent over all attempts: a retried call costs every try.
    if prompt is not None:
        result.prompt_tokens = (result.prompt_tokens or 0) + prompt
    if completion is not None:
        result.completion_tokens = (result.completion_tokens or 0) + completion
