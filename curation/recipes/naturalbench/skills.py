"""NaturalBench's skill taxonomy (naturalbench.txt Sec. 4 Fig. 6, App. C Table 8): 27 leaves in
four groups — 8 objects, 8 attributes, 6 relations (spatial split in 4 subtypes) and 5 kinds of
reasoning, as data in ``skills.json``. The help text of each tag is Table 8's definition of its
skill type; leaves that Table 8 defines only as part of a type (Animal, Color, Proximity, …) say
which part first.

The crowd demo's skill_tags queue tags with this taxonomy too (``tags`` lends it to
``annotator.demo.lent``), so a tag means the same everywhere; keys avoid the workspace's own
(s ? / i z !). Pure: no Django import.
"""

from __future__ import annotations

import json
from pathlib import Path

_DATA = json.loads((Path(__file__).parent / "skills.json").read_text(encoding="utf-8"))


def _tag(tid: str, label: str, key: str, part: str, definition: str) -> dict:
    text = _DATA["definitions"][definition]
    return {
        "id": tid,
        "label": label,
        "key": key,
        "description": f"{part} {text}" if part else text,
    }


TAXONOMY: list[dict] = [
    {"group": group["group"], "tags": [_tag(*tag) for tag in group["tags"]]}
    for group in _DATA["taxonomy"]
]
TAGS: list[dict] = [t for group in TAXONOMY for t in group["tags"]]
INSTRUCTIONS: str = _DATA["instructions"]
# The ``skill_tags`` queue config: the taxonomy and the 1–8 bounds.
QUEUE_CONFIG = {"taxonomy": TAXONOMY, "min_tags": _DATA["min_tags"], "max_tags": _DATA["max_tags"]}


def labels(tag_ids) -> list[str]:
    """Tag ids → their labels, in taxonomy order (the exported ``Skills`` spell labels)."""
    wanted = set(tag_ids)
    return [t["label"] for t in TAGS if t["id"] in wanted]
