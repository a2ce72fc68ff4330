"""The crowdworker workspace: home, the task page per kind, submit / skip / report / heartbeat.

One view serves the full page and, for htmx, the task fragment. Submit, skip and report answer an
htmx request with the NEXT task's fragment (the service claims it in the same call), so the next
item appears without another round trip; without JavaScript they redirect back to the work page.
Gold answers never reach a template: only the payload, the queue config and the assignment's
presentation do.
"""

from __future__ import annotations

import os
import uuid

import markdown
import nh3
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.core.files.storage import default_storage
from django.db import DatabaseError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy as _lazy
from django.views.decorators.http import require_GET, require_POST

from .. import selectors, services
from ..kinds import get_kind, report_reasons
from ..kinds.builtin import criterion_keys
from ..models import Annotation, Assignment, TaskQueue
from ..platform import roles
from ..platform.errors import Invalid, NotFound, ServiceError
from ..platform.files import media_url
from ..platform.home import home_cards
from ..platform.language import language_cookie_set, profile_language
from ..platform.roles import roles_required
from ..platform.scoping import get_or_404

SESSION_SINCE = "workspace_since"  # when this browser session's work began (ISO 8601)
MAX_UPLOAD_BYTES = 10 * 1024 * 1024
UPLOAD_TYPES = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/webp": ".webp",
    "image/gif": ".gif",
}


UNDONE = _lazy("Your answer was taken back: answer this task again.")


# --------------------------------------------------------------------------------------------
# Rendering helpers
# --------------------------------------------------------------------------------------------
def render_instructions(text: str) -> str:
    """Queue instructions are curator Markdown; sanitise the HTML before it reaches a page."""
    if not text.strip():
        return ""
    html = markdown.markdown(text, extensions=["extra", "sane_lists"])
    return mark_safe(nh3.clean(html))  # noqa: S308 - cleaned by nh3 just above


def _heartbeat_seconds(queue: TaskQueue) -> int:
    ttl = int(queue.lease_ttl.total_seconds())
    return max(5, min(60, ttl // 3))


def _kind_context(kind, queue: TaskQueue, payload: dict) -> dict:
    """What a kind partial needs beyond the public payload, prepared here to keep templates
    simple. ``payload`` is ``kind.public_payload``: the page shows nothing the API withholds."""
    config = queue.config
    ctx: dict = {"images": _images_of(payload)}
    if kind.name == "vqa_choice":
        ctx["options"] = kind.keys(config, payload)
    elif kind.name == "skill_tags":
        groups = []
        for group in config.get("taxonomy", []):
            groups.append({"group": group["group"], "tags": group["tags"]})
        ctx["groups"] = groups
        ctx["min_tags"] = config.get("min_tags", 1)
        ctx["max_tags"] = config.get("max_tags", 8)
    elif kind.name == "review":
        ctx["criteria"] = criterion_keys(config)
        ctx["criteria_advisory"] = bool(config.get("criteria_advisory"))
        ctx["reasons"] = [
            {"key": str(i + 1), **r} for i, r in enumerate(config.get("reason_codes", [])[:9])
        ]
    elif kind.name == "write_text":
        ctx["min_length"] = config.get("min_length", 1)
        ctx["max_length"] = config.get("max_length", 5000)
        ctx["allow_image"] = bool(config.get("allow_image") or config.get("require_image"))
        ctx["require_image"] = bool(config.get("require_image"))
    return ctx


def _images_of(payload: dict) -> list[dict]:
    """The images a public payload shows (one ``image`` or a list of ``images``)."""
    return [payload["image"]] if "image" in payload else payload.get("images", [])


PREFETCH_MAX = 8  # image addresses a task page asks the browser to preload for the next tasks


def _prefetch(kind, up_next: list[tuple[int, dict]]) -> str:
    """The addresses of the images of the tasks this person will most likely get next, for the
    browser to load while they answer this one (``data-prefetch``; app.js preloads them): the
    next task then paints from the cache. A look-ahead only: no lease, no slot held."""
    urls: list[str] = []
    for _task_id, payload in up_next:
        for image in _images_of(kind.public_payload(payload, {})):
            url = image.get("url", "")
            if url and not url.startswith("data:") and " " not in url and url not in urls:
                urls.append(url)
    return " ".join(urls[:PREFETCH_MAX])


def _progress(request: HttpRequest, queue: TaskQueue | None = None) -> dict:
    """The workspace's counters (one query): answers this session and today, and whether ``u``
    can take one back in ``queue``. The session's start is kept in it (written once): an undo
    takes its answer out of the count, and a submit writes no session."""
    since = parse_datetime(request.session.get(SESSION_SINCE) or "")
    if since is None:
        since = timezone.now()
        request.session[SESSION_SINCE] = since.isoformat()
    counts = selectors.my_answer_counts(request.user, session_since=since, queue=queue)
    return {
        "session_done": counts["session"],
        "today_done": counts["today"],
        "can_undo": counts["can_undo"],
    }


def _task_fields(kind, queue: TaskQueue, task_id: int, raw_payload: dict, presentation) -> dict:
    """What _task.html needs to show one task (a held one, or the look-ahead's)."""
    payload = kind.public_payload(raw_payload, presentation)
    return {
        "kind": kind,
        "task_id": task_id,
        "payload": payload,
        "keys": kind.keys(queue.config, raw_payload),
        "report_reasons": report_reasons(queue.config),
        "heartbeat_seconds": _heartbeat_seconds(queue),
        "k": _kind_context(kind, queue, payload),
    }


def _look_ahead(request: HttpRequest, ctx: dict, kind, up_next: list[tuple[int, dict]]) -> str:
    """The next task as the page will show it once this one is answered, rendered now (in a
    ``<template>``; app.js paints it the moment Enter is pressed, then reconciles with the
    submit's answer): the look-ahead's first task with its presentation for this person, and
    the counters as they stand after a new answer. No lease, no slot held: the submit names
    it (``prefer``) and the claim hands it out if it is still free."""
    if not up_next:
        return ""
    queue = ctx["queue"]
    task_id, raw = up_next[0]
    presentation = services.look_ahead_presentation(queue, task_id, request.user)
    ahead = {
        **ctx,
        **_task_fields(kind, queue, task_id, raw, presentation),
        "session_done": ctx["session_done"] + 1,
        "today_done": ctx["today_done"] + 1,
        "can_undo": queue.undo_window.total_seconds() > 0,
        "notice": "",
        "prefetch": "",
        "look_ahead": "",
    }
    return render_to_string("annotator/workspace/_task.html", ahead, request)


def _task_context(request: HttpRequest, queue: TaskQueue, claim: services.ClaimResult) -> dict:
    ctx = {"queue": queue, "claim": claim, **_progress(request, queue)}
    assignment = claim.assignment
    if assignment is None:
        if claim.retry_after:
            ctx["poll_seconds"] = max(2, min(int(claim.retry_after), 30))
        return ctx
    kind = get_kind(queue.kind)
    ctx.update(
        _task_fields(
            kind, queue, assignment.task_id, assignment.task.payload, assignment.presentation
        )
    )
    up_next = services.tasks_up_next(queue=queue, annotator=request.user)
    ctx["prefetch"] = _prefetch(kind, up_next)
    ctx["look_ahead"] = _look_ahead(request, ctx, kind, up_next)
    return ctx


def _render_task(
    request: HttpRequest,
    queue: TaskQueue,
    claim: services.ClaimResult,
    status: int = 200,
    *,
    notice: str = "",
) -> HttpResponse:
    ctx = _task_context(request, queue, claim)
    ctx["notice"] = notice
    if request.htmx:
        return render(request, "annotator/workspace/_task.html", ctx, status=status)
    ctx["instructions_html"] = render_instructions(queue.instructions)
    ctx["progress"] = selectors.my_queue_progress(request.user, queue)
    return render(request, "annotator/workspace/work.html", ctx, status=status)


def _alert(
    request: HttpRequest, message: str, status: int, *, queue_id: int | None, lost: bool = True
) -> HttpResponse:
    """An inline message in the current task's alert slot; the page and its input stay put.
    A 409 means the task on screen was lost (withdrawn, lease gone): the message then offers the
    next task on Enter, unless ``lost`` is False (an undo refused: the task on screen stands)."""
    response = render(
        request,
        "annotator/workspace/_alert.html",
        {
            "message": message,
            "status": status,
            "queue_id": queue_id,
            "lost": lost and status == 409,
        },
        status=status,
    )
    response["HX-Retarget"] = "#task-alert"
    response["HX-Reswap"] = "innerHTML"
    return response


def _my_assignment(request: HttpRequest, task_id: int) -> Assignment:
    """The requester's own assignment on ``task_id``; anyone else's task looks missing (404)."""
    assignment = (
        Assignment.objects.select_related("task", "queue")
        .filter(task_id=task_id, annotator=request.user)
        .first()
    )
    if assignment is None:
        raise Http404
    return assignment


def _fail(
    request: HttpRequest, error: ServiceError, queue_id: int, *, lost: bool = True
) -> HttpResponse:
    if isinstance(error, NotFound):
        raise Http404  # e.g. removed from the project: the task is out of reach
    if request.htmx:
        return _alert(request, error.message, error.status, queue_id=queue_id, lost=lost)
    messages.error(request, error.message)
    return redirect("work", queue_id=queue_id)


def _saved_without_next(request: HttpRequest, queue: TaskQueue) -> HttpResponse:
    """A stored answer whose next task could not be loaded (the database went away after the
    commit): a success that says so; for htmx a fragment that offers the next task."""
    if not request.htmx:
        return redirect("work", queue_id=queue.pk)
    url = redirect("work", queue_id=queue.pk).url
    return HttpResponse(
        format_html(
            '<section id="task-area" class="task-area"><div class="flash flash-success" '
            'role="status">{}</div><p><a class="btn btn-primary" href="{}" hx-get="{}" '
            'hx-target="#task-area" hx-swap="outerHTML" data-next-task>{} <kbd>Enter</kbd></a>'
            "</p></section>",
            _("Your answer is saved. The next task could not be loaded; try again in a moment."),
            url,
            url,
            _("Next task"),
        )
    )


def _answered(response: HttpResponse) -> HttpResponse:
    """An answer was stored or taken back: the header's queue progress refreshes shortly after
    (``_progress.html`` listens for ``bs-answered``, debounced)."""
    response["HX-Trigger"] = "bs-answered"
    return response


def _after(request: HttpRequest, queue: TaskQueue, claim: services.ClaimResult) -> HttpResponse:
    if request.htmx:
        return _render_task(request, queue, claim)
    return redirect("work", queue_id=queue.pk)


# --------------------------------------------------------------------------------------------
# Form fields → the kind's response JSON
# --------------------------------------------------------------------------------------------
def _first(post, name: str) -> str | None:
    value = post.get(name)
    return value if value not in (None, "") else None


# The kinds whose answer is one chosen value, and the field it is posted (and stored) as.
_CHOSEN_FIELD = {
    "pair_verify": "decision",
    "vqa_choice": "answer",
    "forced_choice": "choice",
    "review": "verdict",
}


def response_from_form(kind_name: str, post) -> dict:
    """Turn posted form fields into the response JSON the kind validates.

    Missing fields stay missing so the kind's schema names them in its error message.
    """
    response: dict = {}
    field = _CHOSEN_FIELD.get(kind_name)
    if field is not None:
        if (v := _first(post, field)) is not None:
            response[field] = v
    if kind_name == "skill_tags":
        response["tags"] = post.getlist("tags")
    elif kind_name == "review":
        checked = []
        for raw in post.getlist("checked"):
            try:
                checked.append(int(raw))
            except ValueError:
                checked.append(raw)  # the schema reports it
        response["checked"] = checked
        response["reason"] = _first(post, "reason")
        response["comment"] = post.get("comment", "")
    elif kind_name == "write_text":
        response["text"] = post.get("text", "")
    return response


def _store_upload(upload, assignment: Assignment) -> str:
    """Save an uploaded image and return its URL; refuse anything that is not a small image."""
    if upload.size > MAX_UPLOAD_BYTES:
        raise Invalid(_("The image is larger than 10 MB."))
    ext = UPLOAD_TYPES.get(upload.content_type or "")
    if ext is None:
        raise Invalid(_("Upload a PNG, JPEG, WebP or GIF image."))
    try:
        from PIL import Image

        Image.open(upload).verify()
        upload.seek(0)
    except Exception as exc:  # Pillow raises many kinds of errors for broken files
        raise Invalid(_("The uploaded file is not a readable image.")) from exc
    name = default_storage.save(
        os.path.join(
            "uploads", str(assignment.queue_id), str(assignment.task_id), f"{uuid.uuid4().hex}{ext}"
        ),
        upload,
    )
    return name


def _duration_ms(post) -> int:
    try:
        return max(0, int(post.get("duration_ms") or 0))
    except ValueError:
        return 0


# --------------------------------------------------------------------------------------------
# Views
# --------------------------------------------------------------------------------------------
@require_GET
@roles_required(*roles.ALL_ROLES)
def home(request: HttpRequest) -> HttpResponse:
    ctx: dict = {"cards": home_cards(request.user)}
    if roles.has_role(request.user, [roles.CROWDWORKER]):
        ctx["queues"] = selectors.available_queues(request.user)
        ctx.update(_progress(request))
    return render(request, "annotator/workspace/home.html", ctx)


@require_GET
@roles_required(roles.CROWDWORKER)
def work(request: HttpRequest, queue_id: int) -> HttpResponse:
    queue = get_or_404(selectors.queues_for(request.user), pk=queue_id)
    services.leases_elsewhere_release(annotator=request.user, queue=queue)
    claim = services.assignment_claim(queue=queue, annotator=request.user)
    return _render_task(request, queue, claim)


def _queue_of_task(request: HttpRequest, task_id: int) -> int:
    """The queue of the requester's own assignment on ``task_id`` (404 for anyone else's): what
    an error after a submit needs, read only then."""
    queue_id = (
        Assignment.objects.filter(task_id=task_id, annotator=request.user)
        .values_list("queue_id", flat=True)
        .first()
    )
    if queue_id is None:
        raise Http404
    return queue_id


def _preferred(post) -> int | None:
    """The look-ahead task the page painted as the next one (``prefer``), if it names one."""
    try:
        return int(post.get("prefer") or 0) or None
    except ValueError:
        return None


@require_POST
@roles_required(roles.CROWDWORKER)
def work_submit(request: HttpRequest, task_id: int) -> HttpResponse:
    stored: list[str] = []  # an upload saved for this answer, deleted if the answer is not

    def answer_of(assignment: Assignment) -> dict:
        """The posted form as the answer its queue's kind takes, read with the held lease (the
        submit's one read of the task, its queue and the assignment)."""
        queue = assignment.queue
        response = response_from_form(queue.kind, request.POST)
        upload = request.FILES.get("image")
        if upload is not None and queue.kind == "write_text":
            if not (queue.config.get("allow_image") or queue.config.get("require_image")):
                raise Invalid(_("This queue does not take image uploads."))
            if assignment.state == Assignment.State.LEASED:
                stored.append(_store_upload(upload, assignment))
                response["image"] = media_url(stored[0])
            elif assignment.state == Assignment.State.SUBMITTED:
                # A repeated post of the form (a double click) re-sends the file: the answer is
                # the same if the text is; the first upload stays.
                first = Annotation.objects.filter(task_id=task_id, annotator=request.user)
                image = first.values_list("response__image", flat=True).first()
                if image:
                    response["image"] = image
        return response

    try:
        result = services.annotation_submit(
            task_id=task_id,
            annotator=request.user,
            response=answer_of,
            duration_ms=_duration_ms(request.POST),
            prefer=_preferred(request.POST),
        )
    except ServiceError as error:
        for name in stored:
            default_storage.delete(name)
        if isinstance(error, NotFound):
            raise Http404 from error
        return _fail(request, error, _queue_of_task(request, task_id))
    if not result.created:
        for name in stored:
            default_storage.delete(name)
    try:
        return _answered(_after(request, result.queue, result.next))
    except DatabaseError:
        # The answer's transaction committed: it is stored, so this is no failure; the next
        # task is shown once the database answers again.
        return _saved_without_next(request, result.queue)


def _release_then_next(request: HttpRequest, task_id: int, release) -> HttpResponse:
    """Give the task back (``release()``: skip or report), then show the person's next task."""
    assignment = _my_assignment(request, task_id)
    try:
        release()
    except ServiceError as error:
        return _fail(request, error, assignment.queue_id)
    claim = services.assignment_claim(queue=assignment.queue, annotator=request.user)
    return _after(request, assignment.queue, claim)


@require_POST
@roles_required(roles.CROWDWORKER)
def work_skip(request: HttpRequest, task_id: int) -> HttpResponse:
    return _release_then_next(
        request,
        task_id,
        lambda: services.assignment_skip(task_id=task_id, annotator=request.user),
    )


@require_POST
@roles_required(roles.CROWDWORKER)
def work_report(request: HttpRequest, task_id: int) -> HttpResponse:
    return _release_then_next(
        request,
        task_id,
        lambda: services.assignment_report(
            task_id=task_id,
            annotator=request.user,
            reason=request.POST.get("reason", ""),
            details=request.POST.get("details", ""),
        ),
    )


@require_POST
@roles_required(roles.CROWDWORKER)
def work_undo(request: HttpRequest, queue_id: int) -> HttpResponse:
    """``u``: take back the last answer in this queue and show that task again."""
    queue = get_or_404(selectors.queues_for(request.user), pk=queue_id)
    try:
        assignment = services.annotation_undo_last(queue=queue, annotator=request.user)
    except ServiceError as error:
        return _fail(request, error, queue.pk, lost=False)  # the task on screen is still held
    if not request.htmx:
        messages.success(request, UNDONE)
        return redirect("work", queue_id=queue.pk)
    return _answered(_render_task(request, queue, services.ClaimResult(assignment), notice=UNDONE))


@require_POST
@roles_required(roles.CROWDWORKER)
def work_task_undo(request: HttpRequest, task_id: int) -> HttpResponse:
    """Undo one answer from the history page; the workspace then shows that task."""
    assignment = _my_assignment(request, task_id)
    try:
        services.annotation_undo(task_id=task_id, annotator=request.user)
    except ServiceError as error:
        if isinstance(error, NotFound):
            raise Http404 from error
        messages.error(request, error.message)
        return redirect("work-history", queue_id=assignment.queue_id)
    messages.success(request, UNDONE)
    return redirect("work", queue_id=assignment.queue_id)


@require_GET
@roles_required(roles.CROWDWORKER)
def work_history(request: HttpRequest, queue_id: int) -> HttpResponse:
    """My recent answers in this queue (the last 50), with undo while it is allowed."""
    queue = get_or_404(selectors.queues_for(request.user), pk=queue_id)
    entries = selectors.my_recent_answers(request.user, queue)
    first_undoable = next((e for e in entries if e.undo_until), None)
    for entry in entries:
        entry.summary = selectors.answer_summary(entry.response)
    return render(
        request,
        "annotator/workspace/history.html",
        {
            "queue": queue,
            "entries": entries,
            "first_undoable": first_undoable,
            "limit": selectors.HISTORY_LIMIT,
            "undo_minutes": round(queue.undo_window.total_seconds() / 60),
        },
    )


@require_GET
@roles_required(roles.CROWDWORKER)
def work_progress(request: HttpRequest, queue_id: int) -> HttpResponse:
    """The queue's progress and the person's share, in the workspace header: rendered with the
    page, then fetched again by htmx a moment after answers (``bs-answered``) and each minute,
    so the submit itself carries no counting over the whole queue."""
    queue = get_or_404(selectors.queues_for(request.user), pk=queue_id)
    return render(
        request,
        "annotator/workspace/_progress.html",
        {"queue": queue, "progress": selectors.my_queue_progress(request.user, queue)},
    )


@require_POST
@roles_required(roles.CROWDWORKER)
def work_release(request: HttpRequest, task_id: int) -> HttpResponse:
    """The workspace was left (pagehide → navigator.sendBeacon, with the CSRF token in the
    body): the held task goes back to the pool at once. 204, nothing to show."""
    assignment = _my_assignment(request, task_id)
    # Someone removed from the project sees their old tasks there as missing (404).
    get_or_404(selectors.queues_for(request.user), pk=assignment.queue_id)
    services.assignment_release(task_id=task_id, annotator=request.user)
    return HttpResponse(status=204)


@require_POST
@roles_required(roles.CROWDWORKER)
def work_heartbeat(request: HttpRequest, task_id: int) -> HttpResponse:
    assignment = _my_assignment(request, task_id)
    try:
        services.assignment_heartbeat(task_id=task_id, annotator=request.user)
    except ServiceError as error:
        return _alert(request, error.message, error.status, queue_id=assignment.queue_id)
    return HttpResponse(status=204)


class LoginView(auth_views.LoginView):
    template_name = "registration/login.html"
    redirect_authenticated_user = True

    def form_valid(self, form):
        # The language chosen when last signed in, whatever this browser's cookie says.
        response = super().form_valid(form)
        language_cookie_set(response, profile_language(form.get_user()))
        return response


login_view = LoginView.as_view()
login_view.roles = ()  # public: anyone may open the login page
logout_view = auth_views.LogoutView.as_view()
logout_view.roles = ()
