"""/media/ behind login (platform/files.py, issue 13 item 8): signed-in people (session or API
token) load the images, thumbnails and demo drawings; answer uploads only within their
project; the private prefixes (exports, uploaded archives and manifests) answer 404 whoever
asks; anonymous visitors go to the login page. ``file_response`` on S3 redirects to a signed,
short-lived URL (computed locally from dummy credentials: no network)."""

from __future__ import annotations

import hashlib
import io
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.test import RequestFactory
from django.urls import reverse
from PIL import Image as PILImage
from rest_framework.authtoken.models import Token

from annotator.platform import roles
from annotator.platform.files import file_response, media_name, media_url
from tests.factories import ProjectFactory, TaskFactory, UserFactory

pytestmark = pytest.mark.django_db


def png() -> bytes:
    buf = io.BytesIO()
    PILImage.new("RGB", (8, 6), "red").save(buf, "PNG")
    return buf.getvalue()


@pytest.fixture
def image(media) -> tuple[str, bytes]:
    data = png()
    sha = hashlib.sha256(data).hexdigest()
    return default_storage.save(f"images/{sha[:2]}/{sha}.png", ContentFile(data)), data


@pytest.fixture
def outsider(db):
    worker = UserFactory(username="elsewhere", role=roles.CROWDWORKER)
    ProjectFactory(members=[worker])
    return worker


def test_an_image_loads_in_the_workspace_for_the_crowdworker_and_not_for_anonymous(
    client, crowdworker, queue, image
):
    # given a task whose image is stored under media
    name, data = image
    url = f"/media/{name}"
    TaskFactory(
        queue=queue, payload={"image": {"url": url}, "question": "Red?", "choices": ["Yes", "No"]}
    )
    # when the crowdworker opens the workspace, the page names the image and the image loads
    client.force_login(crowdworker)
    page = client.get(reverse("work", args=[queue.pk]))
    assert page.status_code == 200
    assert f'src="{url}"' in page.content.decode()
    response = client.get(url)
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == data
    assert response["Content-Type"] == "image/png"
    assert response["Content-Disposition"] == f'inline; filename="{name.rsplit("/", 1)[1]}"'
    assert response["Content-Length"] == str(len(data))
    assert response["Cache-Control"] == "private, max-age=3600"
    # but an anonymous visitor is sent to log in
    client.logout()
    anonymous = client.get(url)
    assert anonymous.status_code == 302
    assert anonymous["Location"] == f"/login/?next={url}"


def test_an_api_token_loads_an_image_and_a_wrong_token_does_not(client, crowdworker, image):
    name, data = image
    key = Token.objects.create(user=crowdworker).key
    response = client.get(f"/media/{name}", HTTP_AUTHORIZATION=f"Token {key}")
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == data
    wrong = client.get(f"/media/{name}", HTTP_AUTHORIZATION="Token not-a-token")
    assert wrong.status_code == 302


def test_thumbnails_and_demo_drawings_load_for_anyone_signed_in(client, outsider, media):
    for name in ("thumbs/ab/abcdef.webp", "demo/red-mug-left.png"):
        default_storage.save(name, ContentFile(b"bytes of " + name.encode()))
    client.force_login(outsider)
    thumb = client.get("/media/thumbs/ab/abcdef.webp")
    assert thumb.status_code == 200 and thumb["Content-Type"] == "image/webp"
    demo = client.get("/media/demo/red-mug-left.png")
    assert b"".join(demo.streaming_content) == b"bytes of demo/red-mug-left.png"


@pytest.mark.parametrize(
    "name",
    [
        "exports/vlind/1/17/vlind-bench-1.zip",
        "exports/naturalbench/3/v1.parquet",
        "curation/uploads/0123abcd/archive.zip",
        "curation/uploads/vhx-0123abcd/manifest.csv",
        "evaluation/uploads/0123abcd.txt",
        "somewhere-new/file.bin",
    ],
)
def test_private_and_undeclared_prefixes_are_404_even_for_an_admin(client, media, name):
    # given the file exists
    default_storage.save(name, ContentFile(b"secret rows"))
    admin = UserFactory(username="root", is_superuser=True)
    client.force_login(admin)
    # when an admin asks through /media/: 404, nothing of the file
    response = client.get(f"/media/{name}")
    assert response.status_code == 404
    assert b"secret rows" not in response.content


@pytest.mark.parametrize(
    "path",
    [
        "images/../exports/vlind/1/17/vlind-bench-1.zip",
        "images/%2e%2e/exports/vlind/1/17/vlind-bench-1.zip",
        "images//exports/vlind/1/17/vlind-bench-1.zip",
        "images/ab%5C..%5C..%5Cexports/x.zip",
        "images",
    ],
)
def test_paths_that_leave_their_prefix_are_404(client, crowdworker, media, path):
    default_storage.save("exports/vlind/1/17/vlind-bench-1.zip", ContentFile(b"secret rows"))
    client.force_login(crowdworker)
    response = client.get(f"/media/{path}")
    assert response.status_code == 404
    assert b"secret rows" not in response.content


def test_media_name_accepts_plain_relative_names_only():
    assert media_name("images/ab/abc.png") == ["images", "ab", "abc.png"]
    assert media_name("/images/ab/abc.png") is None
    assert media_name("images/./abc.png") is None
    assert media_name("images\\abc.png") is None
    assert media_name("images/ab/x\x00.png") is None
    assert media_name("") is None


def test_an_answer_upload_loads_for_the_queues_project_only(
    client, crowdworker, researcher, queue, outsider, media
):
    # given an image a crowdworker attached to an answer in the project's queue
    task = TaskFactory(queue=queue)
    name = default_storage.save(f"uploads/{queue.pk}/{task.pk}/0f1e2d.png", ContentFile(png()))
    url = f"/media/{name}"
    # then the project's people load it, someone of another project gets 404
    for user in (crowdworker, researcher):
        client.force_login(user)
        assert client.get(url).status_code == 200, user.username
    client.force_login(outsider)
    assert client.get(url).status_code == 404
    # and so does a member removed from the project
    queue.project.members.remove(crowdworker)
    client.force_login(crowdworker)
    assert client.get(url).status_code == 404


def test_an_answer_upload_of_a_queue_that_does_not_exist_is_404(client, crowdworker, media):
    client.force_login(crowdworker)
    assert client.get("/media/uploads/999999/1/x.png").status_code == 404
    assert client.get("/media/uploads/not-a-queue/1/x.png").status_code == 404


@pytest.mark.parametrize("redirect", ["", "x-accel"])
def test_a_missing_media_file_or_a_folder_is_404(client, settings, crowdworker, image, redirect):
    settings.BLINDSPOT_PROTECTED_MEDIA_REDIRECT = redirect
    client.force_login(crowdworker)
    assert client.get("/media/images/ab/missing.png").status_code == 404
    folder = client.get("/media/" + image[0].rsplit("/", 1)[0])  # images/<ab>
    assert folder.status_code == 404
    assert "X-Accel-Redirect" not in folder


def test_media_with_x_accel_redirect_sends_headers_only(client, settings, crowdworker, image):
    settings.BLINDSPOT_PROTECTED_MEDIA_REDIRECT = "x-accel"
    name, _data = image
    client.force_login(crowdworker)
    response = client.get(f"/media/{name}")
    assert response.status_code == 200
    assert response.content == b""
    assert response["X-Accel-Redirect"] == f"/_protected/{name}"
    assert response["Content-Type"] == "image/png"


def test_a_post_to_media_is_refused(client, crowdworker, image):
    client.force_login(crowdworker)
    assert client.post(f"/media/{image[0]}").status_code == 405


# --------------------------------------------------------------------------------------------
# S3: a signed URL that expires
# --------------------------------------------------------------------------------------------
@pytest.fixture
def s3(settings):
    settings.BLINDSPOT_SIGNED_URL_EXPIRE_S = 120
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": "blindspot-test",
                "endpoint_url": "http://127.0.0.1:9",  # never contacted: presigning is local
                "region_name": "us-east-1",
                "access_key": "AKIDUMMYDUMMYDUMMY",
                "secret_key": "dummy-secret",
                # what the images' own URLs use must not weaken a private file's URL
                "querystring_auth": False,
                "custom_domain": "cdn.example.org",
                "default_acl": None,
                "signature_version": "s3v4",  # as blindspot/settings.py configures it
            },
        },
    }
    assert default_storage.__class__.__name__ == "S3Storage"


def test_on_s3_a_file_is_a_redirect_to_a_signed_url_that_expires(s3):
    request = RequestFactory().get("/curate/vlind/1/exports/17/")
    response = file_response(
        request,
        "exports/vlind/1/17/vlind-bench-1.zip",
        filename="vlind-bench-1.zip",
        content_type="application/zip",
    )
    assert response.status_code == 302
    url = urlsplit(response["Location"])
    assert (url.scheme, url.netloc, url.path) == (
        "http",
        "127.0.0.1:9",
        "/blindspot-test/exports/vlind/1/17/vlind-bench-1.zip",
    )
    query = parse_qs(url.query)
    assert query["X-Amz-Algorithm"] == ["AWS4-HMAC-SHA256"]
    assert query["X-Amz-Expires"] == ["120"]
    assert len(query["X-Amz-Signature"][0]) == 64
    assert query["X-Amz-Credential"][0].startswith("AKIDUMMYDUMMYDUMMY/")
    assert query["response-content-disposition"] == ['attachment; filename="vlind-bench-1.zip"']
    assert query["response-content-type"] == ["application/zip"]
    assert "no-store" in response["Cache-Control"]


def test_on_s3_media_redirects_signed_in_people_only(client, s3, crowdworker):
    name = "images/ab/" + "ab" * 32 + ".png"
    assert client.get(f"/media/{name}").status_code == 302  # to the login page
    assert client.get(f"/media/{name}")["Location"].startswith("/login/")
    client.force_login(crowdworker)
    response = client.get(f"/media/{name}")
    assert response.status_code == 302
    query = parse_qs(urlsplit(response["Location"]).query)
    assert "X-Amz-Signature" in query
    assert query["response-content-disposition"][0].startswith("inline;")
    assert client.get("/media/exports/vlind/1/17/vlind-bench-1.zip").status_code == 404


def test_stored_payloads_name_the_apps_media_address_which_stays_valid_on_s3(
    client, s3, crowdworker
):
    # Given a stored image on S3, whose storage URL would be signed once and expire
    name = "images/cd/" + "cd" * 32 + ".png"
    # When a payload or an answer records its address
    url = media_url(name)
    # Then it is the app's own address, the same one local storage gives
    assert url == f"/media/{name}"
    assert "X-Amz-Signature" not in url
    # and every later visit is signed afresh by the media view
    client.force_login(crowdworker)
    first = client.get(url)
    assert first.status_code == 302
    assert "X-Amz-Signature" in parse_qs(urlsplit(first["Location"]).query)


def test_media_url_equals_the_local_storage_url(media):
    name = "images/ef/" + "ef" * 32 + ".png"
    assert media_url(name) == default_storage.url(name)
