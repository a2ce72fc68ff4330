"""Settings read from the environment: checked in a fresh interpreter, as a deployment would.

The values are read from the settings module alone (no ``django.setup()``: loading every app,
torch included, costs seconds per interpreter and changes no setting); ``check --deploy`` runs
the whole project."""

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def settings_in_fresh_process(**env: str) -> dict:
    code = (
        "import json; from django.conf import settings; "
        "print(json.dumps({'default': settings.STORAGES['default'], "
        "'emb': str(settings.BLINDSPOT_EMBEDDINGS_DIR), 'llm': settings.BLINDSPOT_LLM_BASE_URL}))"
    )
    environ = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    environ.update({"DJANGO_SETTINGS_MODULE": "blindspot.settings", "DEBUG": "1", **env})
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_media_on_local_disk_by_default():
    got = settings_in_fresh_process()
    assert got["default"]["BACKEND"] == "django.core.files.storage.FileSystemStorage"


def test_media_on_s3_compatible_storage_when_a_bucket_is_named():
    got = settings_in_fresh_process(
        AWS_STORAGE_BUCKET_NAME="blindspot-media",
        AWS_S3_ENDPOINT_URL="http://127.0.0.1:9000",
        BLINDSPOT_LLM_BASE_URL="http://127.0.0.1:11434/v1",
    )
    assert got["default"]["BACKEND"] == "storages.backends.s3.S3Storage"
    assert got["default"]["OPTIONS"]["bucket_name"] == "blindspot-media"
    assert got["default"]["OPTIONS"]["endpoint_url"] == "http://127.0.0.1:9000"
    assert got["llm"] == "http://127.0.0.1:11434/v1"


def security_in_fresh_process(**env: str) -> dict:
    """The security settings a deployment with this environment gets (DEBUG as given)."""
    code = (
        "import json; from django.conf import settings; "
        "print(json.dumps({k: getattr(settings, k) for k in ("
        "'SECURE_SSL_REDIRECT', 'SECURE_HSTS_SECONDS', 'SECURE_HSTS_INCLUDE_SUBDOMAINS', "
        "'SESSION_COOKIE_SECURE', 'CSRF_COOKIE_SECURE', 'AXES_FAILURE_LIMIT')} | "
        "{'cooloff': settings.AXES_COOLOFF_TIME.total_seconds(), "
        "'img_src': settings.CONTENT_SECURITY_POLICY['DIRECTIVES']['img-src']}))"
    )
    environ = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AWS_", "SECURE", "AXES_", "CSP_")) and k != "DEBUG"
    }
    environ.update({"DJANGO_SETTINGS_MODULE": "blindspot.settings", "SECRET_KEY": "k" * 60, **env})
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


ALL_ON = {
    "SECURE_SSL_REDIRECT": True,
    "SECURE_HSTS_SECONDS": 31536000,
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
    "SESSION_COOKIE_SECURE": True,
    "CSRF_COOKIE_SECURE": True,
}
ALL_OFF = {
    "SECURE_SSL_REDIRECT": False,
    "SECURE_HSTS_SECONDS": 0,
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": False,
    "SESSION_COOKIE_SECURE": False,
    "CSRF_COOKIE_SECURE": False,
}


def only(got: dict, keys: dict) -> dict:
    return {k: got[k] for k in keys}


def test_secure_unset_follows_debug():
    assert only(security_in_fresh_process(DEBUG="0"), ALL_ON) == ALL_ON
    assert only(security_in_fresh_process(DEBUG="1"), ALL_OFF) == ALL_OFF


def test_secure_0_turns_everything_off_in_production():
    # a lab install behind plain HTTP: no HTTPS redirect, no HSTS, cookies over HTTP
    got = security_in_fresh_process(DEBUG="0", SECURE="0")
    assert only(got, ALL_OFF) == ALL_OFF


def test_secure_1_turns_everything_on_with_debug():
    assert only(security_in_fresh_process(DEBUG="1", SECURE="1"), ALL_ON) == ALL_ON


def test_secure_parts_can_still_be_overridden_one_by_one():
    got = security_in_fresh_process(DEBUG="0", SECURE_SSL_REDIRECT="0", SECURE_HSTS_SECONDS="60")
    assert got["SECURE_SSL_REDIRECT"] is False
    assert got["SECURE_HSTS_SECONDS"] == 60
    assert got["SESSION_COOKIE_SECURE"] is True


def test_production_settings_pass_check_deploy_as_ci_runs_it():
    environ = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AWS_", "SECURE", "AXES_", "CSP_")) and k != "DEBUG"
    }
    environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "blindspot.settings",
            "DEBUG": "0",
            "SECRET_KEY": "Zq8" + "".join(chr(65 + i % 26) + str(i) for i in range(40)),
            "ALLOWED_HOSTS": "example.org",
        }
    )
    out = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_login_throttling_is_configured_from_the_environment():
    default = security_in_fresh_process(DEBUG="1")
    assert (default["AXES_FAILURE_LIMIT"], default["cooloff"]) == (5, 900)
    got = security_in_fresh_process(DEBUG="1", AXES_FAILURE_LIMIT="3", AXES_COOLOFF_MINUTES="30")
    assert (got["AXES_FAILURE_LIMIT"], got["cooloff"]) == (3, 1800)


def test_csp_allows_images_from_the_bucket_and_declared_hosts_only():
    assert security_in_fresh_process(DEBUG="1")["img_src"] == ["'self'", "data:"]
    minio = security_in_fresh_process(
        DEBUG="1",
        AWS_STORAGE_BUCKET_NAME="media",
        AWS_S3_ENDPOINT_URL="http://127.0.0.1:9000",
        CSP_IMG_HOSTS="https://images.example.org",
    )
    assert minio["img_src"] == [
        "'self'",
        "data:",
        "http://127.0.0.1:9000",
        "https://images.example.org",
    ]
    aws = security_in_fresh_process(
        DEBUG="1", AWS_STORAGE_BUCKET_NAME="media", AWS_S3_REGION_NAME="eu-west-1"
    )
    assert aws["img_src"] == [
        "'self'",
        "data:",
        "https://media.s3.amazonaws.com",
        "https://media.s3.eu-west-1.amazonaws.com",
        "https://s3.eu-west-1.amazonaws.com",
    ]
    cdn = security_in_fresh_process(
        DEBUG="1", AWS_STORAGE_BUCKET_NAME="media", AWS_S3_CUSTOM_DOMAIN="cdn.example.org"
    )
    assert cdn["img_src"] == ["'self'", "data:", "https://cdn.example.org"]


def _conn_max_age(**env: str):
    code = (
        "import json; from django.conf import settings; "
        "print(json.dumps(settings.DATABASES['default']['CONN_MAX_AGE']))"
    )
    environ = {k: v for k, v in os.environ.items() if k != "CONN_MAX_AGE"}
    environ.update({"DJANGO_SETTINGS_MODULE": "blindspot.settings", "DEBUG": "1", **env})
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True, text=True
    )
    return out.returncode, out.stdout.strip().splitlines()[-1] if out.stdout else out.stderr


def test_postgresql_connections_are_kept_for_the_process_life_unless_told_otherwise():
    pg = "postgres://postgres@127.0.0.1:5432/blindspot"
    assert _conn_max_age(DATABASE_URL=pg) == (0, "null")  # None: never closed for age
    assert _conn_max_age(DATABASE_URL=pg, CONN_MAX_AGE="600") == (0, "600")
    assert _conn_max_age(DATABASE_URL=pg, CONN_MAX_AGE="none") == (0, "null")
    assert _conn_max_age(DATABASE_URL="sqlite:////tmp/x.sqlite3") == (0, "0")
    code, err = _conn_max_age(DATABASE_URL=pg, CONN_MAX_AGE="soon")
    assert code != 0 and "CONN_MAX_AGE must be a number of seconds or 'none'" in err


def test_model_calls_are_not_logged_line_by_line_at_info():
    # A Celery worker runs at INFO; the HTTP client's line per model call stays out of its log
    # (the gateway records every call as a Generation), whatever the root level
    root = logging.getLogger()
    level = root.level
    try:
        root.setLevel(logging.INFO)
        for name in ("httpx", "httpx2", "httpcore"):
            assert not logging.getLogger(name).isEnabledFor(logging.INFO), name
        assert logging.getLogger("curation.gateway").isEnabledFor(logging.INFO)
    finally:
        root.setLevel(level)
