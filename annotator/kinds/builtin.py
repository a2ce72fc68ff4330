"""The built-in task kinds, registered in the order the queue form offers them: pair_verify,
vqa_choice, skill_tags (NaturalBench), forced_choice (VisIT-Bench), review (VLind-Bench,
VisIT-Bench, VHExpansion), write_text (VisIT-Bench)."""

from __future__ import annotations

from django.utils.translation import gettext_noop

from ..aggregation import Decision
from ..platform.errors import SchemaError
from .base import IMAGE, IMAGES, TEXT, Key, Kind, check, fields_pick, register


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
                "tags": [fields_pick(t, ("id", "label", "key", "description")) for t in g["tags"]],
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

    def public_response(self, response):
        # The side pressed; the candidate it maps to (a model name, say) stays on the server.
        return {"choice": response.get("choice")}

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
# The checklist's keys, criterion by criterion (the config allows 12): letters no other key of a
# review task or of the workspace uses (a / r verdicts, digits reasons, s i z u h b c e …).
CRITERION_KEYS = "qwtyopdfgjkl"


def criterion_keys(config: dict) -> list[tuple[int, str, str]]:
    """(index, key, text) of each review criterion."""
    return [(i, CRITERION_KEYS[i], c) for i, c in enumerate(config.get("criteria", []))]


class Review(Kind):
    """Accept or reject against a checklist. Accept needs every criterion ticked unless the
    queue's config says ``"criteria_advisory": true``; a rejection needs one of the queue's
    reason codes when it has any."""

    public_fields = ("title", "images", "text", "fields")

    def keys(self, config, payload=None):
        keys = [Key(k, text) for _i, k, text in criterion_keys(config)]
        keys += [Key("a", gettext_noop("Accept")), Key("r", gettext_noop("Reject"))]
        for i, reason in enumerate(config.get("reason_codes", [])[:9]):
            keys.append(Key(str(i + 1), reason["label"]))
        if config.get("reason_codes"):
            keys.append(Key("0", gettext_noop("No reason (clear the reason)")))
        return keys

    def public_config(self, config):
        out = {"criteria": list(config.get("criteria", []))}
        out["criteria_advisory"] = bool(config.get("criteria_advisory"))
        out["reason_codes"] = [
            fields_pick(r, ("code", "label")) for r in config.get("reason_codes", [])
        ]
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
        criteria = config.get("criteria", [])
        if cleaned["verdict"] == "accept" and not config.get("criteria_advisory"):
            missing = [f"{i} ({c})" for i, c in enumerate(criteria) if i not in cleaned["checked"]]
            if missing:
                raise SchemaError(
                    "response.checked: accept only when every criterion holds; not ticked: "
                    + ", ".join(missing)
                )
        codes = [r["code"] for r in config.get("reason_codes", [])]
        if cleaned["verdict"] == "reject" and codes and not cleaned.get("reason"):
            raise SchemaError(
                "response.reason: a rejection needs a reason code, one of: " + ", ".join(codes)
            )
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
                "criteria_advisory": {"type": "boolean"},
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
