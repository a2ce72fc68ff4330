"""The LLM gateway's records: providers, versioned prompt templates and every generation."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from annotator.platform.models import CreatedStamp, JobStamp, NewestFirst, optional_link


class LLMProvider(models.Model):
    """An OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, …) or the offline rule-based drafter."""

    class Kind(models.TextChoices):
        OPENAI = "openai", _("OpenAI-compatible endpoint")
        OFFLINE = "offline", _("Offline rule-based drafter")

    project = models.ForeignKey(
        "annotator.Project",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="llm_providers",
        help_text=_("Empty: available to every project."),
    )
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.OPENAI)
    base_url = models.URLField(max_length=500, blank=True)
    # Name of an environment variable holding the key, or the key itself (never shown back).
    api_key = models.CharField(max_length=500, blank=True)
    model = models.CharField(max_length=200, blank=True)
    temperature = models.FloatField(default=0.0)
    max_tokens = models.PositiveIntegerField(default=1024)
    timeout_s = models.FloatField(default=60.0)
    max_retries = models.PositiveSmallIntegerField(default=3)
    concurrency = models.PositiveSmallIntegerField(default=4)
    supports_vision = models.BooleanField(default=False)
    is_default = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="provider_project_name_uniq"),
        ]

    def __str__(self) -> str:
        return self.name


class PromptTemplate(CreatedStamp):
    """One version of a named prompt. Editing makes a new row with ``version + 1``; old versions
    stay so every Generation points at the exact text it was rendered from."""

    name = models.SlugField(max_length=100)
    version = models.PositiveIntegerField(default=1)
    title = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    system = models.TextField(blank=True)
    text = models.TextField(help_text=_("Python str.format style: {caption_1}, {question}, …"))
    variables = models.JSONField(default=list, blank=True)
    output_schema = models.JSONField(
        null=True, blank=True, help_text=_("JSON Schema of the expected output; empty: plain text.")
    )
    source = models.CharField(
        max_length=200, blank=True, help_text=_("Where the prompt comes from (paper, section).")
    )
    sha256 = models.CharField(max_length=64)
    is_current = models.BooleanField(default=True)

    class Meta:
        ordering = ["name", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="template_name_version_uniq"),
            models.UniqueConstraint(
                fields=["name"],
                condition=models.Q(is_current=True),
                name="template_one_current",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"


class TemplatePin(models.Model):
    """The version of a named prompt a project renders. Set to the then-current version at the
    project's first use of the name and moved only by a curator of the project (who sees the
    diff), so a new version of the shared template never changes what the project's pipelines
    send without someone of the project choosing it. ``moves`` keeps each earlier pin."""

    project = models.ForeignKey("annotator.Project", on_delete=models.CASCADE, related_name="+")
    name = models.SlugField(max_length=100)
    template = models.ForeignKey(PromptTemplate, on_delete=models.PROTECT, related_name="pins")
    # Empty: pinned automatically at the project's first use of the template.
    pinned_by = optional_link(settings.AUTH_USER_MODEL)
    pinned_at = models.DateTimeField(default=timezone.now)
    # Earlier pins, oldest first: {"version", "pinned_by", "pinned_at"}.
    moves = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["project", "name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="template_pin_uniq"),
        ]

    def __str__(self) -> str:
        return f"{self.name} pinned for project {self.project_id}"


class Generation(JobStamp):
    """One LLM call and everything needed to know where its words came from."""

    class Status(models.TextChoices):
        OK = "ok", _("OK")
        FAILED = "failed", _("Failed")

    project = optional_link("annotator.Project", related_name="generations")
    provider = models.ForeignKey(
        LLMProvider, null=True, on_delete=models.SET_NULL, related_name="generations"
    )
    provider_kind = models.CharField(max_length=8)
    template = models.ForeignKey(
        PromptTemplate, null=True, blank=True, on_delete=models.PROTECT, related_name="generations"
    )
    template_name = models.CharField(max_length=100, blank=True)
    template_version = models.PositiveIntegerField(null=True, blank=True)
    template_sha256 = models.CharField(max_length=64, blank=True)
    purpose = models.CharField(max_length=100, blank=True, help_text=_("e.g. naturalbench.yes_no"))
    variables = models.JSONField(default=dict, blank=True)
    messages = models.JSONField(help_text=_("The rendered prompt as sent (images elided)."))
    model = models.CharField(max_length=200)
    params = models.JSONField(default=dict, blank=True)
    seed = models.BigIntegerField(null=True, blank=True)
    status = models.CharField(max_length=8, choices=Status.choices)
    raw_response = models.TextField(blank=True)
    output = models.JSONField(null=True, blank=True)
    logprobs = models.JSONField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=1)
    # One entry per attempt: outcome, error, latency, tokens, response id and finish reason, so a
    # retried call shows why each earlier try was rejected.
    attempt_log = models.JSONField(default=list, blank=True)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    # The batch item this call answered (``params["items"][i]["key"]`` of its Job): a re-run of
    # the job skips items that already have an OK generation.
    item_key = models.CharField(max_length=200, blank=True)

    class Meta(NewestFirst.Meta):
        indexes = [
            models.Index(fields=["purpose", "-created_at"], name="generation_purpose_idx"),
            models.Index(fields=["status", "-created_at"], name="generation_status_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.purpose or self.template_name} #{self.pk}"

    @property
    def is_offline(self) -> bool:
        return self.provider_kind == LLMProvider.Kind.OFFLINE


class FromGeneration(models.Model):
    """A row whose words (or picture) an LLM call made: the Generation it came from, if any."""

    generation = models.ForeignKey(
        Generation, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )

    class Meta:
        abstract = True
