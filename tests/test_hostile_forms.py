"""Hostile values in every form and every API body (issue 23, item 1): ``2**80``, ``-2**80``,
``NaN`` and JSON nested 10,000 levels deep, in every field a member of project 1 may post, on
every pattern of the permission matrix (its world, its declared calls). Nothing answers 500; a
number out of range changes nothing in the database (the form comes back with its error, or a
400); files of hostile JSON lines are refused line by line.

The fields of an HTML form are read from the page that shows it (GET), so a field added to a
form is walked without touching this file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from html.parser import HTMLParser

import pytest
from django.conf import settings
from django.db import transaction
from django.test import Client
from django.urls import reverse

from annotator.platform import roles, structured
from tests import matrix_world as mw
from tests.factories import UserFactory
from tests.test_permission_matrix import (
    TABLE,
    Call,
    File,
    Matrix,
    _value,
    changed_tables,
    client_for,
    fingerprint,
    matrix,  # noqa: F401 (the module-scoped world fixture)
    may_succeed,
    send,
    url_of,
    variants,
)

pytestmark = pytest.mark.django_db

DEEP = '{"a": ' * 10_000 + "1" + "}" * 10_000
HOSTILE_TEXT = {"2**80": str(2**80), "-2**80": str(-(2**80)), "NaN": "NaN", "deep": DEEP}
HOSTILE_JSON = {"2**80": 2**80, "-2**80": -(2**80), "NaN": float("nan"), "deep": "DEEP"}
HOSTILE_FILES = {
    "deep": (DEEP + "\n").encode(),
    "numbers": (
        b'{"id": 1, "image_id": 1208925819614629174706176, "seed": -1208925819614629174706176, '
        b'"score": NaN, "answer": "yes", "question": "q?", "image": "a.png"}\n'
    ),
    "long int": ('{"id": ' + "9" * 5000 + "}\n").encode(),
}
MEMBERS = (mw.CURATOR, mw.RESEARCHER, mw.WORKER)
ADMIN = "walker-admin"  # the shared scorers' and templates' pages are admins' only
SKIP_TYPES = {"hidden", "checkbox", "radio", "submit", "button", "file", "image", "reset"}


@dataclass
class FormFields:
    action: str
    fields: dict[str, str] = field(default_factory=dict)  # name -> first value
    kinds: dict[str, str] = field(default_factory=dict)  # name -> input type / tag
    files: list[str] = field(default_factory=list)


class _Forms(HTMLParser):
    """The POST forms of a page: each one's action, fields, their types and first values."""

    def __init__(self):
        super().__init__()
        self.forms: list[FormFields] = []
        self._form: FormFields | None = None
        self._select: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        if tag == "form" and a.get("method", "get").lower() == "post":
            self._form = FormFields(a.get("action", ""))
            self.forms.append(self._form)
        form, name = self._form, a.get("name")
        if tag == "option" and form is not None and self._select:
            if a.get("value") and (self._select not in form.fields or "selected" in a):
                form.fields[self._select] = a["value"]
        if form is None or not name or "disabled" in a:
            return  # a browser sends no disabled field; the form keeps its saved value
        if tag == "input":
            kind = a.get("type", "text").lower()
            if kind == "file":
                form.files.append(name)
            elif kind in ("checkbox", "radio"):
                if "checked" in a:
                    form.fields.setdefault(name, a.get("value", "on"))
            form.kinds.setdefault(name, kind)
            if kind not in ("checkbox", "radio", "file", "submit", "button"):
                form.fields.setdefault(name, a.get("value", ""))
        elif tag == "textarea":
            form.kinds[name], self._textarea = "textarea", name
            form.fields.setdefault(name, "")
        elif tag == "select":
            form.kinds[name], self._select = "select", name

    def handle_data(self, data):
        if self._form is not None and self._textarea:
            self._form.fields[self._textarea] += data

    def handle_endtag(self, tag):
        if tag == "form":
            self._form = None
        elif tag == "select":
            self._select = None
        elif tag == "textarea":
            self._textarea = None


def forms_of(html: str) -> list[FormFields]:
    parser = _Forms()
    parser.feed(html)
    return parser.forms


def member_for(call: Call) -> str | None:
    if not call.allowed and call.method != "get":
        return ADMIN
    return next((v for v in MEMBERS if may_succeed(call, v)), None)


def with_admin(m: Matrix) -> None:
    """An admin's session in the matrix world (rolled back with it)."""
    if ADMIN not in m.sessions:
        client = Client()
        client.force_login(UserFactory(username=ADMIN, role=roles.ADMIN))
        m.sessions[ADMIN] = client.cookies[settings.SESSION_COOKIE_NAME].value
        m.baseline = fingerprint(m.sql)  # the admin is part of the world from now on


def posts() -> list[tuple[str, int]]:
    """(pattern, index of the call) of every POST / PATCH a member of project 1 may make."""
    return [
        (name, i)
        for name, row in sorted(TABLE.items())
        if row.kwargs.get("path") is None
        for i, call in enumerate(row.calls)
        if call.method != "get" and not call.refusal_only and member_for(call)
    ]


def page_fields(m: Matrix, name: str, visitor: str, url: str) -> FormFields | None:
    """The fields of the form on ``name``'s page that posts to ``url``."""
    get = next((c for c in TABLE[name].calls if c.method == "get"), None)
    if get is None:
        return None
    response = client_for(m, visitor).get(
        url_of(name, m, visitor, get, variants(m, TABLE[name])[0][1])
    )
    if response.status_code != 200 or "html" not in response.get("Content-Type", ""):
        return None
    path = url.split("?")[0]
    found = [f for f in forms_of(response.content.decode()) if f.action in ("", path)]
    return max(found, key=lambda f: len(f.fields), default=None)


@dataclass
class Outcome:
    where: str
    problem: str


def attempt(m: Matrix, name: str, call: Call, visitor: str, url: str, data, api: bool):
    """Send one request in a savepoint; (status or the exception, tables changed)."""
    sid = transaction.savepoint()
    try:
        try:
            response = send(client_for(m, visitor), call, url, data, api)
        except Exception as exc:  # a view that raised: a 500 in production
            return f"raised {exc!r}"[:200], []
        return response.status_code, changed_tables(m.baseline, fingerprint(m.sql))
    finally:
        transaction.savepoint_rollback(sid)


def _judge(where: str, status, changed: list[str], number: bool) -> Outcome | None:
    if not isinstance(status, int) or status >= 500:
        return Outcome(where, f"server error: {status}")
    if number and changed:
        return Outcome(where, f"{status}, out-of-range number stored: {', '.join(changed[:3])}")
    return None


def walk_html(m: Matrix, name: str, call: Call, visitor: str, url: str) -> list[Outcome]:
    base = _value(call.data, m, visitor) or {}
    shown = page_fields(m, name, visitor, url)
    fields = dict(shown.fields) if shown else {}
    kinds = dict(shown.kinds) if shown else {}
    fields.pop("csrfmiddlewaretoken", None)
    problems = []
    targets = [f for f in {**fields, **base} if kinds.get(f, "text") not in SKIP_TYPES]
    for target in targets:
        if hasattr(base.get(target), "read"):
            continue  # an upload: walked below with hostile file contents
        number = kinds.get(target) == "number"
        for label, value in HOSTILE_TEXT.items():
            if not number and label in ("-2**80", "NaN"):
                continue  # text: "NaN" is a word; 2**80 and deep JSON stand for numbers in text
            data = {**fields, **_value(call.data, m, visitor), target: value}
            status, changed = attempt(m, name, call, visitor, url, data, api=False)
            found = _judge(f"{name} {target}={label}", status, changed, number)
            if found:
                problems.append(found)
    uploads = [k for k, v in (call.data or {}).items() if isinstance(v, File)]
    uploads += [f for f in (shown.files if shown else []) if f not in uploads]
    for target in uploads:
        for label, content in HOSTILE_FILES.items():
            data = {**fields, **_value(call.data, m, visitor)}
            data[target] = _value(File(f"{label}.jsonl", content), m, visitor)
            status, changed = attempt(m, name, call, visitor, url, data, api=False)
            found = _judge(f"{name} file {target}={label}", status, [], False)
            if found:
                problems.append(found)
    return problems


def walk_api(m: Matrix, name: str, call: Call, visitor: str, url: str) -> list[Outcome]:
    if isinstance(call.data, dict) and any(isinstance(v, File) for v in call.data.values()):
        return walk_html(m, name, call, visitor, url)  # a multipart upload, like a form's
    base = _value(call.data, m, visitor)
    problems = []
    bodies: list[tuple[str, object]] = [("whole body deep", "DEEP")]
    if isinstance(base, dict):
        for key in base:
            if isinstance(call.data[key], File):
                continue
            for label, value in HOSTILE_JSON.items():
                bodies.append((f"{key}={label}", {**base, key: value}))
    elif isinstance(base, list) and base and isinstance(base[0], dict):
        for key in base[0]:
            for label, value in HOSTILE_JSON.items():
                bodies.append((f"0.{key}={label}", [{**base[0], key: value}]))
    for label, body in bodies:
        text = json.dumps(body).replace('"DEEP"', DEEP)
        sid = transaction.savepoint()
        try:
            try:
                response = client_for(m, visitor).generic(
                    call.method.upper(), url, text, content_type="application/json"
                )
                status = response.status_code
            except Exception as exc:
                status = f"raised {exc!r}"[:200]
        finally:
            transaction.savepoint_rollback(sid)
        found = _judge(f"{name} {label}", status, [], False)
        if found:
            problems.append(found)
    return problems


@pytest.mark.slow  # builds the matrix world (~20 s) and sends ~2,000 requests
def test_hostile_values_in_every_form_and_body_never_answer_500(matrix):  # noqa: F811
    # given every POST a member of project 1 may make, when each field in turn holds 2**80,
    # -2**80, NaN or JSON nested 10,000 deep (and each upload a file of such lines)
    problems, walked = [], 0
    with_admin(matrix)
    for name, index in posts():
        call = TABLE[name].calls[index]
        visitor = member_for(call)
        url = url_of(name, matrix, visitor, call, variants(matrix, TABLE[name])[0][1])
        api = url.startswith("/api/") and TABLE[name].page is None
        walk = walk_api if api else walk_html
        problems += walk(matrix, name, call, visitor, url)
        walked += 1
    # then no answer is a 500, and no out-of-range number reaches the database
    assert walked > 60
    assert not problems, f"{len(problems)} hostile inputs mishandled:\n" + "\n".join(
        f"{p.where:70} {p.problem}" for p in problems
    )


def test_the_walker_reads_a_forms_fields():
    html = """<form method="post" action="/x/"><input name="csrfmiddlewaretoken" type="hidden"
    value="t"><input name="title" value="T"><input type="number" name="seed" value="0">
    <textarea name="config">{"a": 1}</textarea><select name="kind"><option value="">-</option>
    <option value="vqa" selected>VQA</option></select><input type="file" name="file"></form>
    <form method="get"><input name="q"></form>"""
    (form,) = forms_of(html)
    assert form.action == "/x/"
    assert form.fields == {
        "csrfmiddlewaretoken": "t",
        "title": "T",
        "seed": "0",
        "config": '{"a": 1}',
        "kind": "vqa",
    }
    assert form.kinds["seed"] == "number" and form.files == ["file"]


def test_structured_loads_refuses_what_jsonb_and_the_stack_cannot_take():
    for text, message in [
        (DEEP, "nested too deeply"),
        ("[" * 65 + "]" * 65, "nested too deeply"),
        ('{"a": NaN}', "NaN is not a number"),
        ("[1e999]", "too large"),
        ("9" * 5000, "not valid JSON"),
        ('{"a": ', "not valid JSON"),
    ]:
        with pytest.raises(structured.StructuredTextError, match=message):
            structured.loads(text)
    assert structured.loads("[" * 64 + "]" * 64) is not None
    assert structured.loads('{"a": NaN}', nonfinite="null") == {"a": None}
    with pytest.raises(structured.StructuredTextError, match="longer than 1 KB"):
        structured.loads('"' + "x" * 2000 + '"', max_bytes=1024)


def test_reverse_of_every_walked_post_exists():
    assert len(posts()) > 60
    assert reverse("curator-queue-new", args=[1])
