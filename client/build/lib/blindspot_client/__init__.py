"""blindspot-client: Blindspot's REST API from Python (``Client``), typed, with the server's
refusals as exceptions (``blindspot_client.errors``)."""

from .client import ENDPOINTS, Client, Job, Outcomes, Project, Queue
from .errors import (
    BlindspotError,
    ChecksumMismatch,
    Conflict,
    Forbidden,
    InvalidRequest,
    JobFailed,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    ServerError,
    Unauthorized,
)

__version__ = "0.1.0"
__all__ = [
    "ENDPOINTS",
    "BlindspotError",
    "ChecksumMismatch",
    "Client",
    "Conflict",
    "Forbidden",
    "InvalidRequest",
    "Job",
    "JobFailed",
    "NotFound",
    "Outcomes",
    "PayloadTooLarge",
    "Project",
    "Queue",
    "RateLimited",
    "ServerError",
    "Unauthorized",
]
