"""The task-kind registry.

Each kind declares its payload and response schema (JSON Schema), how a response is validated
and cleaned, the template partial that renders it, its keyboard map, and how its responses
aggregate. Recipes look kinds up by name; queues store the name. Importing this package registers
the built-in kinds, in the order the queue form offers them.
"""

from .base import (
    IMAGE,
    IMAGES,
    OTHER_REASON,
    OTHER_REPORT_REASON,
    REGISTRY,
    REPORT_REASONS,
    REPORT_REASONS_SCHEMA,
    TEXT,
    Key,
    Kind,
    check,
    get_kind,
    kind_choices,
    public_image,
    register,
    report_reasons,
)
from .builtin import UNANSWERABLE, ForcedChoice, PairVerify, Review, SkillTags, VqaChoice, WriteText

__all__ = [
    "REGISTRY",
    "ForcedChoice",
    "IMAGE",
    "IMAGES",
    "Key",
    "Kind",
    "OTHER_REASON",
    "OTHER_REPORT_REASON",
    "PairVerify",
    "REPORT_REASONS",
    "REPORT_REASONS_SCHEMA",
    "Review",
    "SkillTags",
    "TEXT",
    "UNANSWERABLE",
    "VqaChoice",
    "WriteText",
    "check",
    "get_kind",
    "kind_choices",
    "public_image",
    "register",
    "report_reasons",
]
