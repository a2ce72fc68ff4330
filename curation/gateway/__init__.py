"""The LLM gateway: versioned prompt templates, providers (OpenAI-compatible endpoints or the
offline drafter), and ``generate``, which records every call as a Generation.

Contract used by the recipes (see the team brief)::

    from curation.gateway import generate, template_ensure, template_current, provider_for
    from curation.gateway.offline import rule

Names load lazily (PEP 562) so the Django-free modules (``calls``, ``parsing``, ``rendering``,
``offline``, ``diff``) import without a configured Django, e.g. from benchmarks and scripts.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "BATCH_JOB_KIND": "batch:JOB_KIND",
    "batch_validate": "batch",
    "generation_batch_enqueue": "batch",
    "DEFAULT_TEMPLATES": "defaults",
    "ensure_default_templates": "templates",
    "image_generate": "image_generation",
    "OfflineRuleError": "offline",
    "rule": "offline",
    "OutputInvalid": "parsing",
    "extract_json": "parsing",
    "parse_output": "parsing",
    "validate_output": "parsing",
    "provider_api_key": "providers",
    "provider_for": "providers",
    "provider_of": "providers",
    "provider_key_status": "providers",
    "provider_offline": "providers",
    "provider_save": "providers",
    "provider_test_connection": "providers",
    "MissingVariables": "rendering",
    "TemplateError": "rendering",
    "content_sha256": "rendering",
    "render": "rendering",
    "generate": "service",
    "generation_prepare": "service",
    "generation_record": "service",
    "TemplateNotFound": "templates",
    "template_create": "templates",
    "template_current": "templates",
    "template_ensure": "templates",
    "template_restore": "templates",
    "template_update": "templates",
    "template_for": "pins",
    "template_pin": "pins",
    "template_record": "pins",
    "templates_ensure": "pins",
    "templates_for": "pins",
    "templates_used": "templates",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    target = _EXPORTS.get(name)
    if target is None:
        # Submodules (gateway.offline, gateway.providers, …) by attribute access.
        try:
            return importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    module_name, _, attr = target.partition(":")
    value = getattr(importlib.import_module(f".{module_name}", __name__), attr or name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
