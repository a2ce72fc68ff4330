"""What a call to a model is, shared by the callers (``calls`` for OpenAI-compatible endpoints,
``offline`` for the rule-based drafter): the endpoint snapshot, the backoff, the request and the
result. Plain dataclasses, no Django."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Endpoint:
    """What a call needs to know about its provider (a snapshot, safe to hand to a thread)."""

    kind: str  # "openai" or "offline" (LLMProvider.Kind values)
    name: str
    base_url: str = ""
    api_key: str = ""
    model: str = ""
    temperature: float = 0.0
    max_tokens: int = 1024
    timeout_s: float = 60.0
    max_retries: int = 3


@dataclass(frozen=True)
class Backoff:
    base_s: float = 1.0
    max_s: float = 30.0
    retry_after_max_s: float = 60.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        if retry_after is not None:
            return max(0.0, min(retry_after, self.retry_after_max_s))
        return min(self.base_s * 2 ** (attempt - 1), self.max_s)


@dataclass
class CallRequest:
    endpoint: Endpoint
    template_name: str
    messages: list[dict]  # as sent: images are data URLs here
    variables: dict
    output_schema: Any = None
    seed: int | None = None
    logprobs: bool = False
    backoff: Backoff = field(default_factory=Backoff)
    # A reason not to call at all (no API key, images for a text-only provider): recorded as a
    # failed generation with zero attempts.
    blocked: str = ""


@dataclass
class CallResult:
    ok: bool
    output: Any = None
    raw_text: str = ""
    logprobs: Any = None
    model: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: int = 0
    attempts: int = 0
    attempt_log: list[dict] = field(default_factory=list)
    error: str = ""
