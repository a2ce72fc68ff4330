"""Prompt templates: versions, content hash, seeding, rendering and JSON extraction."""

from __future__ import annotations

import hashlib
import json

import pytest

from curation import gateway
from curation.gateway.parsing import OutputInvalid, extract_json, parse_output
from curation.gateway.rendering import render, template_fields
from curation.models import PromptTemplate


def test_hash_is_sha256_of_canonical_json_of_system_text_and_schema():
    expected = hashlib.sha256(
        b'{"output_schema":{"a":1,"b":[2]},"system":"S","text":"T {x}"}'
    ).hexdigest()

    assert gateway.content_sha256(system="S", text="T {x}", output_schema={"b": [2], "a": 1}) == (
        expected
    )
    assert gateway.content_sha256(system="S", text="T {x}", output_schema=None) != expected


@pytest.mark.django_db
def test_editing_makes_a_new_current_version_and_keeps_the_old(curator):
    # given a seeded template
    v1 = gateway.template_ensure(name="ask", text="Ask about {x}.", title="Ask")

    # when a curator edits its text
    v2 = gateway.template_update(name="ask", text="Ask politely about {x}.", created_by=curator)

    # then version 2 is current, version 1 is kept unchanged and no longer current
    v1.refresh_from_db()
    assert (v1.version, v1.is_current, v1.text) == (1, False, "Ask about {x}.")
    assert (v2.version, v2.is_current, v2.created_by, v2.title) == (2, True, curator, "Ask")
    assert v2.sha256 == gateway.content_sha256(
        system="", text="Ask politely about {x}.", output_schema=None
    )
    assert gateway.template_current("ask") == v2
    assert PromptTemplate.objects.filter(name="ask").count() == 2


@pytest.mark.django_db
def test_update_keeps_what_it_is_not_given():
    schema = {"type": "object"}
    gateway.template_ensure(name="ask", system="Be brief.", text="Ask {x}.", output_schema=schema)

    v2 = gateway.template_update(name="ask", text="Ask about {x}.")
    v3 = gateway.template_update(name="ask", output_schema=None)

    assert (v2.version, v2.system, v2.output_schema) == (2, "Be brief.", schema)
    assert (v3.version, v3.text, v3.output_schema) == (3, "Ask about {x}.", None)


@pytest.mark.django_db
def test_unchanged_content_makes_no_version_and_metadata_edits_stay_in_place():
    gateway.template_ensure(name="ask", text="Ask about {x}.")

    same = gateway.template_update(name="ask", text="Ask about {x}.", title="Renamed")

    assert (same.version, same.title) == (1, "Renamed")
    assert PromptTemplate.objects.filter(name="ask").count() == 1


@pytest.mark.django_db
def test_templates_ensure_seeds_each_spec_and_returns_the_current_versions_by_name(curator):
    specs = {"ask": {"text": "Ask about {x}.", "title": "Ask"}, "tell": {"text": "Tell {x}."}}
    # when a recipe's templates are seeded, after a curator edited one of them
    gateway.template_ensure(name="ask", text="Ask about {x}.")
    edited = gateway.template_update(name="ask", text="Curator's {x}.", created_by=curator)
    current = gateway.templates_ensure(specs)
    # then each name maps to its current version: the curator's, and the new one
    assert current["ask"] == edited
    assert (current["tell"].version, current["tell"].text) == (1, "Tell {x}.")


@pytest.mark.django_db
def test_ensure_is_idempotent_and_never_overwrites_a_curators_version(curator):
    gateway.template_ensure(name="ask", text="Ask about {x}.")
    assert gateway.template_ensure(name="ask", text="Ask about {x}.").version == 1

    # the code's default moved on: it becomes version 2 (no person edited it)
    assert gateway.template_ensure(name="ask", text="Ask clearly about {x}.").version == 2
    # seeding the old default again changes nothing (that content exists already)
    assert gateway.template_ensure(name="ask", text="Ask about {x}.").version == 2

    # a curator edits; a newer code default no longer replaces the curator's version
    gateway.template_update(name="ask", text="Curator's {x}.", created_by=curator)
    kept = gateway.template_ensure(name="ask", text="Yet another default {x}.")
    assert (kept.version, kept.text) == (3, "Curator's {x}.")
    assert PromptTemplate.objects.filter(name="ask").count() == 3


@pytest.mark.django_db
def test_restore_copies_an_old_version_forward(curator):
    gateway.template_ensure(name="ask", text="One {x}.")
    gateway.template_update(name="ask", text="Two {x}.", created_by=curator)

    restored = gateway.template_restore(name="ask", version=1, created_by=curator)

    assert (restored.version, restored.text, restored.is_current) == (3, "One {x}.", True)
    assert restored.sha256 == PromptTemplate.objects.get(name="ask", version=1).sha256


@pytest.mark.django_db
def test_only_one_current_version_per_name_is_enforced_by_the_database():
    from django.db import IntegrityError, transaction

    v1 = gateway.template_ensure(name="ask", text="One {x}.")
    with pytest.raises(IntegrityError), transaction.atomic():
        PromptTemplate.objects.create(name="ask", version=2, text="x", sha256="0" * 64)
    assert gateway.template_current("ask") == v1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "bad name", "text": "x"}, "must be 1–100 letters"),
        ({"name": "t", "text": "  "}, "needs a prompt text"),
        ({"name": "t", "text": "JSON {"}, "Write literal braces as {{ and }}"),
        ({"name": "t", "text": "{0} and {}"}, "is not a plain variable name"),
        ({"name": "t", "text": "{a.b}"}, "is not a plain variable name"),
        ({"name": "t", "text": "x", "output_schema": {"type": 12}}, "Not a valid JSON Schema"),
        ({"name": "t", "text": "{a}", "variables": ["b"]}, "declares variables ['b']"),
    ],
)
@pytest.mark.django_db
def test_bad_templates_are_refused_with_a_clear_message(kwargs, message):
    with pytest.raises(gateway.TemplateError, match=None) as info:
        gateway.template_ensure(**kwargs)
    assert message in str(info.value)
    assert PromptTemplate.objects.count() == 0


def test_template_fields_and_rendering():
    assert template_fields("{a} and {b}, again {a}; literal {{x}}") == ["a", "b"]
    assert render("{a} and {{b}}", {"a": 1, "extra": 2}) == "1 and {b}"
    with pytest.raises(gateway.MissingVariables) as info:
        render("{a} {b} {c}", {"b": 1}, template="t")
    assert info.value.missing == ["a", "c"]
    assert str(info.value) == "Template 't' needs a, c; pass them in variables."


@pytest.mark.django_db
def test_default_templates_are_seeded_once_with_their_variables():
    first = gateway.ensure_default_templates()
    again = gateway.ensure_default_templates()

    assert [t.pk for t in first] == [t.pk for t in again]
    by_name = {t.name: t for t in first}
    assert by_name["naturalbench-yes-no"].variables == ["caption_1", "caption_2"]
    assert by_name["vhexpansion-negation"].variables == ["question"]
    assert by_name["caption-shorten"].variables == ["max_chars", "caption"]
    # the paper's literal JSON example survives rendering
    text = render(by_name["naturalbench-yes-no"].text, {"caption_1": "A", "caption_2": "B"})
    assert 'pairs {"Question": "...", "Caption1 Answer": "...", "Caption2 Answer": "..."} as' in (
        text
    )


@pytest.mark.django_db
def test_template_current_seeds_a_missing_default_and_names_unknown_ones():
    assert gateway.template_current("caption-shorten").version == 1
    with pytest.raises(gateway.TemplateNotFound, match="No prompt template named 'nope'"):
        gateway.template_current("nope")


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"a": 1}', {"a": 1}),
        ("  [1, 2]\n", [1, 2]),
        ('```json\n{"a": [1, {"b": 2}]}\n```', {"a": [1, {"b": 2}]}),
        ('Sure:\n```\n{"a": 2}\n```', {"a": 2}),
        ('Here it is: {"a": 3} — hope it helps {not json}', {"a": 3}),
        ('{broken} then {"a": 4}', {"a": 4}),
    ],
)
def test_extract_json(text, value):
    assert extract_json(text) == value


@pytest.mark.parametrize("text", ["", "   ", "no json here", "```json\n{broken\n```"])
def test_extract_json_refuses_text_without_json(text):
    with pytest.raises(OutputInvalid) as info:
        extract_json(text)
    assert info.value.kind == "malformed"


def test_parse_output_validates_against_the_schema():
    schema = {"type": "object", "required": ["q"], "properties": {"q": {"type": "string"}}}

    assert parse_output('{"q": "x"}', schema) == {"q": "x"}
    assert parse_output("  plain text \n", None) == "plain text"
    with pytest.raises(OutputInvalid) as info:
        parse_output('{"q": 3}', schema)
    assert (info.value.kind, str(info.value)) == (
        "schema",
        "Output does not match the schema at q: 3 is not of type 'string'",
    )
    with pytest.raises(OutputInvalid):
        parse_output('{"other": 1}', schema)
    assert json.loads('{"q": "x"}') == parse_output('```json\n{"q": "x"}\n```', schema)


def test_side_by_side_diff_marks_words_and_folds_long_unchanged_runs():
    from curation.gateway.diff import diff_stats, side_by_side

    old = "\n".join(["head"] + [f"same {i}" for i in range(10)] + ["Ask about {x}.", "tail"])
    new = "\n".join(["head"] + [f"same {i}" for i in range(10)] + ["Ask kindly about {x}."])

    rows = side_by_side(old, new)

    assert [r["kind"] for r in rows] == ["fold", "equal", "equal", "equal", "change", "delete"]
    assert rows[0]["n"] == 8  # head + same 0..6 folded, three lines of context kept
    assert rows[4]["right"] == [
        {"text": "Ask", "changed": False},
        {"text": " kindly", "changed": True},
        {"text": " about {x}.", "changed": False},
    ]
    assert rows[5] == {
        "kind": "delete",
        "ln": 13,
        "rn": None,
        "left": [{"text": "tail", "changed": True}],
        "right": [],
    }
    assert diff_stats(rows) == {"changed": 1, "deleted": 1, "inserted": 0}
