"""The jobs pages: the list, one job with its progress, retry."""

from __future__ import annotations

import json

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from .. import selectors
from ..platform import jobs as platform_jobs
from ..platform import roles
from ..platform.errors import Conflict
from ..platform.models import Job
from ..platform.scoping import (
    get_or_404,
    jobs_curated_by,
    jobs_for,
)
from .base import CURATOR, STAFF

CHUNKS_SHOWN = 200


@roles.roles_required(*STAFF)
def jobs(request: HttpRequest) -> HttpResponse:
    # A job's chunk jobs are listed on its own page, not here.
    qs = jobs_for(request.user).filter(parent=None).select_related("project", "created_by")
    page = Paginator(qs, 50).get_page(request.GET.get("page"))
    return render(request, "annotator/curator/jobs.html", {"page": page})


@roles.roles_required(*STAFF)
def job_detail(request: HttpRequest, job_id: int) -> HttpResponse:
    """The full page, or for htmx polling the job's row (``?part=row``) or card fragment."""
    job = get_or_404(jobs_for(request.user).select_related("project", "created_by"), pk=job_id)
    # The card offers the retry (it is what polling swaps in when the job fails).
    can_retry = (job.status == Job.Status.FAILED or job.waiting_to_send) and jobs_curated_by(
        request.user
    ).filter(pk=job.pk).exists()
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
    # Its chunk jobs (``annotator.platform.chunks``), the latest fan-out first.
    chunks = list(job.chunks.order_by("-created_at", "kind", "part")[:CHUNKS_SHOWN])
    return render(
        request,
        "annotator/curator/job.html",
        {
            "job": job,
            "can_retry": can_retry,
            "job_page": True,
            "queue": queue,
            "params_json": json.dumps(params, indent=2, ensure_ascii=False),
            "chunks": chunks,
            "n_chunks": job.chunks.count() if chunks else 0,
            "n_rows": len(job.params.get("rows", [])) if isinstance(job.params, dict) else 0,
            "result_json": json.dumps(job.result, indent=2, ensure_ascii=False)
            if job.result is not None
            else "",
        },
    )


@roles.roles_required(*CURATOR)
@require_POST
def job_retry(request: HttpRequest, job_id: int) -> HttpResponse:
    """Curators of the job's project (and admins) run a failed job again, or send again one
    waiting to be sent; others get 404."""
    job = get_or_404(jobs_curated_by(request.user), pk=job_id)
    if job.waiting_to_send:
        if platform_jobs.job_resend(job=job):
            messages.success(request, _("Job #%(n)d was sent.") % {"n": job.pk})
        else:
            messages.error(
                request,
                _("The task queue still does not answer; job #%(n)d stays waiting to be sent.")
                % {"n": job.pk},
            )
        return redirect("curator-job", job_id=job.pk)
    try:
        copy = platform_jobs.job_retry(job=job, created_by=request.user)
    except Conflict as error:
        messages.error(request, error.message)
        return redirect("curator-job", job_id=job.pk)
    messages.success(request, _("Job #%(n)d retried as job #%(m)d.") % {"n": job.pk, "m": copy.pk})
    return redirect("curator-job", job_id=copy.pk)
