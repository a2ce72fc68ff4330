"""What every evaluation page shares: the roles of its actions and the import page."""

from __future__ import annotations

from django.http import HttpRequest
from django.urls import reverse

from annotator.platform.views import form_page

from .. import selectors
from .forms import ImportForm

READ, EVALUATE, CURATE = selectors.READ, selectors.EVALUATE, selectors.CURATE


def abilities(request: HttpRequest) -> dict:
    """What the page may offer: the server checks again on every action."""
    return {
        "can_evaluate": selectors.can(request.user, EVALUATE),
        "can_curate": selectors.can(request.user, CURATE),
    }


def import_page(request: HttpRequest, form: ImportForm, start, checked: str, **context):
    """An import: the form's fields are ``start``'s arguments (with the content of the file or
    text); checked now, so nothing is written on a refusal, then imported in a job whose page
    the person is sent to with ``checked`` (the number of rows as %(n)d)."""

    def save(data: dict):
        content, filename = form.content()
        args = {k: v for k, v in data.items() if k not in ("file", "text")}
        return start(**args, content=content, filename=filename, created_by=request.user)

    return form_page(
        request,
        form,
        save,
        "evaluation/import.html",
        {**context, **abilities(request)},
        done=lambda started: checked % {"n": started[1]},
        then=lambda started: reverse("curator-job", args=[started[0].pk]),
    )
