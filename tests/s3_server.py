"""A real S3-compatible server for the tests: moto in server mode (``moto.server``), run as its own
process on a free 127.0.0.1 port and spoken to over HTTP by boto3 and django-storages exactly as
a MinIO or AWS endpoint would be (issue 25: "a real S3 server in the tests")."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import boto3

ACCESS_KEY = "blindspot-test-key"
SECRET_KEY = "blindspot-test-secret"
REGION = "us-east-1"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class S3Server:
    """``python -m moto.server`` on a free port; ``close()`` stops it."""

    def __init__(self, timeout: float = 60.0):
        self.port = _free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                err = self.process.stderr.read().decode(errors="replace")[-2000:]
                raise RuntimeError(f"moto's S3 server exited ({self.process.returncode}): {err}")
            try:
                with urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=2):
                    break
            except (urllib.error.URLError, OSError):
                if time.monotonic() > deadline:
                    self.close()
                    message = f"moto's S3 server did not answer on {self.endpoint}"
                    raise RuntimeError(message) from None
                time.sleep(0.2)

    def client(self):
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
        )

    def environment(self, bucket: str) -> dict[str, str]:
        """The deployment's environment that points Blindspot's storage switch at this server."""
        return {
            "AWS_STORAGE_BUCKET_NAME": bucket,
            "AWS_S3_ENDPOINT_URL": self.endpoint,
            "AWS_S3_REGION_NAME": REGION,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        }

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stderr:
            self.process.stderr.close()
