"""Remote images of VisIT-Bench instances: fetched when reachable (``framework.remote``: short
timeout, public hosts only), otherwise kept as links that every page shows as such."""

from __future__ import annotations

from annotator.platform.errors import Invalid
from annotator.platform.jobs import job_progress
from curation import assets
from curation.recipes.framework.remote import FetchFailed, fetch_remote, remote_name

from .models import VisitImage, VisitPipeline
from .pipelines import FETCH_GIVE_UP_AFTER


def images_fetch(
    pipeline: VisitPipeline,
    *,
    job_id: int | None = None,
    retry_failed: bool = False,
    created_by=None,
) -> dict:
    """Fetch the remote images not stored yet. Stops after a few unreachable hosts in a row
    (no network: the rest stay links, each page says so). Idempotent: stored ones are skipped."""
    todo = VisitImage.objects.filter(
        instance__pipeline=pipeline, image__isnull=True
    ).select_related("instance")
    if not retry_failed:
        todo = todo.filter(fetch_error="")
    todo = list(todo.order_by("instance__position", "position"))
    job_progress(job_id=job_id, done=0, total=len(todo), message="Fetching")
    fetched = failed = streak = 0
    stopped = ""
    new_ids = []
    for done, visit_image in enumerate(todo, start=1):
        try:
            data = fetch_remote(visit_image.url)
            meta = (visit_image.instance.metadata or {}).get("public_images_metadata") or {}
            image, _new = assets.image_ingest(
                data=data,
                # The content decides the format: a URL's suffix is often wrong.
                name=remote_name(visit_image.url),
                source=visit_image.url,
                licence=str(meta.get("License", "") or ""),
                attribution=str(meta.get("Author", "") or ""),
            )
        except (FetchFailed, assets.ImageRejected) as exc:
            reason = exc.reason if isinstance(exc, FetchFailed) else str(exc)
            VisitImage.objects.filter(pk=visit_image.pk).update(fetch_error=reason[:300])
            failed += 1
            streak = streak + 1 if getattr(exc, "unreachable", False) else 0
            if streak >= FETCH_GIVE_UP_AFTER:
                stopped = (
                    f"Stopped after {streak} unreachable images in a row: the network seems "
                    f"down; {len(todo) - done} images stay links."
                )
                break
        else:
            VisitImage.objects.filter(pk=visit_image.pk).update(image=image, fetch_error="")
            new_ids.append(image.pk)
            fetched += 1
            streak = 0
        if job_id and done % 10 == 0:
            job_progress(job_id=job_id, done=done, message=f"{fetched} fetched, {failed} failed")
    assets.thumbnails_make(image_ids=new_ids)
    job_progress(
        job_id=job_id,
        done=len(todo),
        message=stopped or f"{fetched} fetched, {failed} kept as links",
    )
    return {"fetched": fetched, "failed": failed, "stopped": stopped}


def fetch_check(pipeline: VisitPipeline, params: dict) -> int:
    """Before the fetch job: something to fetch (its total), failed ones tried again."""
    n = VisitImage.objects.filter(instance__pipeline=pipeline, image__isnull=True).count()
    if not n:
        raise Invalid("Every image of this pipeline is stored already.")
    params.setdefault("retry_failed", True)
    return n
