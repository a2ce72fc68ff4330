"""The attacks of issue 23, item 1, one test per kind: deep JSON in a form field, a manifest and an
upload; integers past every column; NaN; a 1 MB value echoed in an error. Each is refused with
a 400 (or the form again, naming the field) and nothing is stored. The walk over every form and
body is tests/test_hostile_forms.py; here, the exact answers.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil

import pytest
from django import forms
from django.urls import reverse
from rest_framework import serializers

from annotator.models import TaskQueue
from annotator.platform import roles
from annotator.platform.errors import LineErrors
from annotator.platform.forms import INT_MAX, INT_MIN, model_range
from annotator.platform.models import Job
from curation.corpora import formats
from curation.models import PromptTemplate
from evaluation import importers
from evaluation.families.naturalbench import demo as nb_demo
from evaluation.models import ModelRun
from tests.annotator.test_permissions_html import QUEUE_POST
from tests.evaluation.helpers import eval_version, login
from tests.factories import UserFactory

DEEP = '{"a": ' * 10_000 + "1" + "}" * 10_000


def _queue_post(client, project, **fields):
    return client.post(reverse("curator-queue-new", args=[project.pk]), {**QUEUE_POST, **fields})


@pytest.mark.django_db
def test_queue_form_refuses_deep_config_and_huge_priority(client, curator, project):
    client.force_login(curator)
    for fields, field, message in [
        ({"config": DEEP}, "config", "ested too deeply"),
        ({"config": "[" * 70 + "]" * 70}, "config", "ested too deeply"),
        ({"config": '{"a": NaN}'}, "config", "NaN is not a number"),
        ({"priority": str(10**30)}, "priority", str(INT_MAX)),
        ({"priority": str(-(2**80))}, "priority", str(INT_MIN)),
        ({"gold_pause_min_answers": str(2**80)}, "gold_pause_min_answers", "32767"),
    ]:
        response = _queue_post(client, project, **fields)
        assert response.status_code == 200, fields
        assert message in " ".join(response.context["form"].errors[field]), fields
    assert not TaskQueue.objects.exists()


@pytest.mark.django_db
def test_queue_edit_form_refuses_deep_config(client, curator, queue):
    client.force_login(curator)
    response = client.post(
        reverse("curator-queue-edit", args=[queue.pk]), {**QUEUE_POST, "config": DEEP}
    )
    assert response.status_code == 200
    assert "ested too deeply" in response.context["form"].errors["config"][0]
    queue.refresh_from_db()
    assert queue.title != "Hacked"


@pytest.mark.django_db
def test_template_form_refuses_a_deep_output_schema(client):
    client.force_login(UserFactory(username="template-admin", role=roles.ADMIN))
    response = client.post(
        reverse("curator-llm-template-new"),
        {"name": "evil", "title": "Evil", "text": "Say {x}", "output_schema": DEEP},
    )
    assert response.status_code == 200
    assert "ested too deeply" in str(response.context["form"].errors["output_schema"])
    assert not PromptTemplate.objects.filter(name="evil").exists()


@pytest.mark.django_db
def test_api_run_import_refuses_a_seed_past_the_column(client):
    version = eval_version(
        "naturalbench", "NB", importers.parse_items("naturalbench", nb_demo.naturalbench_items(4))
    )
    login(client, roles.CURATOR)
    for seed in (2**80, -(2**80), -1):
        response = client.post(
            reverse("api-eval-run-import", args=[version.pk]),
            {"model": "m", "content": nb_demo.naturalbench_predictions(4), "seed": seed},
            content_type="application/json",
        )
        assert response.status_code == 400, seed
        assert response.json()["errors"][0]["field"] == "seed"
    assert not Job.objects.exists() and not ModelRun.objects.exists()
    assert model_range(ModelRun, "seed") == (INT_MIN, INT_MAX)


@pytest.mark.django_db
def test_api_body_nested_past_the_limit_is_400_naming_it(client, curator, queue):
    client.force_login(curator)
    body = {"config": json.loads("[" * 70 + "]" * 70)}
    response = client.patch(
        reverse("api-queue", args=[queue.pk]), json.dumps(body), content_type="application/json"
    )
    assert response.status_code == 400
    assert "ested too deeply" in response.json()["message"]


@pytest.mark.django_db
def test_task_upload_names_the_deep_line(client, curator, queue):
    client.force_login(curator)
    text = json.dumps({"question": "q", "image": "https://e.org/a.png"}) + "\n" + DEEP
    response = client.post(reverse("curator-queue-upload", args=[queue.pk]), {"text": text})
    assert response.status_code == 400
    assert "2 line(s) have problems" in response.content.decode()
    assert "ested too deeply (more than 64 levels" in response.content.decode()
    assert not queue.tasks.exists()


@pytest.mark.django_db
def test_corpus_manifest_and_evaluation_reader_refuse_deep_lines():
    errors = LineErrors()
    formats.parse_jsonl(
        '{"file": "a.jpg", "caption": "c"}\n' + DEEP, language="en", licence="", errors=errors
    )
    assert errors.rows == [{"line": 2, "error": errors.rows[0]["error"]}]
    assert "ested too deeply" in errors.rows[0]["error"]
    errors = LineErrors()
    formats.parse_coco(DEEP, language="en", licence="", errors=errors)
    assert "ested too deeply" in errors.rows[0]["error"]
    errors = LineErrors()
    assert importers.read_jsonl("[" + DEEP + "]", errors) == []
    assert "ested too deeply" in errors.rows[0]["error"]


@pytest.mark.django_db
def test_error_bodies_clip_the_echoed_value(client, curator, queue):
    client.force_login(curator)
    huge = "x" * 1_000_000
    response = client.patch(
        reverse("api-queue", args=[queue.pk]),
        json.dumps({"rule": huge, "title": huge}),
        content_type="application/json",
    )
    assert response.status_code == 400
    assert len(response.content) < 5_000


def _app_classes():
    for app in ("annotator", "curation", "evaluation"):
        package = importlib.import_module(app)
        for info in pkgutil.walk_packages(package.__path__, f"{app}."):
            if ".migrations" in info.name or ".management" in info.name:
                continue
            module = importlib.import_module(info.name)
            for obj in vars(module).values():
                if inspect.isclass(obj) and obj.__module__ == module.__name__:
                    yield obj


def test_every_integer_a_person_sends_is_bounded():
    # given every form and input serializer of the three apps ("…Out" serializers only answer)
    unbounded = []
    for cls in _app_classes():
        if issubclass(cls, forms.BaseForm):
            fields = cls.base_fields.items()
            kind = forms.IntegerField
        elif issubclass(cls, serializers.Serializer) and not cls.__name__.endswith("Out"):
            fields = cls._declared_fields.items()
            kind = serializers.IntegerField
        else:
            continue
        for name, f in fields:
            if not isinstance(f, kind) or isinstance(f, forms.FloatField):
                continue
            if getattr(f, "read_only", False):
                continue
            if f.min_value is None or f.max_value is None or f.max_value > 2**63 - 1:
                unbounded.append(f"{cls.__module__}.{cls.__name__}.{name}")
    # then each integer field has both ends, inside a 64-bit column
    assert unbounded == []


def test_model_range_narrows_by_validators():
    assert model_range(TaskQueue, "priority") == (INT_MIN, INT_MAX)
    assert model_range(TaskQueue, "gold_pause_min_answers") == (0, 32767)
