"""Curator pages of the LLM gateway's prompts: templates (versions, diff, edit, restore) and the
generations log (what was sent and what came back).

Curators and researchers read templates and generations; only admins change templates, and each
project renders the version it pinned (``llm_pins``: its curators move it). Objects out of reach
answer 404 like missing ones. Providers have their own pages (``llm_providers``).
"""

from __future__ import annotations

import json
import math
import string

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Count, OuterRef, Subquery, TextField
from django.db.models.functions import Cast, Substr
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from annotator.platform import roles
from annotator.platform.forms import json_text
from annotator.platform.scoping import get_or_404, projects_for

from .. import gateway
from ..gateway import selectors
from ..gateway.diff import diff_stats, side_by_side
from ..models import Generation, LLMProvider, PromptTemplate

READERS = (roles.CURATOR, roles.RESEARCHER)
CURATOR = (roles.CURATOR,)
# Templates are shared by every project: only admins change them (as with shared providers), so
# no curator, of any project or none, changes the prompt another project's pipelines render.
# Every generation records the version and hash of the text it was rendered from.
EDITORS = (roles.ADMIN,)
PAGE_SIZE = 50
RESERVED_NAMES = {"new", "seed"}


def _pretty(value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


# ---------------------------------------------------------------------------------------------
# forms
# ---------------------------------------------------------------------------------------------
class TemplateForm(forms.Form):
    title = forms.CharField(max_length=200, required=False, label=gettext_lazy("Title"))
    description = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2}), label=gettext_lazy("Description")
    )
    source = forms.CharField(
        max_length=200,
        required=False,
        label=gettext_lazy("Source"),
        help_text=gettext_lazy("Where the prompt comes from (paper, section)."),
    )
    system = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "class": "mono", "dir": "auto"}),
        label=gettext_lazy("System prompt"),
    )
    text = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 10, "class": "mono", "dir": "auto"}),
        label=gettext_lazy("Prompt text"),
        help_text=gettext_lazy(
            "Variables in braces: {caption_1}. Write literal braces as {{ and }}."
        ),
    )
    output_schema = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 8, "class": "mono", "dir": "ltr"}),
        label=gettext_lazy("Output JSON Schema"),
        help_text=gettext_lazy("Empty: the model answers in plain text."),
    )

    def clean_output_schema(self):
        raw = (self.cleaned_data.get("output_schema") or "").strip()
        if not raw:
            return None
        return json_text(raw)


class NewTemplateForm(TemplateForm):
    name = forms.SlugField(
        max_length=100,
        label=gettext_lazy("Name"),
        help_text=gettext_lazy("Letters, digits, hyphens; recipes refer to templates by name."),
    )
    field_order = ["name", "title", "description", "source", "system", "text", "output_schema"]

    def clean_name(self):
        name = self.cleaned_data["name"]
        if name in RESERVED_NAMES:
            raise forms.ValidationError(
                _("“%(n)s” is reserved; choose another name.") % {"n": name}
            )
        if PromptTemplate.objects.filter(name=name).exists():
            raise forms.ValidationError(_("A template with this name exists; edit it instead."))
        return name


class GenerationFilter(forms.Form):
    purpose = forms.CharField(required=False, max_length=100, label=gettext_lazy("Purpose"))
    template = forms.ChoiceField(required=False, label=gettext_lazy("Template"))
    status = forms.ChoiceField(
        required=False,
        choices=[("", gettext_lazy("any")), *Generation.Status.choices],
        label=gettext_lazy("Status"),
    )
    provider = forms.ChoiceField(required=False, label=gettext_lazy("Provider"))
    offline = forms.ChoiceField(
        required=False,
        choices=[
            ("", gettext_lazy("any")),
            ("yes", gettext_lazy("offline drafter")),
            ("no", gettext_lazy("LLM endpoints")),
        ],
        label=gettext_lazy("Source"),
    )

    def __init__(self, *args, template_names, providers, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["template"].choices = [("", _("any"))] + [(n, n) for n in template_names]
        self.fields["provider"].choices = [("", _("any"))] + [
            (str(p.pk), p.name + (f" · {p.project.name}" if p.project_id else ""))
            for p in providers
        ]


# ---------------------------------------------------------------------------------------------
# templates
# ---------------------------------------------------------------------------------------------
@roles.roles_required(*READERS)
def templates(request: HttpRequest) -> HttpResponse:
    """Current version of every template, with its number of versions (one query)."""
    versions = (
        PromptTemplate.objects.filter(name=OuterRef("name"))
        .values("name")
        .annotate(n=Count("id"))
        .values("n")
    )
    items = (
        PromptTemplate.objects.filter(is_current=True)
        .select_related("created_by")
        .annotate(n_versions=Subquery(versions))
        .order_by("name")
    )
    items = list(items)
    current = {t.name: t for t in items}
    behind = [
        {"pin": pin, "current": current.get(pin.name)}
        for pin in selectors.template_pins_for(request.user)
        .filter(template__is_current=False)
        .order_by("project__name", "name")
    ]
    return render(
        request,
        "curation/llm/templates.html",
        {"items": items, "defaults": sorted(gateway.DEFAULT_TEMPLATES), "behind": behind},
    )


@roles.roles_required(*EDITORS)
@require_POST
def templates_seed(request: HttpRequest) -> HttpResponse:
    seeded = gateway.ensure_default_templates()
    messages.success(
        request,
        _("Built-in templates ready: %(names)s.") % {"names": ", ".join(t.name for t in seeded)},
    )
    return redirect("curator-llm-templates")


@roles.roles_required(*EDITORS)
def template_new(request: HttpRequest) -> HttpResponse:
    form = NewTemplateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            tpl = gateway.template_create(created_by=request.user, **data)
        except gateway.TemplateError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, _("Template “%(n)s” created.") % {"n": tpl.name})
            return redirect("curator-llm-template", name=tpl.name)
    return render(request, "curation/llm/template_form.html", {"form": form, "template": None})


def _version_or_404(name: str, version: str | None) -> PromptTemplate:
    qs = PromptTemplate.objects.filter(name=name).select_related("created_by")
    if version:
        try:
            return get_or_404(qs, version=int(version))
        except ValueError:
            raise Http404 from None
    return get_or_404(qs, is_current=True)


def _highlight(text: str) -> list[dict]:
    """The text in literal and ``{variable}`` pieces, for showing where values go."""
    parts: list[dict] = []
    try:
        parsed = list(string.Formatter().parse(text or ""))
    except ValueError:
        return [{"text": text, "var": False}]
    for literal, field, spec, conversion in parsed:
        if literal:
            parts.append({"text": literal, "var": False})
        if field is not None:
            extra = (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
            parts.append({"text": "{" + field + extra + "}", "var": True})
    return parts


def template_diff(old: PromptTemplate, new: PromptTemplate) -> list[dict]:
    def schema_text(t: PromptTemplate) -> str:
        return "" if t.output_schema is None else json.dumps(t.output_schema, indent=2)

    sections = []
    for label, a, b in (
        (_("System prompt"), old.system, new.system),
        (_("Prompt text"), old.text, new.text),
        (_("Output schema"), schema_text(old), schema_text(new)),
    ):
        rows = side_by_side(a, b) if a != b else []
        sections.append({"label": label, "same": a == b, "rows": rows, "stats": diff_stats(rows)})
    return sections


def _project_versions(user, name: str) -> list[dict]:
    """The user's projects and the version of ``name`` each renders (None: not used yet)."""
    pins = {p.project_id: p for p in selectors.template_pins_for(user).filter(name=name)}
    return [
        {"project": project, "pin": pins.get(project.pk)}
        for project in projects_for(user).order_by("name")
    ]


@roles.roles_required(*READERS)
def template_detail(request: HttpRequest, name: str) -> HttpResponse:
    """One version (``?v=``, default current), every version, and a diff (``?a=&b=``)."""
    shown = _version_or_404(name, request.GET.get("v"))
    versions = list(
        PromptTemplate.objects.filter(name=name).select_related("created_by").order_by("-version")
    )
    by_version = {v.version: v for v in versions}
    diff = None
    left = right = None
    if len(versions) > 1:
        try:
            a = int(request.GET.get("a") or versions[1].version)
            b = int(request.GET.get("b") or versions[0].version)
        except ValueError:
            a, b = versions[1].version, versions[0].version
        left, right = by_version.get(a), by_version.get(b)
        if left is not None and right is not None and left != right:
            diff = template_diff(left, right)
    return render(
        request,
        "curation/llm/template.html",
        {
            "projects": _project_versions(request.user, name),
            "tpl": shown,
            "versions": versions,
            "diff": diff,
            "left": left,
            "right": right,
            "schema_json": _pretty(shown.output_schema) if shown.output_schema is not None else "",
            "system_parts": _highlight(shown.system),
            "text_parts": _highlight(shown.text),
            "has_rule": gateway.offline.rule_for(name) is not None,
        },
    )


@roles.roles_required(*EDITORS)
def template_edit(request: HttpRequest, name: str) -> HttpResponse:
    current = _version_or_404(name, None)
    initial = {
        "title": current.title,
        "description": current.description,
        "source": current.source,
        "system": current.system,
        "text": current.text,
        "output_schema": _pretty(current.output_schema)
        if current.output_schema is not None
        else "",
    }
    form = TemplateForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            tpl = gateway.template_update(name=name, created_by=request.user, **form.cleaned_data)
        except gateway.TemplateError as exc:
            form.add_error(None, str(exc))
        else:
            if tpl.version == current.version:
                messages.info(
                    request, _("Content unchanged: still version %(v)d.") % {"v": tpl.version}
                )
            else:
                messages.success(request, _("Saved as version %(v)d.") % {"v": tpl.version})
            return redirect("curator-llm-template", name=name)
    return render(request, "curation/llm/template_form.html", {"form": form, "template": current})


@roles.roles_required(*EDITORS)
@require_POST
def template_restore(request: HttpRequest, name: str, version: int) -> HttpResponse:
    _version_or_404(name, str(version))
    tpl = gateway.template_restore(name=name, version=version, created_by=request.user)
    messages.success(
        request,
        _("Version %(old)d is current again as version %(new)d.")
        % {"old": version, "new": tpl.version},
    )
    return redirect("curator-llm-template", name=name)


# ---------------------------------------------------------------------------------------------
# generations
# ---------------------------------------------------------------------------------------------
LIST_FIELDS = (
    "id",
    "created_at",
    "purpose",
    "template_name",
    "template_version",
    "provider_kind",
    "provider__name",
    "model",
    "status",
    "attempts",
    "prompt_tokens",
    "completion_tokens",
    "latency_ms",
)


@roles.roles_required(*READERS)
def generations(request: HttpRequest) -> HttpResponse:
    """The log, newest first, filtered; big fields stay in the database (previews are cut
    there)."""
    visible_providers = list(selectors.provider_choices_for(request.user).select_related("project"))
    names = list(
        PromptTemplate.objects.filter(is_current=True)
        .order_by("name")
        .values_list("name", flat=True)
    )
    form = GenerationFilter(request.GET or None, template_names=names, providers=visible_providers)
    qs = selectors.generations_for(request.user)
    if form.is_bound:
        form.is_valid()
        f = form.cleaned_data
        if f.get("purpose"):
            qs = qs.filter(purpose__startswith=f["purpose"])
        if f.get("template"):
            qs = qs.filter(template_name=f["template"])
        if f.get("status"):
            qs = qs.filter(status=f["status"])
        if f.get("provider"):
            qs = qs.filter(provider_id=int(f["provider"]))
        if f.get("offline") == "yes":
            qs = qs.filter(provider_kind=LLMProvider.Kind.OFFLINE)
        elif f.get("offline") == "no":
            qs = qs.exclude(provider_kind=LLMProvider.Kind.OFFLINE)
    qs = (
        qs.values(*LIST_FIELDS)
        .annotate(
            output_preview=Substr(Cast("output", TextField()), 1, 140),
            error_preview=Substr("error", 1, 140),
        )
        .order_by("-created_at", "-id")
    )
    page = Paginator(qs, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(
        request,
        "curation/llm/generations.html",
        {"page": page, "form": form, "filtered": any(request.GET.get(k) for k in form.fields)},
    )


def _logprob_rows(logprobs) -> list[dict]:
    rows = []
    for item in (logprobs or {}).get("content", [])[:200]:
        rows.append(
            {
                "token": item.get("token", ""),
                "logprob": item.get("logprob"),
                "p": math.exp(item["logprob"]) if item.get("logprob") is not None else None,
                "top": [
                    {**t, "p": math.exp(t["logprob"])}
                    for t in item.get("top_logprobs", [])
                    if t.get("logprob") is not None
                ],
            }
        )
    return rows


def _message_parts(messages_: list) -> list[dict]:
    parts = []
    for m in messages_ or []:
        content = m.get("content")
        if isinstance(content, list):
            texts = [p.get("text", "") for p in content if p.get("type") == "text"]
            images = [p["image_url"]["url"] for p in content if p.get("type") == "image_url"]
        else:
            texts, images = [str(content or "")], []
        parts.append({"role": m.get("role", ""), "text": "\n".join(texts), "images": images})
    return parts


@roles.roles_required(*READERS)
def generation_detail(request: HttpRequest, generation_id: int) -> HttpResponse:
    gen = get_or_404(
        selectors.generations_for(request.user).select_related(
            "provider", "template", "project", "job", "created_by"
        ),
        pk=generation_id,
    )
    return render(
        request,
        "curation/llm/generation.html",
        {
            "gen": gen,
            "parts": _message_parts(gen.messages),
            "messages_json": _pretty(gen.messages),
            "variables_json": _pretty(gen.variables),
            "params_json": _pretty(gen.params),
            "output_json": _pretty(gen.output) if gen.output is not None else "",
            "output_is_text": isinstance(gen.output, str),
            "logprob_rows": _logprob_rows(gen.logprobs),
            "attempts": gen.attempt_log or [],
        },
    )
