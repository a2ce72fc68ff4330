"""Prompt text: str.format-style fields, content hash, chat messages. No Django import.

Templates use Python's ``str.format`` syntax with named fields only (``{caption_1}``); literal
braces are written ``{{`` and ``}}``. A template is checked when it is saved, and variables are
checked before any call, so a missing value is a clear error and never a wasted request.
"""

from __future__ import annotations

import hashlib
import json
import string
from typing import Any

_FORMATTER = string.Formatter()


class TemplateError(ValueError):
    """A template that cannot be saved or rendered (bad syntax, schema, missing variables)."""


class MissingVariables(TemplateError):
    def __init__(self, template: str, missing: list[str]):
        self.template = template
        self.missing = missing
        super().__init__(
            f"Template {template!r} needs {', '.join(missing)}; "
            f"pass {'it' if len(missing) == 1 else 'them'} in variables."
        )


def template_fields(text: str) -> list[str]:
    """The variable names a template text uses, in order of first use.

    Raises TemplateError for positional fields (``{}``, ``{0}``), attribute or index access and
    unbalanced braces, with the hint to double literal braces.
    """
    names: list[str] = []
    try:
        parsed = list(_FORMATTER.parse(text))
    except ValueError as exc:
        raise TemplateError(
            f"{exc}. Write literal braces as {{{{ and }}}} (for example a JSON example)."
        ) from exc
    for _literal, field, _spec, _conversion in parsed:
        if field is None:
            continue
        if not field.isidentifier():
            raise TemplateError(
                f"Field {{{field}}} is not a plain variable name: use names like {{caption_1}}; "
                "write literal braces as {{ and }}."
            )
        if field not in names:
            names.append(field)
    return names


def render(text: str, variables: dict[str, Any], *, template: str = "") -> str:
    """``text`` with its fields filled in; MissingVariables lists every absent name at once."""
    fields = template_fields(text)
    missing = [name for name in fields if name not in variables]
    if missing:
        raise MissingVariables(template or "(inline)", missing)
    return text.format(**{name: variables[name] for name in fields})


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_sha256(*, system: str, text: str, output_schema: Any) -> str:
    """SHA-256 over what decides a call's prompt and its accepted output, in canonical JSON."""
    payload = canonical_json({"system": system, "text": text, "output_schema": output_schema})
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def build_messages(*, system: str, user: str, image_urls: list[str] | None = None) -> list[dict]:
    """OpenAI chat messages; images ride in the user message as ``image_url`` parts."""
    messages: list[dict] = []
    if system:
        messages.append({"role": "system", "content": system})
    if image_urls:
        parts: list[dict] = [{"type": "text", "text": user}]
        parts += [{"type": "image_url", "image_url": {"url": url}} for url in image_urls]
        messages.append({"role": "user", "content": parts})
    else:
        messages.append({"role": "user", "content": user})
    return messages


def image_placeholder(*, sha256: str, mime: str, size: int) -> str:
    """What a stored message shows instead of a base64 data URL (the bytes stay in storage)."""
    return f"<{mime} sha256:{sha256} {size} bytes elided>"


def elide_images(messages: list[dict], placeholders: list[str]) -> list[dict]:
    """A copy of ``messages`` with the n-th image URL replaced by the n-th placeholder."""
    it = iter(placeholders)
    out: list[dict] = []
    for message in messages:
        content = message["content"]
        if isinstance(content, list):
            parts = []
            for part in content:
                if part.get("type") == "image_url":
                    part = {"type": "image_url", "image_url": {"url": next(it, "<image elided>")}}
                parts.append(part)
            message = {**message, "content": parts}
        out.append(message)
    return out
