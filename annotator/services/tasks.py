"""Tasks: reading an upload's rows, creating them in bulk, cancelling them."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from ..kinds import get_kind
from ..models import Assignment, Task, TaskQueue
from ..platform import edge, structured
from ..platform.errors import Invalid, SchemaError


@dataclass
class TaskRow:
    payload: Any
    gold: Any = None
    external_id: str = ""
    line: int = 0


def parse_task_rows(data: bytes | str | list) -> list[TaskRow]:
    """Parse a JSONL upload (or a decoded JSON list) into rows; errors carry line numbers.

    Each line is either a payload object, or ``{"payload": {...}, "gold": {...}, "id": "..."}``.
    """
    errors: list[dict] = []
    rows: list[TaskRow] = []
    if isinstance(data, list):
        items = list(enumerate(data, start=1))
    else:
        if isinstance(data, bytes):
            try:
                data = edge.decode_utf8(data)
            except edge.NotUtf8 as exc:
                raise Invalid(
                    _("The file is not UTF-8 text (%(e)s); save it as UTF-8 and upload it again.")
                    % {"e": exc}
                ) from None
        items = []
        for number, line in enumerate(data.splitlines(), start=1):
            if not line.strip():
                continue
            too_long = edge.line_problem(line, number)
            if too_long:
                errors.append({"line": number, "error": too_long})
                continue
            try:
                items.append((number, structured.loads(line)))
            except structured.StructuredTextError as exc:
                errors.append({"line": number, "error": exc.message})
    for number, item in items:
        if not isinstance(item, dict):
            errors.append({"line": number, "error": "each line must be a JSON object"})
            continue
        unstorable = edge.row_problem(item)
        if unstorable:
            errors.append({"line": number, "error": unstorable})
            continue
        if "payload" in item:
            extra = set(item) - {"payload", "gold", "id"}
            if extra:
                errors.append(
                    {"line": number, "error": f"unexpected keys: {', '.join(sorted(extra))}"}
                )
                continue
            rows.append(
                TaskRow(item["payload"], item.get("gold"), str(item.get("id") or ""), number)
            )
        else:
            rows.append(TaskRow(item, None, "", number))
    if errors:
        raise Invalid(_("%(n)d line(s) could not be read.") % {"n": len(errors)}, errors)
    if not rows:
        raise Invalid(_("The upload holds no tasks."))
    return rows


def validate_task_rows(*, queue: TaskQueue, rows: list[TaskRow]) -> None:
    kind = get_kind(queue.kind)
    errors = []
    for row in rows:
        try:
            kind.validate_payload(row.payload)
            if row.gold is not None:
                kind.validate_gold(row.gold, queue.config, row.payload)
        except SchemaError as exc:
            errors.append({"line": row.line, "error": str(exc)})
    if errors:
        raise Invalid(
            _("%(n)d of %(total)d task(s) do not fit the %(kind)s kind; nothing was imported.")
            % {"n": len(errors), "total": len(rows), "kind": queue.kind},
            errors,
        )


def task_rows_check(*, queue: TaskQueue, data: bytes | str | list) -> list[TaskRow]:
    """``parse_task_rows`` then ``validate_task_rows``, every problem reported at once: when some
    lines (or list items) cannot be read, the ones that can are still checked against the kind's
    schema, so a curator fixes the upload in one pass (the form and the API alike)."""
    try:
        rows = parse_task_rows(data)
    except Invalid as exc:
        if not exc.errors:
            raise
        bad = {e["line"] for e in exc.errors}
        readable: list[TaskRow] = []
        if isinstance(data, list):
            for number, item in enumerate(data, start=1):
                if number not in bad:
                    readable += [
                        dataclasses.replace(row, line=number) for row in parse_task_rows([item])
                    ]
        else:
            text = data.decode("utf-8-sig") if isinstance(data, bytes) else data
            # Blank the unreadable lines: blank lines are skipped but keep the numbering.
            lines = text.splitlines()
            kept = "\n".join("" if n in bad else line for n, line in enumerate(lines, start=1))
            if kept.strip():
                readable = parse_task_rows(kept)
        more: list[dict] = []
        try:
            validate_task_rows(queue=queue, rows=readable)
        except Invalid as schema_exc:
            more = schema_exc.errors
        errors = sorted([*exc.errors, *more], key=lambda e: e["line"])
        raise Invalid(
            _("%(n)d line(s) have problems; nothing was imported.") % {"n": len(errors)}, errors
        ) from exc
    validate_task_rows(queue=queue, rows=rows)
    return rows


def tasks_bulk_create(*, queue: TaskQueue, rows: list[TaskRow], batch_size: int = 2000) -> int:
    """All or nothing: every row is validated before any is written."""
    validate_task_rows(queue=queue, rows=rows)
    objs = [
        Task(
            queue=queue,
            payload=row.payload,
            gold=row.gold,
            is_gold=row.gold is not None,
            external_id=row.external_id[:200],
            required=queue.redundancy,
        )
        for row in rows
    ]
    with transaction.atomic():
        Task.objects.bulk_create(objs, batch_size=batch_size)
    return len(objs)


@dataclass
class CancelResult:
    cancelled: int  # open tasks withdrawn now
    skipped: int  # tasks already finished (decided, undecided or cancelled), left as they were
    leases_ended: int  # leases ended with them; their holders' answers are refused (409)

    @property
    def message(self) -> str:
        text = ngettext("%(n)d task cancelled.", "%(n)d tasks cancelled.", self.cancelled) % {
            "n": self.cancelled
        }
        if self.skipped:
            text += " " + ngettext(
                "%(n)d had already finished and was left as it was.",
                "%(n)d had already finished and were left as they were.",
                self.skipped,
            ) % {"n": self.skipped}
        return text


_ID_CHUNK = 500  # ids per statement: SQLite's host parameter limit is far above this


def _chunks(ids: list[int]) -> Iterable[list[int]]:
    for start in range(0, len(ids), _ID_CHUNK):
        yield ids[start : start + _ID_CHUNK]


def _task_ids(task_ids: Any) -> list[int]:
    """A list of task ids, deduplicated in order; anything else is refused with a message."""
    if isinstance(task_ids, str | bytes | dict) or not isinstance(task_ids, Iterable):
        raise Invalid(_("Send the task ids as a list of integers."))
    ids: list[int] = []
    errors = []
    for index, value in enumerate(task_ids):
        if isinstance(value, bool) or not isinstance(value, int):
            errors.append({"index": index, "error": _("not an integer task id")})
        else:
            ids.append(value)
    if errors:
        raise Invalid(_("Task ids must be integers."), errors[:50])
    if not ids:
        raise Invalid(_("Name at least one task."))
    return list(dict.fromkeys(ids))


def tasks_cancel(
    *, queue: TaskQueue, task_ids: Iterable[int], reason: str = "", now=None
) -> CancelResult:
    """Withdraw open tasks of ``queue``: they are never offered again and their leases end.

    All or nothing: an id that is not a task of this queue refuses the whole call and nothing is
    written. Tasks that already finished (decided, undecided or cancelled) are skipped and
    counted, so a repeated cancel is harmless and a task decided meanwhile keeps its decision.
    A cancelled task keeps the answers it has; its outcome records ``{"cancelled": true,
    "reason": ...}`` and ``decided_at`` when it left the pool. No outcome handler runs: nothing
    was decided. An annotator holding one of its leases is told on submit, skip, report or
    heartbeat that the curator withdrew it (409).
    """
    now = now or timezone.now()
    ids = _task_ids(task_ids)
    reason = (reason or "").strip()[:2000]
    in_range = sorted(i for i in ids if 0 < i < 2**63)
    with transaction.atomic():
        # Task rows first and in id order, as every other path locks them.
        states: dict[int, str] = {}
        for chunk in _chunks(in_range):
            states.update(
                Task.objects.select_for_update()
                .filter(queue=queue, pk__in=chunk)
                .order_by("id")
                .values_list("id", "state")
            )
        foreign = [i for i in ids if i not in states]
        if foreign:
            shown = ", ".join(str(i) for i in foreign[:20]) + (" …" if len(foreign) > 20 else "")
            raise Invalid(
                _("%(n)d id(s) are not tasks of this queue: %(ids)s. Nothing was cancelled.")
                % {"n": len(foreign), "ids": shown},
                [{"id": i, "error": _("not a task of this queue")} for i in foreign[:50]],
            )
        open_ids = [i for i in sorted(states) if states[i] == Task.State.OPEN]
        ended = 0
        for chunk in _chunks(open_ids):
            ended += Assignment.objects.filter(
                task_id__in=chunk, state=Assignment.State.LEASED
            ).update(state=Assignment.State.EXPIRED, finished_at=now)
            Task.objects.filter(pk__in=chunk).update(
                state=Task.State.CANCELLED,
                outcome={"cancelled": True, "reason": reason},
                decided_at=now,
                active_count=F("done_count"),  # no live leases are left
            )
    return CancelResult(
        cancelled=len(open_ids), skipped=len(ids) - len(open_ids), leases_ended=ended
    )
