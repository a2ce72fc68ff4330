"""Settings read from the environment: checked in a fresh interpreter, as a deployment would."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def settings_in_fresh_process(**env: str) -> dict:
    code = (
        "import json, django; from django.conf import settings; django.setup(); "
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
