"""What every evaluation page shares: the roles of its actions and the import page."""

from __future__ import annotations

from django.http import HttpRequest
from django.urls import reverse
from django.utils.translation import gettext as _

from annotator.platform.views import Flash, form_page, job_news

from .. import selectors
from .forms import ImportForm

READ, EVALUATE, CURATE = selectors.READ, selectors.EVALUATE, selectors.CURATE


def abilities(request: HttpRequest) -> dict:
    """What the page may offer: the server checks again on every action."""
    return {
        "can_evaluate": selectors.can(request.user, EVALUATE),
        "can_curate": selectors.can(request.user, CURATE),
    }


def import_page(
    request: HttpRequest, form: ImportForm, start, checked: str, imported: str, **context
):
    """An import: the form's fields are ``start``'s arguments (with the content of the file or
    text); checked now, so nothing is written on a refusal, then imported in a job whose page
    the person is sent to saying ``checked``, or ``imported`` when the job has finished already
    (each with the number of rows as %(n)d)."""

    def save(data: dict):
        content, filename = form.content()
        args = {k: v for k, v in data.items() if k not in ("file", "text")}
        return start(**args, content=content, filename=filename, created_by=request.user)

    def news(started) -> Flash:
        job, n = started
        said = {"started": checked % {"n": n}, "finished": imported % {"n": n}}
        return job_news(job, what=_("The import"), **said)

    return form_page(
        request,
        form,
        save,
        "evaluation/import.html",
        {**context, **abilities(request)},
        done=news,
        then=lambda started: reverse("curator-job", args=[started[0].pk]),
    )
