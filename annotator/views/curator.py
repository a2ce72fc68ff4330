"""Curator and researcher pages: projects, queues, uploads, disagreements, invitations, jobs.

Every read goes through ``annotator.selectors`` so that anything outside a user's reach answers
404 exactly like a missing object. Curators change things; researchers only read. Every view
serves one set of roles for all its methods, so a refused POST is refused before it does anything.
"""

from __future__ import annotations

import json
import logging
import re

import markdown
import nh3
from django.contrib import messages
from django.contrib.auth import login
from django.core.cache import cache
from django.core.paginator import Paginator
from django.db.models import Count, Max, Prefetch, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_POST
from rest_framework.authtoken.models import Token

from .. import forms, kinds, quality, selectors, services
from ..models import Annotation, Enrollment, Task, TaskQueue
from ..platform import jobs as platform_jobs
from ..platform import roles
from ..platform.errors import Conflict, Invalid, NotFound, ServiceError
from ..platform.jobs import job_enqueue
from ..platform.models import Invitation, Job
from ..platform.scoping import (
    curated_project_or_404,
    get_or_404,
    jobs_curated_by,
    jobs_for,
    projects_for,
)

log = logging.getLogger(__name__)

STAFF = (roles.CURATOR, roles.RESEARCHER)
CURATOR = (roles.CURATOR,)
EVERYONE = roles.ALL_ROLES

QUALITY_KEYS = (
    "percent_agreement",
    "cohen_kappa",
    "fleiss_kappa",
    "krippendorff_alpha",
    "gold_accuracy",
    "median_seconds",
    "tasks_per_hour",
    "n_annotations",
)


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def _markdown(text: str) -> str:
    return nh3.clean(markdown.markdown(text or "", extensions=["extra", "sane_lists"]))


def _attach_progress(queues: list[TaskQueue]) -> list[TaskQueue]:
    progress = selectors.queue_progress([q.pk for q in queues])
    for q in queues:
        q.progress = progress[q.pk]
        q.bar = _segments(q.progress)
    return queues


def _segments(p: dict) -> list[dict]:
    """A stacked bar: decided / undecided / leased / waiting, as percentages of all tasks."""
    total = p.get("total") or 0
    leased = min(p.get("leased", 0), p.get("open", 0))
    parts = [
        ("decided", _("decided"), p.get("decided", 0)),
        ("undecided", _("no decision"), p.get("undecided", 0)),
        ("leased", _("being worked on"), leased),
        ("open", _("waiting"), max(p.get("open", 0) - leased, 0)),
    ]
    return [
        {"cls": cls, "label": label, "n": n, "pct": round(100 * n / total, 2) if total else 0}
        for cls, label, n in parts
    ]


def _queue_quality(queue: TaskQueue) -> dict:
    """Quality numbers, cached until the queue gets a new annotation or enrollment change.

    They read every annotation of the queue (seconds on 100k); the key changes with the newest
    annotation and enrollment so a cached value is never stale.
    """
    latest = Annotation.objects.filter(queue=queue).aggregate(n=Count("id"), last=Max("id"))
    enrolled = Enrollment.objects.filter(queue=queue).aggregate(last=Max("updated_at"))
    changed = enrolled["last"].timestamp() if enrolled["last"] else 0
    key = (
        f"queue-quality:{queue.pk}:{queue.created_at.timestamp()}:"
        f"{latest['n']}:{latest['last']}:{changed}"
    )
    return cache.get_or_set(key, lambda: quality.queue_quality(queue), timeout=3600)


def _agreement_histogram(queue: TaskQueue) -> list[dict]:
    """Finished tasks by agreement, in four buckets; one query."""
    buckets = [
        ("< 50%", Q(agreement__lt=0.5)),
        ("50–66%", Q(agreement__gte=0.5, agreement__lt=0.67)),
        ("67–99%", Q(agreement__gte=0.67, agreement__lt=0.999)),
        ("100%", Q(agreement__gte=0.999)),
    ]
    agg = Task.objects.filter(queue=queue, is_gold=False, agreement__isnull=False).aggregate(
        **{f"b{i}": Count("id", filter=q) for i, (_label, q) in enumerate(buckets)}
    )
    values = [agg[f"b{i}"] for i in range(len(buckets))]
    top = max(values) or 1
    return [
        {"label": label, "n": n, "pct": round(100 * n / top)}
        for (label, _q), n in zip(buckets, values, strict=True)
    ]


def _response_summary(response) -> str:
    """A short human reading of any kind's response, for side-by-side tables."""
    if not isinstance(response, dict):
        return json.dumps(response, ensure_ascii=False)
    for key in ("decision", "answer", "winner", "verdict"):
        if key in response:
            text = str(response[key])
            if key == "verdict" and response.get("reason"):
                text += f" ({response['reason']})"
            if key == "winner" and "choice" in response:
                text += f" ({response['choice']})"
            return text
    if "tags" in response:
        return ", ".join(response["tags"])
    if "text" in response:
        return response["text"]
    return json.dumps(response, ensure_ascii=False)


def _payload_parts(payload) -> dict:
    """Pull images and text fields out of any payload for a read-only view."""
    images: list[dict] = []
    texts: list[tuple[str, str]] = []

    def walk(value, label: str) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("url"), str):
                images.append(value)
                return
            for k, v in value.items():
                walk(v, f"{label}.{k}" if label else k)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, f"{label}[{i}]")
        elif value is not None:
            texts.append((label, str(value)))

    walk(payload, "")
    return {"images": images, "texts": texts}


def _queue_jobs(user, queue: TaskQueue, limit: int = 5) -> list[Job]:
    return list(
        jobs_for(user).filter(params__queue_id=queue.pk).select_related("created_by")[:limit]
    )


# ---------------------------------------------------------------------------------------------
# projects
# ---------------------------------------------------------------------------------------------
@roles.roles_required(*STAFF)
def projects(request: HttpRequest) -> HttpResponse:
    """Every project in reach with its queues and their progress (four queries in all)."""
    items = list(
        projects_for(request.user).prefetch_related(
            Prefetch("queues", queryset=TaskQueue.objects.order_by("-priority", "id"))
        )
    )
    _attach_progress([q for p in items for q in p.queues.all()])
    return render(request, "annotator/curator/projects.html", {"projects": items})


@roles.roles_required(*CURATOR)
def project_new(request: HttpRequest) -> HttpResponse:
    form = forms.ProjectForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        project = services.project_create(created_by=request.user, **form.cleaned_data)
        messages.success(request, _("Project “%(p)s” created.") % {"p": project.name})
        return redirect("curator-project", project_id=project.pk)
    return render(request, "annotator/curator/project_new.html", {"form": form})


@roles.roles_required(*STAFF)
def project_detail(request: HttpRequest, project_id: int) -> HttpResponse:
    project = get_or_404(projects_for(request.user), pk=project_id)
    queues = _attach_progress(
        list(selectors.queues_for(request.user).filter(project=project).order_by("-priority", "id"))
    )
    return render(request, "annotator/curator/project.html", {"project": project, "queues": queues})


# ---------------------------------------------------------------------------------------------
# people of a project
# ---------------------------------------------------------------------------------------------
def _role_names(person) -> list[str]:
    return [str(roles.ROLE_LABELS[r]) for r in roles.ALL_ROLES if r in person.roles]


@roles.roles_required(*CURATOR)
def project_people(request: HttpRequest, project_id: int) -> HttpResponse:
    """The project's members and their roles; curators of the project remove people here."""
    project = curated_project_or_404(request.user, project_id)
    people = selectors.project_people(project)
    for person in people:
        person.role_names = _role_names(person)
    return render(request, "annotator/curator/people.html", {"project": project, "people": people})


@roles.roles_required(*CURATOR)
def project_member_remove(request: HttpRequest, project_id: int, user_id: int) -> HttpResponse:
    """GET: a confirmation page (the page works without JavaScript). POST: remove the person;
    their live leases in the project end at once. htmx posts answer with the emptied row."""
    project = curated_project_or_404(request.user, project_id)
    found = selectors.project_people(project, user_id=user_id)
    if not found:
        raise Http404
    person = found[0]
    if request.method != "POST":
        return render(
            request,
            "annotator/curator/people_remove.html",
            {"project": project, "person": person, "role_names": _role_names(person)},
        )
    try:
        ended = services.project_member_remove(project=project, user=person, by=request.user)
    except ServiceError as exc:
        if request.htmx:
            return HttpResponse(exc.message, status=exc.status, content_type="text/plain")
        messages.error(request, exc.message)
        return redirect("curator-project-people", project_id=project.pk)
    text = ngettext(
        "%(u)s was removed from %(p)s; %(n)d task they held went back to the pool.",
        "%(u)s was removed from %(p)s; %(n)d tasks they held went back to the pool.",
        ended,
    ) % {"u": person.username, "p": project.name, "n": ended}
    if request.htmx:
        return render(request, "annotator/curator/_person_removed.html", {"message": text})
    messages.success(request, text)
    return redirect("curator-project-people", project_id=project.pk)


# ---------------------------------------------------------------------------------------------
# queues
# ---------------------------------------------------------------------------------------------
def _apply_service_error(form, exc: ServiceError) -> None:
    """Attach a service refusal to the field it is about (the kind's errors name ``config``)."""
    field = "config" if exc.message.startswith("config") else None
    form.add_error(field, exc.message)


@roles.roles_required(*CURATOR)
def queue_new(request: HttpRequest, project_id: int) -> HttpResponse:
    project = get_or_404(projects_for(request.user), pk=project_id)
    initial = {"kind": request.GET.get("kind")} if request.GET.get("kind") in kinds.REGISTRY else {}
    form = forms.QueueForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            queue = services.queue_create(
                project=project,
                kind=form.cleaned_data["kind"],
                **form.service_fields(),
            )
        except ServiceError as exc:
            _apply_service_error(form, exc)
        else:
            messages.success(request, _("Queue created. Now upload its tasks."))
            return redirect("curator-queue-upload", queue_id=queue.pk)
    return render(
        request,
        "annotator/curator/queue_form.html",
        {
            "form": form,
            "project": project,
            "queue": None,
            "default_configs": forms.DEFAULT_CONFIGS,
        },
    )


@roles.roles_required(*CURATOR)
def queue_edit(request: HttpRequest, queue_id: int) -> HttpResponse:
    queue = get_or_404(selectors.managed_queues_for(request.user), pk=queue_id)
    form = forms.QueueForm(request.POST or None, queue=queue)
    if request.method == "POST" and form.is_valid():
        try:
            services.queue_update(queue=queue, by=request.user, **form.service_fields())
        except ServiceError as exc:
            _apply_service_error(form, exc)
        else:
            messages.success(request, _("Queue saved."))
            return redirect("curator-queue", queue_id=queue.pk)
    return render(
        request,
        "annotator/curator/queue_form.html",
        {"form": form, "project": queue.project, "queue": queue, "default_configs": {}},
    )


@roles.roles_required(*STAFF)
def queue_detail(request: HttpRequest, queue_id: int) -> HttpResponse:
    queue = get_or_404(selectors.queues_for(request.user), pk=queue_id)
    progress = selectors.queue_progress([queue.pk])[queue.pk]
    stats = _queue_quality(queue)
    annotators = stats["per_annotator"]
    top_n = max((a["n"] for a in annotators), default=0) or 1
    for a in annotators:
        a["n_pct"] = round(100 * a["n"] / top_n)
        a["can_resume"] = a.get("enrollment_id") and a.get("enrollment_state") in (
            Enrollment.State.PAUSED,
            Enrollment.State.FAILED,
        )
    kind = kinds.REGISTRY.get(queue.kind)
    return render(
        request,
        "annotator/curator/queue.html",
        {
            "queue": queue,
            "kind": kind,
            "progress": progress,
            "segments": _segments(progress),
            "stats": stats,
            "annotators": annotators,
            "histogram": _agreement_histogram(queue),
            "jobs": _queue_jobs(request.user, queue),
            "instructions_html": _markdown(queue.instructions),
            "lease_minutes": round(queue.lease_ttl.total_seconds() / 60),
            "exports": [
                (fmt, f"/api/queues/{queue.pk}/{what}/?format={fmt}")
                for what in ("outcomes", "annotations")
                for fmt in ("jsonl", "csv")
            ],
        },
    )


@roles.roles_required(*CURATOR)
@require_POST
def queue_status(request: HttpRequest, queue_id: int) -> HttpResponse:
    queue = get_or_404(selectors.managed_queues_for(request.user), pk=queue_id)
    status = request.POST.get("status", "")
    try:
        services.queue_set_status(queue=queue, status=status)
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request, _("The queue is now %(s)s.") % {"s": queue.get_status_display().lower()}
        )
    return redirect("curator-queue", queue_id=queue.pk)


def _task_ids_from_form(values: list[str]) -> list[int] | None:
    """Ids from one or more form fields, each holding ids separated by commas or spaces."""
    ids = []
    for part in (p for value in values for p in re.split(r"[\s,]+", value) if p):
        if not part.isascii() or not part.isdigit() or len(part) > 30:
            return None
        ids.append(int(part))
    return ids


def _back(request: HttpRequest, fallback: str) -> str:
    """The page the form came from (``next``, on this site only), else ``fallback``."""
    target = request.POST.get("next", "")
    safe = url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return target if target and safe else fallback


@roles.roles_required(*CURATOR)
@require_POST
def queue_tasks_cancel(request: HttpRequest, queue_id: int) -> HttpResponse:
    """Cancel the tasks named in ``ids`` (with an optional ``reason``), then go back."""
    queue = get_or_404(selectors.managed_queues_for(request.user), pk=queue_id)
    back = _back(request, reverse("curator-queue", args=[queue.pk]))
    ids = _task_ids_from_form(request.POST.getlist("ids"))
    if ids is None:
        messages.error(request, _("Task ids are whole numbers, separated by commas or spaces."))
        return redirect(back)
    try:
        result = services.tasks_cancel(
            queue=queue, task_ids=ids, reason=request.POST.get("reason", "")
        )
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, result.message)
    return redirect(back)


@roles.roles_required(*CURATOR)
@require_POST
def enrollment_resume(request: HttpRequest, enrollment_id: int) -> HttpResponse:
    enrollment = get_or_404(
        Enrollment.objects.select_related("annotator").filter(
            queue__in=selectors.managed_queues_for(request.user)
        ),
        pk=enrollment_id,
    )
    services.enrollment_resume(enrollment=enrollment)
    messages.success(
        request, _("%(u)s can work in this queue again.") % {"u": enrollment.annotator.username}
    )
    return redirect("curator-queue", queue_id=enrollment.queue_id)


def _checked_rows(queue: TaskQueue, content: bytes) -> list[services.TaskRow]:
    """Parse and validate an upload, reporting every bad line at once.

    Lines that are not JSON are reported together with the schema errors of the lines that are,
    so a curator fixes the file in one pass.
    """
    try:
        rows = services.parse_task_rows(content)
    except Invalid as exc:
        if not exc.errors:
            raise
        bad = {e["line"] for e in exc.errors}
        lines = content.decode("utf-8-sig").splitlines()
        # Blank the unreadable lines: blank lines are skipped but keep the numbering.
        readable = "\n".join("" if n in bad else line for n, line in enumerate(lines, start=1))
        more: list[dict] = []
        try:
            services.validate_task_rows(queue=queue, rows=services.parse_task_rows(readable))
        except Invalid as schema_exc:
            more = schema_exc.errors
        errors = sorted([*exc.errors, *more], key=lambda e: e["line"])
        raise Invalid(
            _("%(n)d line(s) have problems; nothing was imported.") % {"n": len(errors)}, errors
        ) from exc
    services.validate_task_rows(queue=queue, rows=rows)
    return rows


@roles.roles_required(*CURATOR)
def queue_upload(request: HttpRequest, queue_id: int) -> HttpResponse:
    """Validate a JSONL upload at the edge (all errors, with line numbers), then import in a job."""
    queue = get_or_404(selectors.managed_queues_for(request.user), pk=queue_id)
    form = forms.UploadForm(request.POST or None, request.FILES or None)
    error = None
    if request.method == "POST" and form.is_valid():
        try:
            rows = _checked_rows(queue, form.content())
        except Invalid as exc:
            error = exc
        else:
            job = job_enqueue(
                kind="annotator.import_tasks",
                params={
                    "queue_id": queue.pk,
                    "rows": [
                        {"payload": r.payload, "gold": r.gold, "id": r.external_id} for r in rows
                    ],
                },
                created_by=request.user,
                project=queue.project,
                total=len(rows),
            )
            messages.success(request, _("%(n)d task(s) are being imported.") % {"n": len(rows)})
            return redirect("curator-job", job_id=job.pk)
    return render(
        request,
        "annotator/curator/upload.html",
        {
            "queue": queue,
            "form": form,
            "error": error,
            "examples": forms.example_lines(queue.kind),
        },
        status=400 if error else 200,
    )


@roles.roles_required(*STAFF)
def queue_disagreements(request: HttpRequest, queue_id: int) -> HttpResponse:
    queue = get_or_404(selectors.queues_for(request.user), pk=queue_id)
    tasks = (
        selectors.tasks_for(request.user)
        .filter(queue=queue, is_gold=False)
        .filter(Q(state=Task.State.UNDECIDED) | Q(escalations__gt=0) | Q(agreement__lt=1))
        .exclude(state=Task.State.CANCELLED)
        .order_by("agreement", "-escalations", "id")
        .prefetch_related(
            Prefetch(
                "annotations",
                queryset=Annotation.objects.filter(is_gold=False)
                .select_related("annotator")
                .order_by("id"),
            )
        )
    )
    page = Paginator(tasks, 20).get_page(request.GET.get("page"))
    for task in page.object_list:
        task.parts = _payload_parts(task.payload)
        for a in task.annotations.all():
            a.summary = _response_summary(a.response)
    return render(request, "annotator/curator/disagreements.html", {"queue": queue, "page": page})


@roles.roles_required(*STAFF)
def task_detail(request: HttpRequest, task_id: int) -> HttpResponse:
    task = get_or_404(
        selectors.tasks_for(request.user).select_related("queue", "queue__project"), pk=task_id
    )
    annotations = list(task.annotations.select_related("annotator").order_by("id"))
    for a in annotations:
        a.summary = _response_summary(a.response)
    return render(
        request,
        "annotator/curator/task.html",
        {
            "task": task,
            "queue": task.queue,
            "parts": _payload_parts(task.payload),
            "payload_json": json.dumps(task.payload, indent=2, ensure_ascii=False),
            "gold_json": json.dumps(task.gold, indent=2, ensure_ascii=False)
            if task.gold is not None
            else "",
            "outcome_json": json.dumps(task.outcome, indent=2, ensure_ascii=False)
            if task.outcome is not None
            else "",
            "assignments": task.assignments.select_related("annotator").order_by("leased_at"),
            "annotations": annotations,
        },
    )


# ---------------------------------------------------------------------------------------------
# invitations and tokens
# ---------------------------------------------------------------------------------------------
def _invites_for(user):
    """The invitations of the user's projects and the project-less ones they made. Someone
    removed from a project no longer sees its invitation links (one would let them back in)."""
    qs = Invitation.objects.select_related("project", "created_by", "used_by")
    if roles.has_role(user, [roles.ADMIN]):
        return qs
    return qs.filter(Q(project__isnull=True, created_by=user) | Q(project__in=projects_for(user)))


@roles.roles_required(*CURATOR)
def invites(request: HttpRequest) -> HttpResponse:
    projects_qs = projects_for(request.user)
    form = forms.InviteForm(request.POST or None, user=request.user, projects=projects_qs)
    created = None
    if request.method == "POST" and form.is_valid():
        try:
            created = services.invitation_create(
                created_by=request.user,
                role=form.cleaned_data["role"],
                project=form.cleaned_data["project"],
                days=form.cleaned_data["days"],
            )
        except ServiceError as exc:
            form.add_error("role", exc.message)
        else:
            messages.success(request, _("Invitation created. Copy the link and send it."))
            form = forms.InviteForm(user=request.user, projects=projects_qs)
    now = timezone.now()
    items = list(_invites_for(request.user)[:200])
    for inv in items:
        inv.status = "used" if inv.used_at else ("expired" if inv.expires_at <= now else "unused")
        inv.link = request.build_absolute_uri(reverse("invite-accept", args=[inv.token]))
    return render(
        request,
        "annotator/curator/invites.html",
        {
            "form": form,
            "invites": items,
            "created": created,
            "created_link": request.build_absolute_uri(
                reverse("invite-accept", args=[created.token])
            )
            if created
            else "",
        },
    )


def invite_accept(request: HttpRequest, token: str) -> HttpResponse:
    """Public: a one-time link creates an account with the invitation's role."""
    invitation = (
        Invitation.objects.select_related("project")
        .filter(token=token, used_at__isnull=True, expires_at__gt=timezone.now())
        .first()
    )
    if invitation is None:
        raise Http404
    form = forms.InviteAcceptForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            user = services.invitation_accept(
                token=token,
                username=form.cleaned_data["username"],
                password=form.cleaned_data["password1"],
            )
        except NotFound as exc:
            raise Http404 from exc
        except ServiceError as exc:
            form.add_error("username", exc.message)
        else:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(request, _("Welcome, %(u)s!") % {"u": user.username})
            return redirect("home")
    return render(
        request,
        "annotator/accounts/invite_accept.html",
        {
            "form": form,
            "invitation": invitation,
            "role_label": roles.ROLE_LABELS.get(invitation.role, invitation.role),
        },
    )


invite_accept.roles = ()  # type: ignore[attr-defined]  # public: the token is the credential


@roles.roles_required(*EVERYONE)
def token(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        Token.objects.filter(user=request.user).delete()
        Token.objects.create(user=request.user)
        messages.success(request, _("A new token was made; the old one no longer works."))
        return redirect("token")
    tok, _created = Token.objects.get_or_create(user=request.user)
    return render(request, "annotator/accounts/token.html", {"token": tok})


# ---------------------------------------------------------------------------------------------
# jobs
# ---------------------------------------------------------------------------------------------
@roles.roles_required(*STAFF)
def jobs(request: HttpRequest) -> HttpResponse:
    qs = jobs_for(request.user).select_related("project", "created_by")
    page = Paginator(qs, 50).get_page(request.GET.get("page"))
    return render(request, "annotator/curator/jobs.html", {"page": page})


@roles.roles_required(*STAFF)
def job_detail(request: HttpRequest, job_id: int) -> HttpResponse:
    """The full page, or for htmx polling the job's row (``?part=row``) or card fragment."""
    job = get_or_404(jobs_for(request.user).select_related("project", "created_by"), pk=job_id)
    # The card offers the retry (it is what polling swaps in when the job fails).
    can_retry = (
        job.status == Job.Status.FAILED and jobs_curated_by(request.user).filter(pk=job.pk).exists()
    )
    if request.htmx:
        template = (
            "annotator/curator/_job_row.html"
            if request.GET.get("part") == "row"
            else "annotator/curator/_job_card.html"
        )
        return render(
            request,
            template,
            {
                "job": job,
                "wide": request.GET.get("wide") == "1",
                "can_retry": can_retry,
                "job_page": True,
            },
        )
    queue = None
    queue_id = job.params.get("queue_id") if isinstance(job.params, dict) else None
    if queue_id:
        queue = selectors.queues_for(request.user).filter(pk=queue_id).first()
    params = {k: v for k, v in (job.params or {}).items() if k != "rows"}
    return render(
        request,
        "annotator/curator/job.html",
        {
            "job": job,
            "can_retry": can_retry,
            "job_page": True,
            "queue": queue,
            "params_json": json.dumps(params, indent=2, ensure_ascii=False),
            "n_rows": len(job.params.get("rows", [])) if isinstance(job.params, dict) else 0,
            "result_json": json.dumps(job.result, indent=2, ensure_ascii=False)
            if job.result is not None
            else "",
        },
    )


@roles.roles_required(*CURATOR)
@require_POST
def job_retry(request: HttpRequest, job_id: int) -> HttpResponse:
    """Curators of the job's project (and admins) run a failed job again; others get 404."""
    job = get_or_404(jobs_curated_by(request.user), pk=job_id)
    try:
        copy = platform_jobs.job_retry(job=job, created_by=request.user)
    except Conflict as error:
        messages.error(request, error.message)
        return redirect("curator-job", job_id=job.pk)
    messages.success(request, _("Job #%(n)d retried as job #%(m)d.") % {"n": job.pk, "m": copy.pk})
    return redirect("curator-job", job_id=copy.pk)


urlpatterns = [
    path("curate/", projects, name="curator-projects"),
    path("curate/projects/new/", project_new, name="curator-project-new"),
    path("curate/projects/<int:project_id>/", project_detail, name="curator-project"),
    path("curate/projects/<int:project_id>/queues/new/", queue_new, name="curator-queue-new"),
    path("curate/projects/<int:project_id>/people/", project_people, name="curator-project-people"),
    path(
        "curate/projects/<int:project_id>/people/<int:user_id>/remove/",
        project_member_remove,
        name="curator-project-member-remove",
    ),
    path("curate/queues/<int:queue_id>/", queue_detail, name="curator-queue"),
    path("curate/queues/<int:queue_id>/edit/", queue_edit, name="curator-queue-edit"),
    path("curate/queues/<int:queue_id>/status/", queue_status, name="curator-queue-status"),
    path("curate/queues/<int:queue_id>/upload/", queue_upload, name="curator-queue-upload"),
    path(
        "curate/queues/<int:queue_id>/tasks/cancel/",
        queue_tasks_cancel,
        name="curator-queue-tasks-cancel",
    ),
    path(
        "curate/queues/<int:queue_id>/disagreements/",
        queue_disagreements,
        name="curator-queue-disagreements",
    ),
    path("curate/tasks/<int:task_id>/", task_detail, name="curator-task"),
    path(
        "curate/enrollments/<int:enrollment_id>/resume/",
        enrollment_resume,
        name="curator-enrollment-resume",
    ),
    path("curate/invites/", invites, name="curator-invites"),
    path("invite/<str:token>/", invite_accept, name="invite-accept"),
    path("account/token/", token, name="token"),
    path("jobs/", jobs, name="curator-jobs"),
    path("jobs/<int:job_id>/", job_detail, name="curator-job"),
    path("jobs/<int:job_id>/retry/", job_retry, name="curator-job-retry"),
]
