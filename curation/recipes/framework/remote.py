"""Files fetched from remote http(s) URLs a recipe imports (dataset images …): a short timeout,
a size limit, and public hosts only (a dataset URL must not reach into the server's network)."""

from __future__ import annotations

import ipaddress
import re
import socket
import urllib.error
import urllib.request
from pathlib import PurePosixPath
from urllib.parse import urlparse

from curation import assets

TIMEOUT_S = 3.0


class FetchFailed(Exception):
    """A remote file could not be fetched; ``reason`` says why (shown next to its link)."""

    def __init__(self, reason: str, *, unreachable: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.unreachable = unreachable


def fetch_remote(url: str, *, timeout: float = TIMEOUT_S, max_bytes: int | None = None):
    """The bytes at an http(s) URL within ``timeout`` seconds. Hosts on private, loopback or
    link-local networks are refused (a dataset URL must not reach into the server's network)."""
    max_bytes = max_bytes or assets.max_image_bytes()
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise FetchFailed("not an http(s) URL")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(parsed.hostname, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise FetchFailed(f"host not reachable ({exc})"[:300], unreachable=True) from None
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if not address.is_global:
            raise FetchFailed("refused: the host is on a private or local network")
    request = urllib.request.Request(url, headers={"User-Agent": "Blindspot (dataset image)"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            data = response.read(max_bytes + 1)
    except urllib.error.HTTPError as exc:
        raise FetchFailed(f"HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise FetchFailed(f"not reachable ({reason})"[:300], unreachable=True) from None
    if len(data) > max_bytes:
        raise FetchFailed(f"larger than {max_bytes // 2**20} MB")
    return data


def remote_name(url: str) -> str:
    """A file name without a suffix (dots become underscores): the bytes decide the format."""
    stem = PurePosixPath(urlparse(url).path).stem
    return re.sub(r"[^A-Za-z0-9_-]+", "_", stem)[:100] or "image"
