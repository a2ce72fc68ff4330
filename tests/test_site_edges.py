"""Small edges of the site (issue 23, item 5): /favicon.ico, ReDoc without a CDN, image
addresses in payloads limited to http(s) and the site's own paths, demo_recipes' refusal."""

from __future__ import annotations

import pytest
from django.contrib.staticfiles import finders
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from annotator.models import Task
from annotator.platform import roles
from tests.annotator.helpers import session_api
from tests.factories import UserFactory, vqa_payload


def test_favicon_is_served_at_the_root(db):
    response = Client().get("/favicon.ico")
    assert response.status_code == 200
    body = b"".join(response.streaming_content)
    assert body[:4] == b"\x00\x00\x01\x00"  # an ICO file's header
    assert response["Content-Type"].startswith("image/")


def test_redoc_loads_its_script_and_logo_from_the_app(db):
    user = UserFactory(role=roles.CURATOR)
    client = Client()
    client.force_login(user)
    page = client.get(reverse("api-redoc")).content.decode()
    assert f'<script src="{reverse("api-redoc-bundle")}"></script>' in page
    script = Client().get(reverse("api-redoc-bundle"))
    assert script.status_code == 200
    assert script["Content-Type"].startswith("application/javascript")
    text = script.content.decode()
    assert "cdn.redoc.ly" not in text and "/static/img/redoc-logo-mini.svg" in text
    assert finders.find("img/redoc-logo-mini.svg")  # a static file of the app


@pytest.mark.parametrize(
    "url, ok",
    [
        ("javascript:alert(1)", False),
        ("JaVaScRiPt:alert(1)", False),
        ("data:image/svg+xml;base64,AAAA", False),
        ("data:text/html;base64,AAAA", False),
        ("data:image/png;base64,iVBORw0KGgo=", True),
        ("//evil.example/x.png", False),
        ("/\\evil.example/x.png", False),
        ("ftp://example.org/x.png", False),
        ("https://example.org/a.png", True),
        ("/media/uploads/a.png", True),
        ("/static/demo/img1.png", True),
    ],
)
def test_payload_images_are_http_or_this_sites_paths(queue, curator, url, ok):
    payload = {**vqa_payload(1), "image": {"url": url}}
    response = session_api(curator).post(
        reverse("api-queue-tasks", args=[queue.pk]), [payload], format="json"
    )
    if ok:
        assert response.status_code == 201
    else:
        assert response.status_code == 400
        assert "image.url" in response.json()["errors"][0]["error"]
        assert not Task.objects.filter(queue=queue).exists()


def test_demo_recipes_with_debug_off_names_allow_insecure(db, settings):
    settings.DEBUG = False
    with pytest.raises(CommandError, match="--allow-insecure"):
        call_command("demo_recipes")
