"""Issue 13, web side: login throttling (django-axes), the Content-Security-Policy and the API
documentation behind a login.

Five wrong passwords for one user name, or from one address, lock that name, or that address, for
15 minutes (AXES_FAILURE_LIMIT, AXES_COOLOFF_MINUTES); the right password is then refused too.
"""

import re
from datetime import timedelta
from pathlib import Path

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.template import Context, Template
from django.test import RequestFactory
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotator.platform import login
from annotator.platform.login import client_ip
from annotator.templatetags.bars import pct
from evaluation import plots
from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent
LOCKED = "Too many failed logins for this account or from this address. Try again in 15 minutes."


# ---- the three places a password is checked -----------------------------------------------
def login_page(client, username, password, ip="10.0.0.1"):
    return client.post(
        reverse("login"), {"username": username, "password": password}, REMOTE_ADDR=ip
    )


def admin_login(client, username, password, ip="10.0.0.1"):
    return client.post(
        reverse("admin:login"),
        {"username": username, "password": password, "next": "/admin/"},
        REMOTE_ADDR=ip,
    )


def token_endpoint(client, username, password, ip="10.0.0.1"):
    return APIClient().post(
        reverse("api-token"),
        {"username": username, "password": password},
        format="json",
        REMOTE_ADDR=ip,
    )


ENTRANCES = [
    pytest.param(login_page, False, id="login-page"),
    pytest.param(admin_login, True, id="admin-login"),
    pytest.param(token_endpoint, False, id="token-endpoint"),
]


@pytest.mark.parametrize(("attempt", "superuser"), ENTRANCES)
def test_five_wrong_passwords_lock_the_account_with_a_message(client, attempt, superuser):
    # given a person, and five wrong passwords for their name
    user = UserFactory(username="alice", is_staff=superuser, is_superuser=superuser)
    for n in range(4):
        response = attempt(client, "alice", f"wrong-{n}")
        assert response.status_code in (200, 400), n  # the form again, or 400 for the API
    fifth = attempt(client, "alice", "wrong-5")
    # when they then give the right one
    response = attempt(client, "alice", PASSWORD)
    # then both answers are the lockout: 429, saying how long to wait and what to do
    for locked in (fifth, response):
        assert locked.status_code == 429
        assert locked["Retry-After"] == "900"
    if attempt is token_endpoint:
        assert response.json() == {"message": LOCKED, "retry_after_seconds": 900}
        assert not Token.objects.filter(user=user).exists()
    else:
        html = response.content.decode()
        assert LOCKED in html
        assert "ask your curator or an administrator" in html
        assert "_auth_user_id" not in client.session
    assert AccessAttempt.objects.get(username="alice").failures_since_start == 6


def test_the_lockout_page_speaks_the_persons_language(client):
    UserFactory(username="alice")
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    for _ in range(5):
        login_page(client, "alice", "wrong")
    html = login_page(client, "alice", PASSWORD).content.decode()
    assert "此账户或此地址的登录失败次数过多。 请在 15 分钟后重试。" in html
    assert "返回登录页面" in html


def test_the_token_endpoint_hands_out_the_token_for_the_right_password(client):
    user = UserFactory(username="bob")
    response = token_endpoint(client, "bob", PASSWORD)
    assert response.status_code == 200
    assert response.json() == {"token": user.auth_token.key}
    # the same key again: the endpoint never rotates it (the token page does)
    assert token_endpoint(client, "bob", PASSWORD).json() == {"token": user.auth_token.key}


def test_the_token_endpoint_refuses_a_wrong_password_and_bad_input_with_400(client):
    UserFactory(username="bob")
    wrong = token_endpoint(client, "bob", "nope")
    assert (wrong.status_code, wrong.json()) == (400, {"message": "Wrong user name or password."})
    missing = APIClient().post(reverse("api-token"), {"username": "bob"}, format="json")
    assert missing.status_code == 400
    assert missing.json()["errors"] == [{"field": "password", "error": "This field is required."}]
    wrong_type = APIClient().post(
        reverse("api-token"), {"username": ["bob"], "password": {"x": 1}}, format="json"
    )
    assert wrong_type.status_code == 400


def test_a_locked_user_name_stays_locked_from_another_address_but_others_log_in(client):
    # given five wrong passwords for alice, each from a different address
    UserFactory(username="alice")
    UserFactory(username="carol")
    for n in range(5):
        login_page(client, "alice", "wrong", ip=f"10.0.1.{n}")
    # then alice is locked everywhere, even from a fresh address with the right password
    assert login_page(client, "alice", PASSWORD, ip="10.0.9.9").status_code == 429
    # while carol logs in from one of those addresses (each saw only one failure)
    assert login_page(client, "carol", PASSWORD, ip="10.0.1.0").status_code == 302


def test_an_address_with_five_failures_is_locked_for_every_name_but_others_are_not(client):
    # given five wrong passwords from one address, each for a different (made-up) name
    UserFactory(username="carol")
    for n in range(5):
        login_page(client, f"guess{n}", "wrong", ip="10.0.2.1")
    # then carol cannot log in from that address, even with her right password
    assert login_page(client, "carol", PASSWORD, ip="10.0.2.1").status_code == 429
    # but from her own address she can
    assert login_page(client, "carol", PASSWORD, ip="10.0.2.2").status_code == 302


def test_the_lock_ends_after_the_cool_off(client):
    # given alice locked out
    UserFactory(username="alice")
    for _ in range(5):
        login_page(client, "alice", "wrong")
    assert login_page(client, "alice", PASSWORD).status_code == 429
    # when 15 minutes pass after the last attempt
    for attempt in AccessAttempt.objects.all():
        attempt.attempt_time -= timedelta(minutes=15, seconds=1)
        attempt.save(update_fields=["attempt_time"])
    # then the right password works again, and the failures are forgotten
    assert login_page(client, "alice", PASSWORD).status_code == 302
    assert not AccessAttempt.objects.filter(username="alice").exists()


def test_four_failures_then_the_right_password_logs_in_and_resets_the_count(client):
    UserFactory(username="alice")
    for _ in range(4):
        login_page(client, "alice", "wrong")
    assert login_page(client, "alice", PASSWORD).status_code == 302
    client.logout()
    for _ in range(4):  # four more: still below the limit, because success reset the count
        login_page(client, "alice", "wrong")
    assert login_page(client, "alice", PASSWORD).status_code == 302


def test_client_ip_behind_proxies_counts_from_the_right(settings, caplog):
    rf = RequestFactory()
    spoofed = rf.get("/", REMOTE_ADDR="10.9.9.9", HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.7")
    settings.BLINDSPOT_PROXY_COUNT = 0
    login._warn_proxy_once.cache_clear()
    assert client_ip(spoofed) == "10.9.9.9"  # no proxy declared: the header is ignored
    assert client_ip(spoofed) == "10.9.9.9"
    # ... and the log says once that a proxy may be in front
    warnings = [r.getMessage() for r in caplog.records if r.name == "annotator.platform.login"]
    assert len(warnings) == 1 and "Set BLINDSPOT_PROXY_COUNT" in warnings[0]
    settings.BLINDSPOT_PROXY_COUNT = 1
    assert client_ip(spoofed) == "203.0.113.7"  # what our proxy saw, not what the client wrote
    garbage = rf.get("/", REMOTE_ADDR="10.9.9.9", HTTP_X_FORWARDED_FOR="not-an-ip")
    assert client_ip(garbage) == "10.9.9.9"
    short = rf.get("/", REMOTE_ADDR="10.9.9.9", HTTP_X_FORWARDED_FOR="203.0.113.7")
    settings.BLINDSPOT_PROXY_COUNT = 2
    assert client_ip(short) == "10.9.9.9"


# ---- Content-Security-Policy ------------------------------------------------------------
EXPECTED_CSP = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self'",
    "img-src": "'self' data:",
    "font-src": "'self'",
    "connect-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'self'",
    "form-action": "'self'",
    "frame-ancestors": "'none'",
}


def policy(response) -> dict[str, str]:
    header = response["Content-Security-Policy"]
    return dict(part.strip().split(" ", 1) for part in header.split(";") if part.strip())


def test_pages_carry_the_content_security_policy(client, crowdworker):
    assert policy(client.get(reverse("login"))) == EXPECTED_CSP
    client.force_login(crowdworker)
    assert policy(client.get(reverse("home"))) == EXPECTED_CSP


def test_djangos_debug_error_pages_alone_go_without_the_policy(client, crowdworker, settings):
    client.force_login(crowdworker)
    missing = "/no-such-page/"
    settings.DEBUG = True  # (pytest-django runs tests with DEBUG off)
    assert "Content-Security-Policy" not in client.get(missing)  # Django's technical 404
    settings.DEBUG = False
    response = client.get(missing)
    assert response.status_code == 404
    assert policy(response) == EXPECTED_CSP


# The project's templates and each app's own (a recipe app keeps its pages in its folder).
TEMPLATE_DIRS = [
    ROOT / "templates",
    *(
        d
        for app in ("annotator", "curation", "evaluation")
        for d in (ROOT / app).rglob("templates")
    ),
]
TEMPLATES = sorted(p for d in TEMPLATE_DIRS if d.is_dir() for p in d.rglob("*.html"))
INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I)
EVENT_HANDLER = re.compile(r"\son[a-z]+\s*=", re.I)


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_template_has_inline_script_style_or_event_handler(template):
    text = template.read_text()
    # {% comment %} blocks may name the tags they avoid
    text = re.sub(r"\{% comment %\}.*?\{% endcomment %\}|\{#.*?#\}", "", text, flags=re.S)
    assert not INLINE_SCRIPT.findall(text)
    assert "<style" not in text
    assert "style=" not in text  # bar lengths are classes: {% load bars %}, w-{{ share|pct }}
    assert not EVENT_HANDLER.findall(text)
    assert "javascript:" not in text


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0, 0), (37.4, 37), ("62", 62), (150, 100), (-3, 0), ("", 0), (None, 0), ("nan", 0)],
)
def test_bar_lengths_are_whole_percentages_from_0_to_100(value, expected):
    assert pct(value) == expected


def test_bars_render_as_classes():
    html = Template(
        '{% load bars %}{% widthratio 3 8 100 as bar %}<span class="w-{{ bar|pct }}"></span>'
    ).render(Context())
    assert html == '<span class="w-38"></span>'
    css = (ROOT / "static/css/blindspot.css").read_text()
    assert all(
        f".w-{n}{{width:{n}%}}" in css and f".h-{n}{{height:{n}%}}" in css for n in range(101)
    )


def test_plots_carry_no_style_attribute():
    svg = plots.bar_chart(
        ["a", "b"], [plots.Series("Alpha", [0.5, 0.7])], title="Accuracy", percent=True
    )
    assert "style=" not in svg
    assert 'class="plot"' in svg


# ---- API documentation --------------------------------------------------------------------
def test_api_docs_and_schema_are_for_logged_in_users_only(client):
    for name in ("api-docs", "api-redoc"):
        response = client.get(reverse(name))
        assert response.status_code == 302
        assert response["Location"] == f"{reverse('login')}?next={reverse(name)}"
    schema = client.get(reverse("api-schema"))
    assert schema.status_code == 401


def test_api_docs_load_swagger_ui_and_redoc_from_the_apps_static_files(client, crowdworker):
    client.force_login(crowdworker)
    docs = client.get(reverse("api-docs")).content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in docs
    assert f'<script src="{reverse("api-docs")}?script="></script>' in docs
    assert "http" not in re.sub(r"<meta[^>]*>", "", docs).split("<body>")[1]  # nothing remote
    init = client.get(reverse("api-docs") + "?script=")
    assert init.status_code == 200
    assert init["Content-Type"].startswith("application/javascript")
    assert '"/api/schema/"' in init.content.decode()
    redoc = client.get(reverse("api-redoc"))
    html = redoc.content.decode()
    # the sidecar's bundle, served by the app with its CDN logo swapped for a local one
    assert f'<script src="{reverse("api-redoc-bundle")}"></script>' in html
    bundle = client.get(reverse("api-redoc-bundle"))
    assert bundle.status_code == 200 and b"cdn.redoc.ly" not in bundle.content
    assert "fonts.googleapis" not in html
    assert policy(redoc)["style-src"] == "'self' 'unsafe-inline'"
    assert policy(redoc)["worker-src"] == "blob:"
    assert client.get(reverse("api-schema")).status_code == 200
