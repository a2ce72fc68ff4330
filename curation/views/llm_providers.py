"""Curator pages of the LLM gateway's providers: the list with each key's status, new and edit
forms, and a connection test.

Only curators see providers; a curator edits the providers of their projects, and shared
(project-less) providers are changed by admins only. Objects out of reach answer 404 like
missing ones.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from annotator.platform import roles
from annotator.platform.scoping import get_or_404, projects_for

from .. import gateway
from ..gateway import selectors
from ..gateway.providers import DEFAULT_MODEL, env_key_allowed
from ..models import LLMProvider

CURATOR = (roles.CURATOR,)


class ProviderForm(forms.Form):
    project = forms.ModelChoiceField(
        queryset=None,
        required=False,
        label=gettext_lazy("Project"),
        empty_label=gettext_lazy("All projects (shared)"),
    )
    name = forms.CharField(max_length=100, label=gettext_lazy("Name"))
    kind = forms.ChoiceField(choices=LLMProvider.Kind.choices, label=gettext_lazy("Kind"))
    # Not URLField: Django's validator refuses single-label hosts such as a compose service
    # ("http://vllm:8000/v1"), a common home for an OpenAI-compatible server.
    base_url = forms.CharField(
        max_length=500,
        required=False,
        label=gettext_lazy("Base URL"),
        help_text=gettext_lazy(
            "OpenAI-compatible, e.g. https://api.openai.com/v1 or a vLLM server."
        ),
    )
    model = forms.CharField(max_length=200, required=False, label=gettext_lazy("Model"))
    api_key = forms.CharField(
        max_length=500,
        required=False,
        label=gettext_lazy("API key"),
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text=gettext_lazy(
            "The key, or env:VAR_NAME to read it from the server's environment (names ending "
            "in API_KEY). Leave empty to keep the current key."
        ),
    )
    clear_api_key = forms.BooleanField(required=False, label=gettext_lazy("Remove the stored key"))
    temperature = forms.FloatField(min_value=0, max_value=2, label=gettext_lazy("Temperature"))
    max_tokens = forms.IntegerField(
        min_value=1, max_value=200_000, label=gettext_lazy("Max tokens")
    )
    timeout_s = forms.FloatField(min_value=0.1, max_value=600, label=gettext_lazy("Timeout (s)"))
    max_retries = forms.IntegerField(min_value=0, max_value=10, label=gettext_lazy("Retries"))
    concurrency = forms.IntegerField(
        min_value=1,
        max_value=64,
        label=gettext_lazy("Concurrency"),
        help_text=gettext_lazy("Calls in flight at once in a batch job."),
    )
    supports_vision = forms.BooleanField(required=False, label=gettext_lazy("Accepts images"))
    is_default = forms.BooleanField(
        required=False, label=gettext_lazy("Default for its project (or for all, when shared)")
    )

    def __init__(self, *args, user, instance: LLMProvider | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user
        self.instance = instance
        self.fields["project"].queryset = projects_for(user).order_by("name")
        if instance is None:
            self.fields["api_key"].help_text = _(
                "The key, or env:VAR_NAME to read it from the server's environment (names "
                "ending in API_KEY). Empty for servers that need none (vLLM, Ollama)."
            )
        self.is_admin = roles.has_role(user, [roles.ADMIN])
        if not self.is_admin:
            self.fields["project"].required = True
            self.fields["project"].empty_label = None

    def clean_base_url(self):
        url = (self.cleaned_data.get("base_url") or "").strip()
        if url:
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise forms.ValidationError(
                    _("Enter an http:// or https:// address, e.g. http://127.0.0.1:8000/v1.")
                )
        return url

    def clean_api_key(self):
        key = (self.cleaned_data.get("api_key") or "").strip()
        if key.startswith("env:") and not env_key_allowed(key[4:].strip()):
            raise forms.ValidationError(
                _("Only environment variables whose names end in API_KEY can hold a key.")
            )
        return key

    def clean(self):
        data = super().clean()
        if data.get("kind") == LLMProvider.Kind.OPENAI:
            for field in ("base_url", "model"):
                if not data.get(field):
                    self.add_error(field, _("Needed for an OpenAI-compatible endpoint."))
        name, project = data.get("name"), data.get("project")
        if name:
            clash = LLMProvider.objects.filter(project=project, name=name)
            if self.instance is not None:
                clash = clash.exclude(pk=self.instance.pk)
            if clash.exists():
                self.add_error("name", _("Another provider of this project has this name."))
        return data


# ---------------------------------------------------------------------------------------------
# providers
# ---------------------------------------------------------------------------------------------
@roles.roles_required(*CURATOR)
def providers(request: HttpRequest) -> HttpResponse:
    items = list(selectors.providers_for(request.user).select_related("project"))
    editable_projects = set(projects_for(request.user).values_list("pk", flat=True))
    is_admin = roles.has_role(request.user, [roles.ADMIN])
    for p in items:
        p.key_status = gateway.provider_key_status(p)
        p.editable = is_admin or (p.project_id is not None and p.project_id in editable_projects)
    return render(
        request,
        "curation/llm/providers.html",
        {
            "items": items,
            "env_base_url": getattr(settings, "BLINDSPOT_LLM_BASE_URL", "") or "",
        },
    )


def _provider_data(form: ProviderForm) -> tuple[dict, str | None]:
    data = {k: v for k, v in form.cleaned_data.items() if k not in ("api_key", "clear_api_key")}
    if form.cleaned_data.get("clear_api_key"):
        return data, ""
    return data, form.cleaned_data.get("api_key") or None


@roles.roles_required(*CURATOR)
def provider_new(request: HttpRequest) -> HttpResponse:
    initial = {
        "kind": LLMProvider.Kind.OPENAI,
        "base_url": getattr(settings, "BLINDSPOT_LLM_BASE_URL", "") or "",
        "model": getattr(settings, "BLINDSPOT_LLM_MODEL", "") or DEFAULT_MODEL,
        "temperature": 0.0,
        "max_tokens": 1024,
        "timeout_s": 60.0,
        "max_retries": 3,
        "concurrency": 4,
    }
    form = ProviderForm(request.POST or None, user=request.user, initial=initial)
    if request.method == "POST" and form.is_valid():
        data, key = _provider_data(form)
        provider = gateway.provider_save(data=data, api_key=key)
        messages.success(request, _("Provider “%(n)s” added.") % {"n": provider.name})
        return redirect("curator-llm-providers")
    return render(request, "curation/llm/provider_form.html", {"form": form, "provider": None})


@roles.roles_required(*CURATOR)
def provider_edit(request: HttpRequest, provider_id: int) -> HttpResponse:
    provider = get_or_404(selectors.providers_for(request.user), pk=provider_id)
    if not selectors.provider_editable(request.user, provider):
        raise Http404
    initial = {f: getattr(provider, f) for f in gateway.providers.PROVIDER_FIELDS}
    form = ProviderForm(request.POST or None, user=request.user, instance=provider, initial=initial)
    if request.method == "POST" and form.is_valid():
        data, key = _provider_data(form)
        gateway.provider_save(provider=provider, data=data, api_key=key)
        messages.success(request, _("Provider “%(n)s” saved.") % {"n": provider.name})
        return redirect("curator-llm-providers")
    return render(
        request,
        "curation/llm/provider_form.html",
        {"form": form, "provider": provider, "key_status": gateway.provider_key_status(provider)},
    )


@roles.roles_required(*CURATOR)
@require_POST
def provider_test(request: HttpRequest, provider_id: int) -> HttpResponse:
    """htmx: the result fragment; without JavaScript: a message on the providers page."""
    provider = get_or_404(selectors.providers_for(request.user), pk=provider_id)
    result = gateway.provider_test_connection(provider)
    if request.htmx:
        return render(
            request, "curation/llm/_test_result.html", {"result": result, "provider": provider}
        )
    level = messages.SUCCESS if result["ok"] else messages.ERROR
    messages.add_message(
        request, level, f"{provider.name}: {result['message']} ({result['latency_ms']} ms)"
    )
    return redirect("curator-llm-providers")
