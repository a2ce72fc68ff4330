"""LLM providers: which endpoint a project's calls go to, its key, and a connection test.

Lookup order for a project (``provider_for``): the project's default provider, the global
default, a provider built from the environment (``BLINDSPOT_LLM_BASE_URL`` / ``_API_KEY`` /
``_MODEL``) when one is configured, and finally the offline drafter, so the demo always runs.

API keys: the field holds the key itself or ``env:VAR_NAME``. Only variables whose names end in
``API_KEY`` (or are listed in ``BLINDSPOT_LLM_ENV_KEYS``) may be read, so a provider's settings
cannot send another server secret (``env:DATABASE_URL``) to an endpoint of someone's choosing.
Keys are never rendered back in pages.
"""

from __future__ import annotations

import os
import re
import time
from typing import Any

import openai
from django.conf import settings
from django.db import transaction

from ..models import LLMProvider
from .call_types import Backoff, Endpoint
from .offline import rule_names

ENV_PROVIDER_NAME = "Environment default"
OFFLINE_PROVIDER_NAME = "Offline drafter"
DEFAULT_MODEL = "gpt-4o-mini"
# vLLM / Ollama accept any key; the client insists on a non-empty one.
NO_KEY = "EMPTY"
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def llm_setting(name: str, default: Any) -> Any:
    return getattr(settings, name, default)


def backoff_from_settings() -> Backoff:
    return Backoff(
        base_s=float(llm_setting("BLINDSPOT_LLM_BACKOFF_BASE_S", 1.0)),
        max_s=float(llm_setting("BLINDSPOT_LLM_BACKOFF_MAX_S", 30.0)),
        retry_after_max_s=float(llm_setting("BLINDSPOT_LLM_RETRY_AFTER_MAX_S", 60.0)),
    )


def provider_offline() -> LLMProvider:
    provider = (
        LLMProvider.objects.filter(project=None, kind=LLMProvider.Kind.OFFLINE)
        .order_by("id")
        .first()
    )
    if provider is None:
        provider, _ = LLMProvider.objects.get_or_create(
            project=None,
            name=OFFLINE_PROVIDER_NAME,
            defaults={"kind": LLMProvider.Kind.OFFLINE, "model": "offline-drafter"},
        )
    return provider


def _provider_from_environment() -> LLMProvider | None:
    base_url = llm_setting("BLINDSPOT_LLM_BASE_URL", "") or ""
    if not base_url:
        return None
    model = llm_setting("BLINDSPOT_LLM_MODEL", "") or DEFAULT_MODEL
    provider, created = LLMProvider.objects.get_or_create(
        project=None,
        name=ENV_PROVIDER_NAME,
        defaults={
            "kind": LLMProvider.Kind.OPENAI,
            "base_url": base_url,
            "model": model,
            "api_key": "env:BLINDSPOT_LLM_API_KEY",
        },
    )
    if not created and (provider.base_url, provider.model) != (base_url, model):
        # The environment is the source of truth for this row.
        provider.base_url, provider.model = base_url, model
        provider.save(update_fields=["base_url", "model"])
    return provider


def provider_for(project=None) -> LLMProvider:
    """The provider a call for ``project`` uses when none is named."""
    if project is not None:
        own = LLMProvider.objects.filter(project=project, is_default=True).order_by("id").first()
        if own is not None:
            return own
    shared = LLMProvider.objects.filter(project=None, is_default=True).order_by("id").first()
    if shared is not None:
        return shared
    return _provider_from_environment() or provider_offline()


def provider_of(obj) -> LLMProvider:
    """The provider a recipe object calls: the one it names (its ``provider``), else its
    project's default (``provider_for``)."""
    return obj.provider or provider_for(obj.project)


def env_key_allowed(var: str) -> bool:
    extra = set(llm_setting("BLINDSPOT_LLM_ENV_KEYS", ()) or ())
    return bool(_ENV_NAME.match(var)) and (var.upper().endswith("API_KEY") or var in extra)


def provider_api_key(provider: LLMProvider) -> tuple[str, str]:
    """(key to send, problem). A problem means: do not call, record why."""
    raw = (provider.api_key or "").strip()
    if not raw:
        return NO_KEY, ""
    if not raw.startswith("env:"):
        return raw, ""
    var = raw[4:].strip()
    if not env_key_allowed(var):
        return "", (
            f"Provider {provider.name!r} reads its key from {var!r}, which is not allowed: use a "
            "variable whose name ends in API_KEY (or list it in BLINDSPOT_LLM_ENV_KEYS)."
        )
    value = os.environ.get(var) or str(llm_setting(var, "") or "")
    if not value:
        return "", (
            f"Provider {provider.name!r} reads its API key from the environment variable "
            f"{var}, which is not set."
        )
    return value, ""


def provider_key_status(provider: LLMProvider) -> str:
    """What a page may say about the key (never the key)."""
    raw = (provider.api_key or "").strip()
    if provider.kind == LLMProvider.Kind.OFFLINE:
        return "not needed"
    if not raw:
        return "none"
    if raw.startswith("env:"):
        var = raw[4:].strip()
        _value, problem = provider_api_key(provider)
        return f"environment variable {var}" + (" (not set)" if problem else "")
    return "stored (hidden)"


def provider_endpoint(provider: LLMProvider) -> tuple[Endpoint, str]:
    """A thread-safe snapshot of the provider, and a reason not to call (or "")."""
    key, problem = (
        ("", "") if provider.kind == LLMProvider.Kind.OFFLINE else (provider_api_key(provider))
    )
    if provider.kind == LLMProvider.Kind.OPENAI and not problem:
        if not provider.base_url:
            problem = f"Provider {provider.name!r} has no base URL."
        elif not provider.model:
            problem = f"Provider {provider.name!r} names no model."
    endpoint = Endpoint(
        kind=provider.kind,
        name=provider.name,
        base_url=provider.base_url,
        api_key=key,
        model=provider.model if provider.kind == LLMProvider.Kind.OPENAI else "",
        temperature=provider.temperature,
        max_tokens=provider.max_tokens,
        timeout_s=provider.timeout_s,
        max_retries=provider.max_retries,
    )
    return endpoint, problem


PROVIDER_FIELDS = (
    "project",
    "name",
    "kind",
    "base_url",
    "model",
    "temperature",
    "max_tokens",
    "timeout_s",
    "max_retries",
    "concurrency",
    "supports_vision",
    "is_default",
)


def provider_save(
    *, provider: LLMProvider | None = None, data: dict, api_key: str | None = None
) -> LLMProvider:
    """Create or update a provider. ``api_key`` None keeps the stored key, "" clears it.
    Making one provider the default clears the flag on the others of the same scope."""
    with transaction.atomic():
        provider = provider or LLMProvider()
        for field in PROVIDER_FIELDS:
            if field in data:
                setattr(provider, field, data[field])
        if api_key is not None:
            provider.api_key = api_key.strip()
        provider.save()
        if provider.is_default:
            LLMProvider.objects.filter(project=provider.project, is_default=True).exclude(
                pk=provider.pk
            ).update(is_default=False)
    return provider


def provider_test_connection(provider: LLMProvider) -> dict:
    """List the endpoint's models (falling back to a one-token completion when /models is not
    offered). Returns {"ok", "message", "latency_ms", "models"}; never raises."""
    if provider.kind == LLMProvider.Kind.OFFLINE:
        names = rule_names()
        return {
            "ok": True,
            "message": f"Offline drafter: always available, {len(names)} rules "
            f"({', '.join(names)}).",
            "latency_ms": 0,
            "models": [],
        }
    endpoint, problem = provider_endpoint(provider)
    if problem:
        return {"ok": False, "message": problem, "latency_ms": 0, "models": []}
    t0 = time.monotonic()
    try:
        client = openai.OpenAI(
            base_url=endpoint.base_url,
            api_key=endpoint.api_key,
            timeout=min(endpoint.timeout_s, 10.0),
            max_retries=0,
        )
        try:
            try:
                models = sorted(m.id for m in client.models.list())
            except openai.NotFoundError:
                models = []
            if not models:
                # No model list offered: a one-token completion proves the endpoint answers.
                client.chat.completions.create(
                    model=endpoint.model,
                    messages=[{"role": "user", "content": "ping"}],
                    max_tokens=1,
                )
        finally:
            client.close()
    except Exception as exc:  # noqa: BLE001 - a test reports every failure, never a 500
        ms = int((time.monotonic() - t0) * 1000)
        return {
            "ok": False,
            "message": f"{type(exc).__name__}: {exc}"[:500],
            "latency_ms": ms,
            "models": [],
        }
    ms = int((time.monotonic() - t0) * 1000)
    if not models:
        message = f"Connected: a one-token completion with {endpoint.model!r} answered."
    elif endpoint.model in models:
        message = f"Connected: {len(models)} models offered, including {endpoint.model!r}."
    else:
        return {
            "ok": False,
            "message": f"Connected, but {endpoint.model!r} is not among the {len(models)} models "
            f"offered ({', '.join(models[:8])}{', …' if len(models) > 8 else ''}).",
            "latency_ms": ms,
            "models": models,
        }
    return {"ok": True, "message": message, "latency_ms": ms, "models": models}
