"""A project's choice of prompt template versions (``TemplatePin``): which version of a shared
template the project's pipelines render, and moving it after reading the diff.

Curators of the project (and admins) move a pin; researchers read the pins on the template
page; anyone else, a curator of another project or one removed from this one, gets 404 like a
missing page and changes nothing.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from annotator.platform import roles
from annotator.platform.scoping import curated_project_or_404

from .. import gateway
from ..models import Generation, PromptTemplate, TemplatePin
from .llm_templates import template_diff


class PinForm(forms.Form):
    version = forms.TypedChoiceField(coerce=int, label=gettext_lazy("Version"))

    def __init__(self, *args, versions: list[PromptTemplate], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["version"].choices = [
            (v.version, f"v{v.version}" + (f" ({_('current')})" if v.is_current else ""))
            for v in versions
        ]


def _versions_or_404(name: str) -> list[PromptTemplate]:
    versions = list(
        PromptTemplate.objects.filter(name=name).select_related("created_by").order_by("-version")
    )
    if not versions:
        raise Http404
    return versions


@roles.roles_required(roles.CURATOR)
def template_pin(request: HttpRequest, name: str, project_id: int) -> HttpResponse:
    """GET: the project's version of ``name``, the diff to another version (``?version=``,
    default the current one) and the generations each version made for the project. POST
    ``version``: the project renders that version from the next call on."""
    project = curated_project_or_404(request.user, project_id)
    versions = _versions_or_404(name)
    by_version = {v.version: v for v in versions}
    current = next((v for v in versions if v.is_current), versions[0])
    pin = (
        TemplatePin.objects.filter(project=project, name=name)
        .select_related("template", "pinned_by")
        .first()
    )
    status = 200
    if request.method == "POST":
        form = PinForm(request.POST, versions=versions)
        if form.is_valid():
            moved = gateway.template_pin(
                project=project,
                name=name,
                version=form.cleaned_data["version"],
                pinned_by=request.user,
            )
            messages.success(
                request,
                _("%(project)s renders %(name)s v%(v)d from its next call on.")
                % {"project": project.name, "name": name, "v": moved.template.version},
            )
            return redirect("curator-llm-template-pin", name=name, project_id=project.pk)
        status = 400
    else:
        form = PinForm(request.GET or None, versions=versions)
    chosen = form.cleaned_data.get("version") if form.is_bound and form.is_valid() else None
    target = by_version.get(chosen) or current
    pinned = pin.template if pin else None
    used = dict(
        Generation.objects.filter(project=project, template_name=name)
        .values_list("template_version")
        .annotate(n=Count("id"))
        .values_list("template_version", "n")
    )
    context = {
        "project": project,
        "name": name,
        "pin": pin,
        "pinned": pinned,
        "current": current,
        "target": target,
        "versions": [{"tpl": v, "used": used.get(v.version, 0)} for v in versions],
        "form": form
        if form.is_bound
        else PinForm(initial={"version": target.version}, versions=versions),
        "diff": template_diff(pinned, target) if pinned and pinned != target else None,
        "left": pinned,
        "right": target,
        "moves": list(reversed(pin.moves)) if pin else [],
    }
    return render(request, "curation/llm/template_pin.html", context, status=status)
