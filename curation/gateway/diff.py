"""Side-by-side line diff with word-level highlights, for comparing template versions.

Returns plain rows (no HTML) so the template escapes every piece of text itself. No Django
import.
"""

from __future__ import annotations

import difflib
import re

CONTEXT = 3  # unchanged lines kept around each change; longer runs fold into one row

_TOKENS = re.compile(r"\s+|\w+|[^\w\s]")


def _segments(a: str, b: str) -> tuple[list[dict], list[dict]]:
    ta, tb = _TOKENS.findall(a), _TOKENS.findall(b)
    sm = difflib.SequenceMatcher(None, ta, tb, autojunk=False)
    left: list[dict] = []
    right: list[dict] = []
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if i2 > i1:
            left.append({"text": "".join(ta[i1:i2]), "changed": tag != "equal"})
        if j2 > j1:
            right.append({"text": "".join(tb[j1:j2]), "changed": tag != "equal"})
    return left, right


def _plain(text: str) -> list[dict]:
    return [{"text": text, "changed": False}]


def side_by_side(a: str, b: str, *, context: int = CONTEXT) -> list[dict]:
    """Rows ``{"kind": equal|change|delete|insert|fold, "ln", "rn", "left", "right"}``;
    ``left``/``right`` are lists of ``{"text", "changed"}`` segments; a fold row has ``n``."""
    la, lb = (a or "").splitlines(), (b or "").splitlines()
    sm = difflib.SequenceMatcher(None, la, lb, autojunk=False)
    opcodes = sm.get_opcodes()
    rows: list[dict] = []
    for index, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        if tag == "equal":
            span = list(range(i2 - i1))
            first, last = index == 0, index == len(opcodes) - 1
            keep_head = 0 if first else context
            keep_tail = 0 if last else context
            if len(span) > keep_head + keep_tail + 1:
                shown = span[:keep_head] + [None] + span[len(span) - keep_tail :]
            else:
                shown = span
            for k in shown:
                if k is None:
                    rows.append({"kind": "fold", "n": len(span) - keep_head - keep_tail})
                    continue
                rows.append(
                    {
                        "kind": "equal",
                        "ln": i1 + k + 1,
                        "rn": j1 + k + 1,
                        "left": _plain(la[i1 + k]),
                        "right": _plain(lb[j1 + k]),
                    }
                )
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            old = la[i1 + k] if i1 + k < i2 else None
            new = lb[j1 + k] if j1 + k < j2 else None
            if old is not None and new is not None:
                left, right = _segments(old, new)
                rows.append(
                    {
                        "kind": "change",
                        "ln": i1 + k + 1,
                        "rn": j1 + k + 1,
                        "left": left,
                        "right": right,
                    }
                )
            elif old is not None:
                rows.append(
                    {
                        "kind": "delete",
                        "ln": i1 + k + 1,
                        "rn": None,
                        "left": [{"text": old, "changed": True}],
                        "right": [],
                    }
                )
            else:
                rows.append(
                    {
                        "kind": "insert",
                        "ln": None,
                        "rn": j1 + k + 1,
                        "left": [],
                        "right": [{"text": new, "changed": True}],
                    }
                )
    return rows


def diff_stats(rows: list[dict]) -> dict:
    return {
        "changed": sum(r["kind"] == "change" for r in rows),
        "deleted": sum(r["kind"] == "delete" for r in rows),
        "inserted": sum(r["kind"] == "insert" for r in rows),
    }
