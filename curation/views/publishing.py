"""The "publish a version" button of the recipe pages."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from annotator.platform.errors import ServiceError
from annotator.platform.views import perform, refuse


class PublishForm(forms.Form):
    label = forms.CharField(max_length=60, label=gettext_lazy("Version label"), initial="v1")


def publish_version(
    request: HttpRequest,
    publish: Callable[..., Any],
    *,
    back: str,
    done: Callable[[Any], str],
    then: str | None = None,
    form_class: type[PublishForm] = PublishForm,
    refuse: Callable[[HttpRequest, ServiceError], None] = refuse,
) -> HttpResponse:
    """The "publish a version" button: the form's fields (the label, at most 60 characters)
    are ``publish``'s arguments, then as ``perform``."""
    form = form_class(request.POST)
    if not form.is_valid():
        messages.error(request, _("Give the version a label (at most 60 characters)."))
        return redirect(back)
    call = partial(publish, **form.cleaned_data, created_by=request.user)
    return perform(request, call, back=back, done=done, then=then, refuse=refuse)
