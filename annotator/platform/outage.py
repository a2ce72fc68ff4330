"""Clean answers while a backing service is down.

:class:`ServiceDownMiddleware` (outermost but for security headers and static files): a request
that fails because PostgreSQL or Redis does not answer gets 503 with ``Retry-After``: JSON under
``/api/``, a short "try again in a moment" page otherwise (rendered without the database: no
navigation, no user). Whatever raised it: the view, a middleware, the session saved after it.

:class:`SessionMiddleware`: Django's, except that a session that cannot be saved because the
database just went away does not turn an answer already given into an error: a submit whose
transaction committed answers success.

:class:`OutageMiddleware`: a job the request started that the broker could not take (Redis
down) is kept, waiting to be sent (``jobs.job_deliver``); the answer says so: an API call gets
503 with ``Retry-After`` and a JSON body naming the job, a page keeps its answer (the job's card
says "Waiting to be sent") with a warning message.
"""

from __future__ import annotations

import logging
import sys

from django.contrib import messages
from django.contrib.sessions.middleware import SessionMiddleware as DjangoSessionMiddleware
from django.core.signals import got_request_exception
from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from kombu.exceptions import OperationalError as BrokerError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from .edge import is_api
from .jobs import collect_unsent

log = logging.getLogger(__name__)
RETRY_AFTER_S = 30  # the lost-job sweep's period: by then the job has been sent again
DOWN_RETRY_AFTER_S = 10
# What a backing service that does not answer raises (a lost connection, a refused one).
UNAVAILABLE = (
    OperationalError,
    InterfaceError,
    BrokerError,
    RedisConnectionError,
    RedisTimeoutError,
)


def _outage_of(exc: BaseException | None) -> str | None:
    """ "database" or "task queue" when ``exc`` says a backing service is down, else None."""
    if isinstance(exc, OperationalError | InterfaceError):
        return "database"
    if isinstance(exc, UNAVAILABLE):
        return "task queue"
    return None


def _remember_outage(sender, request=None, **kwargs) -> None:
    """``got_request_exception``: note on the request that a service was down, for the
    middleware around the layer that turned the exception into a 500."""
    what = _outage_of(sys.exc_info()[1])
    if what and request is not None:
        request.blindspot_outage = what


got_request_exception.connect(_remember_outage, dispatch_uid="blindspot-outage")


def unavailable_response(request: HttpRequest, what: str) -> HttpResponse:
    headers = {"Retry-After": str(DOWN_RETRY_AFTER_S)}
    message = (
        _("The database is not answering; nothing was lost. Try again in a moment.")
        if what == "database"
        else _("The task queue is not answering; nothing was lost. Try again in a moment.")
    )
    if is_api(request):
        return JsonResponse({"message": message}, status=503, headers=headers)
    # No request in the context: no context processor may reach the database that is down.
    html = render_to_string("unavailable.html", {"message": message})
    return HttpResponse(html, status=503, headers=headers)


class ServiceDownMiddleware:
    """503 with Retry-After for a request that failed on a backing service that is down."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        what = getattr(request, "blindspot_outage", None)
        if what and response.status_code == 500:
            return unavailable_response(request, what)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception):
        what = _outage_of(exception)
        if what is None:
            return None
        log.warning("%s %s: %s down: %s", request.method, request.path, what, exception)
        return unavailable_response(request, what)


class SessionMiddleware(DjangoSessionMiddleware):
    """Django's session middleware; a save that fails because the database went away after the
    view answered keeps the answer (the session change is lost, not the work)."""

    def process_response(self, request, response):
        try:
            return super().process_response(request, response)
        except DatabaseError as exc:
            log.warning("session not saved (%s); the answer stands", exc)
            return response


def unsent_response(job_ids: list[int]) -> JsonResponse:
    body = {
        "message": _(
            "The task queue (Redis) is not answering. The job was recorded and waits to be "
            "sent; it starts by itself as soon as the queue answers, so do not start it again."
        ),
        "job_id": job_ids[0],
        "jobs": job_ids,
        "status": "waiting to be sent",
    }
    return JsonResponse(body, status=503, headers={"Retry-After": str(RETRY_AFTER_S)})


class OutageMiddleware:
    """After the message middleware (it adds messages to a page's answer)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with collect_unsent() as unsent:
            response = self.get_response(request)
        if not unsent or response.status_code >= 400:
            return response
        if is_api(request):
            return unsent_response(unsent)
        messages.warning(
            request,
            ngettext(
                "The task queue is not answering: job #%(ids)s is kept and starts as soon as "
                "it answers.",
                "The task queue is not answering: jobs #%(ids)s are kept and start as soon as "
                "it answers.",
                len(unsent),
            )
            % {"ids": ", #".join(str(i) for i in unsent)},
        )
        return response
