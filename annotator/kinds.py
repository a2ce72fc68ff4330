"""The task-kind registry.

Each kind declares its payload and response schema (JSON Schema), how a response is validated
and cleaned, the template partial that renders it, its keyboard map, and how its responses
aggregate. Recipes look kinds up by name; queues store the name.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from django.utils.translation import gettext_lazy, gettext_noop
from jsonschema import Draft202012Validator

from .aggregation import Decision, decide, decide_multilabel
from .platform.errors import SchemaError


def _image_schema() -> dict:
    return {
        "type": "object",
        "required": ["url"],
        "properties": {
            "url": {"type": "string", "minLength": 1, "maxLength": 2000},
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


def _pick(source: dict, names: tuple[str, ...]) -> dict:
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
        out = _pick(payload, self.public_fields)
        if "images" in out:
            out["images"] = [public_image(i) for i in out["images"]]
        if "image" in out:
            out["image"] = public_image(out["image"])
        return out

    def public_config(self, config: dict) -> dict:
        """The queue settings the workspace uses (and shows) for this kind."""
        return _pick(config, self.public_config_fields)

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


REGISTRY: dict[str, Kind] = {}


def register(kind: Kind) -> Kind:
    if kind.name in REGISTRY:
        raise ValueError(f"task kind {kind.name!r} registered twice")
    REGISTRY[kind.name] = kind
    return kind


def get_kind(name: str) -> Kind:
    try:
        return REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(REGISTRY))
        raise SchemaError(f"Unknown task kind {name!r}; known kinds: {known}.") from None


def kind_choices() -> list[tuple[str, str]]:
    """(name, label) pairs; labels are marked with gettext_noop and translated here."""
    return [(k.name, gettext_lazy(k.label)) for k in REGISTRY.values()]


# --- pair_verify: NaturalBench Sec. 3 step 1 ---------------------------------------------------
class PairVerify(Kind):
    public_fields = ("images",)

    def keys(self, config, payload=None):
        return [
            Key("y", gettext_noop("Yes, one caption fits both: discard")),
            Key("n", gettext_noop("No: keep the pair")),
        ]

    def response_schema(self, config, payload):
        return {
            "type": "object",
            "required": ["decision"],
            "additionalProperties": False,
            "properties": {"decision": {"enum": ["keep", "discard"]}},
        }

    def vote(self, response):
        return response["decision"]


register(
    PairVerify(
        name="pair_verify",
        label=gettext_noop("Pair verification"),
        description=gettext_noop(
            "Two images with two captions: could one caption describe both images?"
        ),
        payload_schema={
            "type": "object",
            "required": ["images"],
            "properties": {
                "images": {
                    "type": "array",
                    "minItems": 2,
                    "maxItems": 2,
                    "items": {**IMAGE, "required": ["url", "caption"]},
                }
            },
        },
        template="annotator/kinds/pair_verify.html",
    )
)


# --- vqa_choice: NaturalBench Sec. 3 step 2 -----------------------------------------------------
UNANSWERABLE = "Unanswerable"


class VqaChoice(Kind):
    public_fields = ("image", "question", "choices", "language")

    def options(self, payload: dict) -> list[str]:
        return [*payload["choices"], UNANSWERABLE]

    def keys(self, config, payload=None):
        options = self.options(payload) if payload else []
        return [Key(str(i + 1), o) for i, o in enumerate(options)]

    def response_schema(self, config, payload):
        return {
            "type": "object",
            "required": ["answer"],
            "additionalProperties": False,
            "properties": {"answer": {"enum": self.options(payload)}},
        }

    def vote(self, response):
        return response["answer"]


register(
    VqaChoice(
        name="vqa_choice",
        label=gettext_noop("Visual question (choice)"),
        description=gettext_noop("One image, a question, candidate answers and “Unanswerable”."),
        payload_schema={
            "type": "object",
            "required": ["image", "question", "choices"],
            "properties": {
                "image": IMAGE,
                "question": TEXT,
                "choices": {
                    "type": "array",
                    "items": TEXT,
                    "minItems": 2,
                    "maxItems": 8,
                    "uniqueItems": True,
                },
                "language": {"type": "string"},
            },
        },
        template="annotator/kinds/vqa_choice.html",
    )
)


# --- skill_tags: NaturalBench App. C -------------------------------------------------------------
class SkillTags(Kind):
    public_fields = ("images", "questions")
    public_config_fields = ("min_tags", "max_tags")

    def tags(self, config: dict) -> list[dict]:
        return [t for g in config.get("taxonomy", []) for t in g["tags"]]

    def keys(self, config, payload=None):
        keys = [Key(t["key"], t["label"]) for t in self.tags(config) if t.get("key")]
        return [*keys, Key("/", gettext_noop("Filter tags"))]

    def validate_config(self, config):
        super().validate_config(config)
        ids = [t["id"] for t in self.tags(config)]
        if len(ids) != len(set(ids)):
            raise SchemaError("config.taxonomy: tag ids must be unique")
        keys = [t["key"] for t in self.tags(config) if t.get("key")]
        # Keys the workspace itself uses: skip, help, filter, instructions, zoom, report.
        reserved = {"s", "?", "/", "i", "z", "!"}
        if len(keys) != len(set(keys)) or reserved & set(keys):
            raise SchemaError(
                "config.taxonomy: shortcut keys must be unique and not one of s ? / i z !"
            )

    def response_schema(self, config, payload):
        return {
            "type": "object",
            "required": ["tags"],
            "additionalProperties": False,
            "properties": {
                "tags": {
                    "type": "array",
                    "items": {"enum": [t["id"] for t in self.tags(config)]},
                    "minItems": config.get("min_tags", 1),
                    "maxItems": config.get("max_tags", 8),
                    "uniqueItems": True,
                }
            },
        }

    def public_config(self, config):
        out = super().public_config(config)
        out["taxonomy"] = [
            {
                "group": g["group"],
                "tags": [_pick(t, ("id", "label", "key", "description")) for t in g["tags"]],
            }
            for g in config.get("taxonomy", [])
        ]
        return out

    def vote(self, response):
        return frozenset(response["tags"])

    def is_correct(self, response, gold):
        return set(response["tags"]) == set(gold["tags"])


register(
    SkillTags(
        name="skill_tags",
        label=gettext_noop("Skill tags"),
        description=gettext_noop(
            "Image(s) and question(s): choose 1–8 skill tags from the queue's taxonomy."
        ),
        payload_schema={
            "type": "object",
            "required": ["images", "questions"],
            "properties": {"images": IMAGES, "questions": {"type": "array", "items": TEXT}},
        },
        config_schema={
            "type": "object",
            "required": ["taxonomy"],
            "properties": {
                "taxonomy": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["group", "tags"],
                        "properties": {
                            "group": TEXT,
                            "tags": {
                                "type": "array",
                                "minItems": 1,
                                "items": {
                                    "type": "object",
                                    "required": ["id", "label"],
                                    "properties": {
                                        "id": TEXT,
                                        "label": TEXT,
                                        "key": {"type": "string", "minLength": 1, "maxLength": 1},
                                        "description": {"type": "string"},
                                    },
                                },
                            },
                        },
                    },
                },
                "min_tags": {"type": "integer", "minimum": 1},
                "max_tags": {"type": "integer", "minimum": 1, "maximum": 27},
            },
        },
        template="annotator/kinds/skill_tags.html",
        multilabel=True,
    )
)


# --- forced_choice: VisIT-Bench Sec. 4.2 ---------------------------------------------------------
class ForcedChoice(Kind):
    public_fields = ("images", "instruction", "caption")

    def keys(self, config, payload=None):
        return [
            Key("a", gettext_noop("Left response is better")),
            Key("b", gettext_noop("Right response is better")),
        ]

    def response_schema(self, config, payload):
        return {
            "type": "object",
            "required": ["choice"],
            "properties": {"choice": {"enum": ["left", "right"]}},
        }

    def presentation(self, rng):
        # Left/right randomised per assignment and recorded, so position bias can be measured.
        return {"swapped": rng.random() < 0.5}

    def sides(self, payload: dict, presentation: dict) -> tuple[dict, dict]:
        """The (left, right) candidates of one assignment."""
        first, second = payload["candidates"]
        return (second, first) if presentation.get("swapped") else (first, second)

    def public_payload(self, payload, presentation):
        # Blind rating: the candidates go out by side and text only. Their ids (model names,
        # "human reference") stay here; a "left"/"right" answer is mapped back by the
        # assignment's presentation in clean_response.
        out = super().public_payload(payload, presentation)
        left, right = self.sides(payload, presentation)
        out["candidates"] = [
            {"side": "left", "text": left["text"]},
            {"side": "right", "text": right["text"]},
        ]
        return out

    def clean_response(self, response, *, config, payload, presentation):
        check(response, self.response_schema(config, payload), "response")
        left, right = self.sides(payload, presentation)
        winner = (left if response["choice"] == "left" else right)["id"]
        swapped = bool(presentation.get("swapped"))
        return {"choice": response["choice"], "swapped": swapped, "winner": winner}

    def validate_gold(self, gold, config, payload):
        ids = [c["id"] for c in payload["candidates"]]
        check(
            gold,
            {"type": "object", "required": ["winner"], "properties": {"winner": {"enum": ids}}},
            "gold",
        )

    def vote(self, response):
        return response["winner"]


register(
    ForcedChoice(
        name="forced_choice",
        label=gettext_noop("Forced choice A/B"),
        description=gettext_noop("A context and two responses; pick the better one (no tie)."),
        payload_schema={
            "type": "object",
            "required": ["instruction", "candidates"],
            "properties": {
                "images": IMAGES,
                "instruction": TEXT,
                "caption": {"type": "string"},
                "candidates": {
                    "type": "array",
                    "minItems": 2,
                    "maxItems": 2,
                    "items": {
                        "type": "object",
                        "required": ["id", "text"],
                        "properties": {"id": TEXT, "text": {"type": "string"}},
                    },
                },
            },
        },
        template="annotator/kinds/forced_choice.html",
    )
)


# --- review: VLind-Bench App. A, VisIT-Bench reference checks, VHExpansion negations -------------
class Review(Kind):
    public_fields = ("title", "images", "text", "fields")

    def keys(self, config, payload=None):
        keys = [Key("a", gettext_noop("Accept")), Key("r", gettext_noop("Reject"))]
        for i, reason in enumerate(config.get("reason_codes", [])[:9]):
            keys.append(Key(str(i + 1), reason["label"]))
        return keys

    def public_config(self, config):
        out = {"criteria": list(config.get("criteria", []))}
        out["reason_codes"] = [_pick(r, ("code", "label")) for r in config.get("reason_codes", [])]
        return out

    def response_schema(self, config, payload):
        codes = [r["code"] for r in config.get("reason_codes", [])]
        return {
            "type": "object",
            "required": ["verdict"],
            "additionalProperties": False,
            "properties": {
                "verdict": {"enum": ["accept", "reject"]},
                "checked": {
                    "type": "array",
                    "items": {
                        "type": "integer",
                        "minimum": 0,
                        "maximum": max(len(config.get("criteria", [])) - 1, 0),
                    },
                    "uniqueItems": True,
                },
                "reason": {"enum": [*codes, None, ""]},
                "comment": {"type": "string", "maxLength": 2000},
            },
        }

    def clean_response(self, response, *, config, payload, presentation):
        cleaned = super().clean_response(
            response, config=config, payload=payload, presentation=presentation
        )
        if cleaned["verdict"] == "accept" and cleaned.get("reason"):
            raise SchemaError("response.reason: a reason code only goes with a rejection")
        cleaned.setdefault("checked", [])
        cleaned["reason"] = cleaned.get("reason") or None
        cleaned["comment"] = cleaned.get("comment", "").strip()
        return cleaned

    def vote(self, response):
        return response["verdict"]

    def outcome(self, decision, responses):
        out = super().outcome(decision, responses)
        out["reasons"] = sorted({r["reason"] for r in responses if r.get("reason")})
        out["comments"] = [r["comment"] for r in responses if r.get("comment")]
        return out


register(
    Review(
        name="review",
        label=gettext_noop("Review (accept / reject)"),
        description=gettext_noop(
            "Accept or reject an item against a checklist, with an optional reason."
        ),
        payload_schema={
            "type": "object",
            "required": ["title"],
            "properties": {
                "title": TEXT,
                "images": IMAGES,
                "text": {"type": "string"},
                "fields": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        },
        config_schema={
            "type": "object",
            "properties": {
                "criteria": {"type": "array", "items": TEXT, "maxItems": 12},
                "reason_codes": {
                    "type": "array",
                    "maxItems": 9,
                    "items": {
                        "type": "object",
                        "required": ["code", "label"],
                        "properties": {"code": TEXT, "label": TEXT},
                    },
                },
            },
        },
        template="annotator/kinds/review.html",
    )
)


# --- write_text: VisIT-Bench instructions and instruction-conditioned captions -------------------
class WriteText(Kind):
    public_fields = ("prompt", "images", "draft", "context")
    public_config_fields = ("min_length", "max_length", "allow_image", "require_image")

    def keys(self, config, payload=None):
        return [Key("e", gettext_noop("Edit the text")), Key("Ctrl+Enter", gettext_noop("Submit"))]

    def response_schema(self, config, payload):
        return {
            "type": "object",
            "required": ["text"],
            "additionalProperties": False,
            "properties": {
                "text": {
                    "type": "string",
                    "minLength": config.get("min_length", 1),
                    "maxLength": config.get("max_length", 5000),
                },
                "image": {"type": "string", "maxLength": 500},
            },
        }

    def clean_response(self, response, *, config, payload, presentation):
        if isinstance(response, dict) and isinstance(response.get("text"), str):
            response = {**response, "text": response["text"].strip()}
        cleaned = super().clean_response(
            response, config=config, payload=payload, presentation=presentation
        )
        if config.get("require_image") and not cleaned.get("image"):
            raise SchemaError("response.image: this queue asks for an image upload")
        draft = payload.get("draft")
        cleaned["edited_from_draft"] = bool(draft) and cleaned["text"] != draft.strip()
        return cleaned

    def vote(self, response):
        return response["text"]

    def aggregate(self, responses, rule):
        # Free text has nothing to vote on: every response is kept for the next stage.
        return Decision(True, None, None, {})

    def outcome(self, decision, responses):
        return {"texts": [r["text"] for r in responses], "n": len(responses)}

    def is_correct(self, response, gold):
        return response["text"].strip().casefold() == gold["text"].strip().casefold()


register(
    WriteText(
        name="write_text",
        label=gettext_noop("Write text"),
        description=gettext_noop(
            "Free text within length bounds, optionally editing an LLM draft."
        ),
        payload_schema={
            "type": "object",
            "required": ["prompt"],
            "properties": {
                "prompt": TEXT,
                "images": IMAGES,
                "draft": {"type": "string"},
                "context": {"type": "string"},
            },
        },
        config_schema={
            "type": "object",
            "properties": {
                "min_length": {"type": "integer", "minimum": 1},
                "max_length": {"type": "integer", "minimum": 1, "maximum": 20000},
                "allow_image": {"type": "boolean"},
                "require_image": {"type": "boolean"},
            },
        },
        template="annotator/kinds/write_text.html",
        collect_only=True,
    )
)
