"""Task kinds: ``Kind`` (payload and response schema, validation, template, keys, aggregation),
the registry, and what kinds share (image schema, report reasons)."""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from django.utils.translation import gettext_lazy, gettext_noop
from jsonschema import Draft202012Validator

from ..aggregation import Decision, decide, decide_multilabel
from ..platform.errors import SchemaError
from ..platform.registry import Registry


def _image_schema() -> dict:
    return {
        "type": "object",
        "required": ["url"],
        "properties": {
            # http(s), a path on this site (/media/…, /static/…) or an inline raster image
            # (data:image/png;base64,…): never javascript:, another data: type, SVG or a
            # protocol-relative //host (the workspace renders it as <img src>).
            "url": {
                "type": "string",
                "minLength": 1,
                "maxLength": 2000,
                "pattern": (
                    r"^(https?://[^\s/]+(/.*)?|/(?![/\\]).*"
                    r"|data:image/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]+)$"
                ),
            },
            "alt": {"type": "string"},
            "caption": {"type": "string"},
        },
    }


IMAGE = _image_schema()


IMAGES = {"type": "array", "items": IMAGE, "maxItems": 8}


TEXT = {"type": "string", "minLength": 1}


def public_image(image: dict) -> dict:
    """What the workspace shows of an image: its address, alt text and caption."""
    return {k: image[k] for k in ("url", "alt", "caption") if k in image}


def fields_pick(source: dict, names: tuple[str, ...]) -> dict:
    return {name: source[name] for name in names if name in source}


# Why a crowdworker reports a task. A queue may name its own in ``config["report_reasons"]``
# (``[{"code": ..., "label": ...}]``); "other" is always offered and is the only code that
# takes free text.
OTHER_REASON = "other"


REPORT_REASONS = (
    {"code": "broken_image", "label": gettext_noop("An image does not load or is broken")},
    {"code": "unclear", "label": gettext_noop("The task is unclear or cannot be answered")},
    {"code": "offensive", "label": gettext_noop("Offensive or private content")},
)


OTHER_REPORT_REASON = {"code": OTHER_REASON, "label": gettext_noop("Something else")}


REPORT_REASONS_SCHEMA = {
    "type": "array",
    "maxItems": 12,
    "items": {
        "type": "object",
        "required": ["code", "label"],
        "additionalProperties": False,
        "properties": {
            "code": {"type": "string", "pattern": "^[a-z0-9_]{1,40}$"},
            "label": {"type": "string", "minLength": 1, "maxLength": 200},
        },
    },
}


def report_reasons(config: dict) -> list[dict]:
    """The queue's report reasons, "other" last (its own codes, else the defaults)."""
    named = [dict(r) for r in config.get("report_reasons") or REPORT_REASONS]
    return [*(r for r in named if r["code"] != OTHER_REASON), dict(OTHER_REPORT_REASON)]


def check(instance: Any, schema: dict, what: str) -> None:
    """Validate against a JSON schema; raise SchemaError naming the first problem's path."""
    errors = sorted(Draft202012Validator(schema).iter_errors(instance), key=lambda e: list(e.path))
    if errors:
        err = errors[0]
        where = ".".join(str(p) for p in err.absolute_path)
        raise SchemaError(f"{what}{'.' + where if where else ''}: {err.message}")


@dataclass(frozen=True)
class Key:
    key: str
    label: str


@dataclass
class Kind:
    name: str = ""
    label: str = ""
    description: str = ""
    payload_schema: dict = field(default_factory=dict)
    config_schema: dict = field(default_factory=lambda: {"type": "object"})
    template: str = ""
    multilabel: bool = False
    collect_only: bool = False

    # --- declaration -----------------------------------------------------------------------
    def keys(self, config: dict, payload: dict | None = None) -> list[Key]:
        """Every key the task page listens to, for buttons and the help overlay."""
        return []

    def response_schema(self, config: dict, payload: dict) -> dict:
        raise NotImplementedError

    # --- validation ------------------------------------------------------------------------
    def validate_payload(self, payload: Any) -> None:
        check(payload, self.payload_schema, "payload")

    def validate_config(self, config: Any) -> None:
        check(config, self.config_schema, "config")
        if isinstance(config, dict) and "report_reasons" in config:
            check(config["report_reasons"], REPORT_REASONS_SCHEMA, "config.report_reasons")
            codes = [r["code"] for r in config["report_reasons"]]
            if len(codes) != len(set(codes)):
                raise SchemaError("config.report_reasons: codes must be unique")

    def validate_gold(self, gold: Any, config: dict, payload: dict) -> None:
        check(gold, self.response_schema(config, payload), "gold")

    def clean_response(
        self, response: Any, *, config: dict, payload: dict, presentation: dict
    ) -> dict:
        check(response, self.response_schema(config, payload), "response")
        return dict(response)

    # --- per assignment --------------------------------------------------------------------
    def presentation(self, rng: random.Random) -> dict:
        """How this assignment shows the task (e.g. left/right order); stored on it."""
        return {}

    # --- what a crowdworker receives -------------------------------------------------------
    # The workspace page and the JSON API both render from these, so the JSON a crowdworker
    # gets carries exactly what their page shows: no gold, no provenance (model names, source
    # ids, categories), nothing a recipe keeps in the payload for itself.
    public_fields: ClassVar[tuple[str, ...]] = ()
    public_config_fields: ClassVar[tuple[str, ...]] = ()

    def public_payload(self, payload: dict, presentation: dict) -> dict:
        """The payload as the workspace shows it for one assignment."""
        out = fields_pick(payload, self.public_fields)
        if "images" in out:
            out["images"] = [public_image(i) for i in out["images"]]
        if "image" in out:
            out["image"] = public_image(out["image"])
        return out

    def public_config(self, config: dict) -> dict:
        """The queue settings the workspace uses (and shows) for this kind."""
        return fields_pick(config, self.public_config_fields)

    def public_response(self, response: dict) -> dict:
        """A stored answer as its author gave it (their history): nothing the server added."""
        return dict(response) if isinstance(response, dict) else response

    # --- aggregation -----------------------------------------------------------------------
    def vote(self, response: dict) -> Hashable:
        raise NotImplementedError

    def aggregate(self, responses: Sequence[dict], rule: str) -> Decision:
        if self.multilabel:
            return decide_multilabel([frozenset(self.vote(r)) for r in responses], rule)
        return decide([self.vote(r) for r in responses], rule)

    def outcome(self, decision: Decision, responses: Sequence[dict]) -> dict:
        label = decision.label
        if isinstance(label, frozenset):
            label = sorted(label)
        return {"label": label, "counts": decision.counts, "n": len(responses)}

    def is_correct(self, response: dict, gold: dict) -> bool:
        return self.vote(response) == self.vote(gold)


REGISTRY: Registry[Kind] = Registry("task kind", "kinds", missing=SchemaError)


def register(kind: Kind) -> Kind:
    return REGISTRY.add(kind.name, kind)


def get_kind(name: str) -> Kind:
    return REGISTRY.lookup(name)


def kind_choices() -> list[tuple[str, str]]:
    """(name, label) pairs; labels are marked with gettext_noop and translated here."""
    return [(k.name, gettext_lazy(k.label)) for k in REGISTRY.values()]
