"""Prompt templates as versioned database records.

Editing never overwrites: a change of system prompt, text or output schema makes version n + 1
current and keeps every older version, because generations point at the exact version they were
rendered from. ``sha256`` covers (system, text, output_schema) in canonical JSON.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from django.db import IntegrityError, transaction

from ..models import PromptTemplate
from .defaults import DEFAULT_TEMPLATES
from .parsing import check_schema
from .rendering import TemplateError, content_sha256, template_fields

_NAME = re.compile(r"^[-a-zA-Z0-9_]+$")


class TemplateNotFound(TemplateError):
    pass


# Default of template_update's output_schema: keep the current one (None means plain text).
KEEP: Any = object()


def template_check(
    *, name: str, text: str, system: str = "", output_schema: Any = None, variables=None
) -> list[str]:
    """Validate a template before it is stored; returns its variable names (system first)."""
    if not name or len(name) > 100 or not _NAME.match(name):
        raise TemplateError(
            f"Template name {name!r} must be 1–100 letters, digits, hyphens or underscores."
        )
    if not (text or "").strip():
        raise TemplateError(f"Template {name!r} needs a prompt text.")
    try:
        check_schema(output_schema)
    except ValueError as exc:
        raise TemplateError(f"Template {name!r}: {exc}") from exc
    fields = template_fields(system or "")
    fields += [f for f in template_fields(text) if f not in fields]
    if variables is not None and sorted(variables) != sorted(fields):
        raise TemplateError(
            f"Template {name!r} declares variables {sorted(variables)} but its text uses "
            f"{sorted(fields)}."
        )
    return fields


@dataclass(frozen=True)
class _Content:
    """A version's checked content, as PromptTemplate fields: what sha256 covers, and the
    variables the text uses."""

    name: str
    text: str
    system: str
    output_schema: Any
    variables: list[str]
    sha256: str


def _checked(*, name: str, text: str, system: str, output_schema: Any, variables=None) -> _Content:
    fields = template_check(
        name=name, text=text, system=system, output_schema=output_schema, variables=variables
    )
    sha = content_sha256(system=system, text=text, output_schema=output_schema)
    return _Content(name, text, system, output_schema, fields, sha)


def template_current(name: str) -> PromptTemplate:
    """The current version of ``name``; the built-in defaults are seeded on first use."""
    template = PromptTemplate.objects.filter(name=name, is_current=True).first()
    if template is None:
        if name in DEFAULT_TEMPLATES:
            ensure_default_templates()
            template = PromptTemplate.objects.filter(name=name, is_current=True).first()
    if template is None:
        raise TemplateNotFound(
            f"No prompt template named {name!r}. Create it on the templates page or seed it "
            "with curation.gateway.template_ensure(...)."
        )
    return template


def template_ensure(
    *,
    name: str,
    text: str,
    system: str = "",
    output_schema: Any = None,
    source: str = "",
    title: str = "",
    variables=None,
    description: str = "",
) -> PromptTemplate:
    """Idempotent seeding of a default; returns the current version.

    - no version yet: creates version 1;
    - some version already has this content: nothing changes (a curator's newer edit stays);
    - the content is new and the current version was seeded by code (no author): the code's
      default moved on, so it becomes a new version;
    - the current version was written by a person: it is kept.
    """
    content = _checked(
        name=name, text=text, system=system, output_schema=output_schema, variables=variables
    )
    for _try in range(2):
        try:
            with transaction.atomic():
                versions = list(
                    PromptTemplate.objects.select_for_update().filter(name=name).order_by("version")
                )
                current = next((v for v in versions if v.is_current), None)
                if any(v.sha256 == content.sha256 for v in versions) and current is not None:
                    return current
                if current is not None and current.created_by_id is not None:
                    return current
                return _new_version(
                    versions,
                    content,
                    title=title,
                    description=description,
                    source=source,
                    created_by=None,
                )
        except IntegrityError:
            # Another process seeded the same name at the same moment: read what it wrote.
            continue
    return template_current(name)


def template_create(
    *,
    name: str,
    text: str,
    system: str = "",
    output_schema: Any = None,
    title: str = "",
    description: str = "",
    source: str = "",
    created_by=None,
) -> PromptTemplate:
    content = _checked(name=name, text=text, system=system, output_schema=output_schema)
    if PromptTemplate.objects.filter(name=name).exists():
        raise TemplateError(f"A template named {name!r} already exists; edit it instead.")
    try:
        with transaction.atomic():
            return _new_version(
                [],
                content,
                title=title,
                description=description,
                source=source,
                created_by=created_by,
            )
    except IntegrityError as exc:
        raise TemplateError(f"A template named {name!r} already exists; edit it instead.") from exc


def template_update(
    *,
    name: str,
    text: str | None = None,
    system: str | None = None,
    output_schema: Any = KEEP,
    title: str | None = None,
    description: str | None = None,
    source: str | None = None,
    created_by=None,
) -> PromptTemplate:
    """A new current version when the content changed. Arguments left out keep the current
    version's value (``output_schema=None`` means plain text, so "keep" is the KEEP default).
    A metadata-only edit (title, description, source) updates the current version in place,
    since the hash does not cover it; unchanged input returns the current version untouched."""
    with transaction.atomic():
        versions = list(
            PromptTemplate.objects.select_for_update().filter(name=name).order_by("version")
        )
        current = next((v for v in versions if v.is_current), None)
        if current is None:
            raise TemplateNotFound(f"No prompt template named {name!r}.")
        text = current.text if text is None else text
        system = current.system if system is None else system
        output_schema = current.output_schema if output_schema is KEEP else output_schema
        content = _checked(name=name, text=text, system=system, output_schema=output_schema)
        meta = {
            "title": current.title if title is None else title,
            "description": current.description if description is None else description,
            "source": current.source if source is None else source,
        }
        if current.sha256 == content.sha256:
            changed = [k for k, v in meta.items() if getattr(current, k) != v]
            if changed:
                for k in changed:
                    setattr(current, k, meta[k])
                current.save(update_fields=changed)
            return current
        return _new_version(versions, content, created_by=created_by, **meta)


def template_restore(*, name: str, version: int, created_by=None) -> PromptTemplate:
    """Make an old version's content current again (as a new version, so history stays linear)."""
    old = PromptTemplate.objects.filter(name=name, version=version).first()
    if old is None:
        raise TemplateNotFound(f"No version {version} of template {name!r}.")
    return template_update(
        name=name,
        text=old.text,
        system=old.system,
        output_schema=old.output_schema,
        created_by=created_by,
    )


def _new_version(
    versions: list[PromptTemplate],
    content: _Content,
    *,
    title: str,
    description: str,
    source: str,
    created_by,
) -> PromptTemplate:
    # The one-current constraint is a partial unique index: clear the flag before the insert.
    PromptTemplate.objects.filter(name=content.name, is_current=True).update(is_current=False)
    return PromptTemplate.objects.create(
        **asdict(content),
        version=max((v.version for v in versions), default=0) + 1,
        title=title,
        description=description,
        source=source,
        is_current=True,
        created_by=created_by,
    )


def templates_used(generations) -> list[dict]:
    """The prompt templates ``generations`` (a queryset) were rendered from, once per (name,
    version, SHA-256), sorted: each with the stored version's title, source, system and text
    ("" where that version is gone). What a dataset card lists as its prompts."""
    used = sorted(
        set(
            generations.exclude(template_name="").values_list(
                "template_name", "template_version", "template_sha256"
            )
        )
    )
    stored = PromptTemplate.objects.filter(name__in={u[0] for u in used})
    templates = {(t.name, t.version): t for t in stored}
    out = []
    for name, version, sha in used:
        template = templates.get((name, version))
        out.append(
            {
                "name": name,
                "version": version,
                "sha256": sha,
                "title": template.title if template else "",
                "source": template.source if template else "",
                "system": template.system if template else "",
                "text": template.text if template else "",
            }
        )
    return out


def ensure_default_templates() -> list[PromptTemplate]:
    """Seed (or move forward) the built-in templates (``DEFAULT_TEMPLATES``); idempotent."""
    return [template_ensure(name=name, **spec) for name, spec in DEFAULT_TEMPLATES.items()]
