"""What a refused call raises: one exception per status a caller may want to catch, each
carrying the server's message (and, for invalid input, its list of errors)."""

from __future__ import annotations

from typing import Any


class BlindspotError(Exception):
    """A call the server refused, or one that could not be made. ``status`` is the HTTP
    status (None when no answer came), ``message`` the server's own words."""

    status: int | None = None

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        errors: list[dict[str, Any]] | None = None,
        method: str = "",
        path: str = "",
    ) -> None:
        self.message = message
        if status is not None:
            self.status = status
        self.errors = errors or []
        self.method, self.path = method, path
        where = f" ({method} {path})" if method else ""
        super().__init__(f"{self.status or 'error'}: {message}{where}")


class InvalidRequest(BlindspotError):
    """400: the input was refused; ``errors`` lists each problem with its field or line."""

    status = 400


class Unauthorized(BlindspotError):
    """401: no token, or a wrong one (BLINDSPOT_TOKEN; each user's key is on /account/token/)."""

    status = 401


class Forbidden(BlindspotError):
    """403: signed in, but this operation is not open to you."""

    status = 403


class NotFound(BlindspotError):
    """404: missing, or outside your projects (Blindspot answers both the same way)."""

    status = 404


class Conflict(BlindspotError):
    """409: the state changed under you (a lease lost, a version published, already answered)."""

    status = 409


class PayloadTooLarge(BlindspotError):
    """413: the body is over the server's limit; send smaller chunks."""

    status = 413


class RateLimited(BlindspotError):
    """429: too many attempts; ``retry_after`` says how many seconds to wait, when known."""

    status = 429
    retry_after: float | None = None


class ServerError(BlindspotError):
    """5xx: the server failed; the request may be retried."""


class JobFailed(BlindspotError):
    """A background job ended in failure; ``job`` is its last state."""

    def __init__(self, job: Any) -> None:
        self.job = job
        super().__init__(f"Job {job.id} ({job.kind}) failed: {job.error or job.message}")


class ChecksumMismatch(BlindspotError):
    """A downloaded file's SHA-256 is not the one the server recorded; the file was removed."""


BY_STATUS: dict[int, type[BlindspotError]] = {
    400: InvalidRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    429: RateLimited,
}


def error_for(status: int) -> type[BlindspotError]:
    if status in BY_STATUS:
        return BY_STATUS[status]
    return ServerError if status >= 500 else BlindspotError
