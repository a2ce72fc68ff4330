"""Model output → value: JSON extraction (plain, fenced or embedded) and JSON-Schema validation.

No Django import, so recipes and the CLI can check outputs the same way the gateway does.
"""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
from jsonschema.exceptions import SchemaError

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\r?\n?(.*?)```", re.DOTALL)


class OutputInvalid(ValueError):
    """The model answered, but not with what the template asks for; worth another attempt."""

    def __init__(self, kind: str, message: str):
        self.kind = kind  # "malformed" (no JSON found) or "schema" (JSON that breaks the schema)
        super().__init__(message)


def extract_json(text: str) -> Any:
    """The JSON value in ``text``: the whole text, else a ```json fence, else the first object
    or array embedded in prose. Raises OutputInvalid("malformed") when there is none."""
    stripped = (text or "").strip()
    if not stripped:
        raise OutputInvalid("malformed", "Empty response: expected JSON.")
    try:
        return json.loads(stripped)
    except json.JSONDecodeError:
        pass
    for block in _FENCE.findall(stripped):
        try:
            return json.loads(block.strip())
        except json.JSONDecodeError:
            continue
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[\[{]", stripped):
        try:
            value, _end = decoder.raw_decode(stripped, match.start())
        except json.JSONDecodeError:
            continue
        return value
    excerpt = stripped[:80].replace("\n", " ")
    raise OutputInvalid("malformed", f"No JSON found in the response (starts {excerpt!r}).")


def check_schema(schema: Any) -> None:
    """Raise ValueError with the reason when ``schema`` is not a valid JSON Schema."""
    if schema is None:
        return
    if not isinstance(schema, dict | bool):
        raise ValueError("The output schema must be a JSON object (a JSON Schema).")
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        raise ValueError(f"Not a valid JSON Schema: {exc.message}") from exc


def validate_output(value: Any, schema: Any) -> None:
    """Raise OutputInvalid("schema") naming the first failing place in ``value``."""
    if schema is None:
        return
    validator = jsonschema.validators.validator_for(schema)(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        raise OutputInvalid(
            "schema", f"Output does not match the schema at {where}: {error.message}"
        )


def parse_output(text: str, schema: Any) -> Any:
    """Plain-text templates (no schema) keep the stripped, non-empty text; JSON templates the
    validated value."""
    if schema is None:
        stripped = (text or "").strip()
        if not stripped:
            raise OutputInvalid("malformed", "Empty response: expected text.")
        return stripped
    value = extract_json(text)
    validate_output(value, schema)
    return value
