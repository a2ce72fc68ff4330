"""Which version of a shared prompt template each project renders (``TemplatePin``).

Templates are shared by every project and versioned; only admins write new versions. A project
renders the version it first used until a curator of the project moves it (after seeing the
diff), so neither an admin's edit nor a recipe's default moving on changes what a running
pipeline sends without someone of the project choosing it. Calls outside any project (the
command line, an admin's batch without a project) render the current version.
"""

from __future__ import annotations

import functools
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from annotator.platform.sql_rows import Shape

from ..models import PromptTemplate, TemplatePin
from .templates import TemplateNotFound, template_current, template_ensure

MOVES_KEPT = 50  # earlier pins remembered per (project, template)


def _project_id(project) -> int | None:
    return getattr(project, "pk", project)


def template_for(name: str, *, project=None, pin: bool = True) -> PromptTemplate:
    """The version of ``name`` that ``project`` renders: its pin. A project that never used the
    template gets the current version, pinned from then on when ``pin`` (a call about to be
    made); ``pin=False`` only reads (a page showing the prompt). No project: the current one."""
    project_id = _project_id(project)
    if project_id is None:
        return template_current(name)
    found = (
        TemplatePin.objects.filter(project_id=project_id, name=name)
        .select_related("template")
        .first()
    )
    if found is not None:
        return found.template
    current = template_current(name)
    if not pin:
        return current
    # Two workers of one project may use the template first at once: one pin wins, both read it.
    made, _created = TemplatePin.objects.select_related("template").get_or_create(
        project_id=project_id, name=name, defaults={"template": current}
    )
    return made.template


@functools.cache
def _template_shape() -> Shape:
    return Shape(PromptTemplate, "t")


def _pinned(names, project_id) -> dict[str, PromptTemplate]:
    """The pinned versions of ``names`` for the project, by name: one hand-written statement
    (every model call reads it, a hunt step's on its way to the models; the ORM's
    ``TemplatePin.objects.filter(…).select_related("template")`` costs more to build)."""
    names = list(dict.fromkeys(names))
    if not names:
        return {}
    sql = (
        f"SELECT p.name, {_template_shape().columns} FROM {TemplatePin._meta.db_table} p"
        f" JOIN {PromptTemplate._meta.db_table} t ON t.id = p.template_id"
        f" WHERE p.project_id = %s AND p.name IN ({', '.join(['%s'] * len(names))})"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [project_id, *names])
        rows = cursor.fetchall()
    return {row[0]: _template_shape().build(row, 1) for row in rows}


def templates_for(names, *, project=None, pin: bool = True) -> dict[str, PromptTemplate]:
    """``template_for`` of each name, by name (the pins read in one query)."""
    names = list(names)
    pinned = _pinned(names, _project_id(project)) if _project_id(project) is not None else {}
    return {
        name: pinned.get(name) or template_for(name, project=project, pin=pin) for name in names
    }


def templates_ensure(
    specs: dict[str, dict], *, project=None, pin: bool = True
) -> dict[str, PromptTemplate]:
    """Seed each of ``{name: its keywords}`` (a recipe's ``TEMPLATES``, ``template_ensure``)
    and return, by name, the versions ``project`` renders (no project: the current ones)."""
    current = {name: template_ensure(name=name, **spec) for name, spec in specs.items()}
    project_id = _project_id(project)
    if project_id is None:
        return current
    pinned = _pinned(current, project_id)
    if pin:
        for name in current.keys() - pinned.keys():
            pinned[name] = template_for(name, project=project_id)
    return {**current, **pinned}


def template_pin(*, project, name: str, version: int, pinned_by=None) -> TemplatePin:
    """Move ``project``'s pin of ``name`` to ``version`` (a curator's choice). The version it
    left is kept in ``moves``; pinning the version already pinned changes nothing."""
    target = PromptTemplate.objects.filter(name=name, version=version).first()
    if target is None:
        raise TemplateNotFound(f"No version {version} of template {name!r}.")
    now = timezone.now()
    with transaction.atomic():
        found = (
            TemplatePin.objects.select_for_update()
            .filter(project_id=_project_id(project), name=name)
            .first()
        )
        if found is None:
            return TemplatePin.objects.create(
                project_id=_project_id(project),
                name=name,
                template=target,
                pinned_by=pinned_by,
                pinned_at=now,
            )
        if found.template_id == target.pk:
            return found
        left: dict[str, Any] = {
            "version": found.template.version,
            "pinned_by": found.pinned_by.get_username() if found.pinned_by else None,
            "pinned_at": found.pinned_at.isoformat(),
        }
        found.moves = [*found.moves, left][-MOVES_KEPT:]
        found.template, found.pinned_by, found.pinned_at = target, pinned_by, now
        found.save(update_fields=["template", "pinned_by", "pinned_at", "moves"])
        return found


def template_record(templates: dict[str, PromptTemplate]) -> dict:
    """What a job or an export records of the templates it rendered: version and hash by name."""
    return {n: {"version": t.version, "sha256": t.sha256} for n, t in sorted(templates.items())}
