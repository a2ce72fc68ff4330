"""Forms for the curator pages: they check the shape of input; services check the meaning."""

from __future__ import annotations

import json
from datetime import timedelta

from django import forms
from django.contrib.auth import get_user_model, password_validation
from django.utils.translation import gettext_lazy as _

from . import kinds, outcomes, selectors
from .models import Task, TaskQueue
from .platform import roles, structured, webhooks
from .platform.forms import FileOrTextForm, json_text, model_bounds
from .platform.models import Project

# A sensible starting config for each kind, shown when a curator picks the kind.
DEFAULT_CONFIGS: dict[str, dict] = {
    "pair_verify": {},
    "vqa_choice": {},
    "skill_tags": {
        "taxonomy": [
            {
                "group": "Attribute",
                "tags": [
                    {"id": "color", "label": "Color", "key": "c"},
                    {"id": "size", "label": "Size", "key": "b"},
                    {"id": "material", "label": "Material", "key": "m"},
                ],
            },
            {
                "group": "Relation",
                "tags": [
                    {"id": "spatial", "label": "Spatial relation", "key": "p"},
                    {"id": "comparison", "label": "Comparison", "key": "o"},
                ],
            },
            {
                "group": "Reasoning",
                "tags": [
                    {"id": "counting", "label": "Counting", "key": "n"},
                    {"id": "text", "label": "Reading text (OCR)", "key": "t"},
                    {"id": "world", "label": "World knowledge", "key": "w"},
                ],
            },
        ],
        "min_tags": 1,
        "max_tags": 8,
    },
    "forced_choice": {},
    "review": {
        "criteria": [
            "The image shows what the text describes",
            "The answer is correct and unambiguous",
            "No harmful or private content",
        ],
        "reason_codes": [
            {"code": "caption", "label": "Problem in the caption"},
            {"code": "response", "label": "Problem in the response"},
            {"code": "image", "label": "Problem with the image"},
        ],
    },
    "write_text": {"min_length": 10, "max_length": 2000, "allow_image": False},
}

# One example line per kind for the upload page (the payload, and the same with a gold answer).
EXAMPLE_PAYLOADS: dict[str, dict] = {
    "pair_verify": {
        "images": [
            {"url": "https://example.org/a.jpg", "caption": "A dog left of a red ball"},
            {"url": "https://example.org/b.jpg", "caption": "A red ball left of a dog"},
        ]
    },
    "vqa_choice": {
        "image": {"url": "https://example.org/a.jpg"},
        "question": "Is the ball left of the dog?",
        "choices": ["Yes", "No"],
    },
    "skill_tags": {
        "images": [{"url": "https://example.org/a.jpg"}],
        "questions": ["How many red balls are there?"],
    },
    "forced_choice": {
        "images": [{"url": "https://example.org/a.jpg"}],
        "instruction": "Describe what is unusual in this picture.",
        "candidates": [{"id": "m1", "text": "A cat in a bathtub."}, {"id": "m2", "text": "A dog."}],
    },
    "review": {
        "title": "Counterfactual caption",
        "images": [{"url": "https://example.org/a.jpg"}],
        "text": "The sky in this photo is green.",
    },
    "write_text": {
        "prompt": "Write an instruction a person might ask about this image.",
        "images": [{"url": "https://example.org/a.jpg"}],
        "draft": "What colour is the car?",
    },
}
EXAMPLE_GOLD: dict[str, dict] = {
    "pair_verify": {"decision": "keep"},
    "vqa_choice": {"answer": "No"},
    "skill_tags": {"tags": ["counting", "color"]},
    "forced_choice": {"winner": "m1"},
    "review": {"verdict": "reject", "reason": "caption"},
    "write_text": {"text": "What is the person in the red coat holding?"},
}


def example_lines(kind: str) -> list[str]:
    payload = EXAMPLE_PAYLOADS.get(kind, {})
    lines = [json.dumps(payload, ensure_ascii=False)]
    if kind in EXAMPLE_GOLD:
        gold_row = {"id": "item-42", "payload": payload, "gold": EXAMPLE_GOLD[kind]}
        lines.append(json.dumps(gold_row, ensure_ascii=False))
    return lines


class ProjectForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=200)
    slug = forms.SlugField(
        label=_("Short name"), max_length=80, help_text=_("Letters, digits and dashes; unique.")
    )
    description = forms.CharField(
        label=_("Description"), required=False, widget=forms.Textarea(attrs={"rows": 3})
    )

    def clean_slug(self) -> str:
        slug = self.cleaned_data["slug"]
        if Project.objects.filter(slug=slug).exists():
            raise forms.ValidationError(_("A project with this short name exists already."))
        return slug


class WebhookForm(forms.Form):
    """A webhook's URL, note and events (the service checks the address)."""

    url = forms.URLField(
        label=_("Payload URL"),
        max_length=500,
        assume_scheme="https",
        help_text=_("Blindspot POSTs each event here as JSON, signed with the hook's secret."),
    )
    description = forms.CharField(label=_("Note"), max_length=200, required=False)
    events = forms.MultipleChoiceField(
        label=_("Events"),
        choices=[(name, f"{name} — {label}") for name, label in webhooks.EVENTS.items()],
        widget=forms.CheckboxSelectMultiple,
    )


class QueueForm(forms.Form):
    """Every setting of a queue. ``kind`` is fixed once the queue exists."""

    kind = forms.ChoiceField(label=_("Task kind"))
    title = forms.CharField(label=_("Title"), max_length=200)
    instructions = forms.CharField(
        label=_("Instructions"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text=_("Markdown; shown to annotators in the help drawer."),
    )
    config = forms.CharField(
        label=_("Configuration (JSON)"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 10, "class": "mono", "spellcheck": "false"}),
        help_text=_("Checked against the kind's schema. Leave empty for the kind's default."),
    )
    redundancy = forms.IntegerField(
        label=_("Redundancy N"), min_value=1, max_value=50, initial=3,
        help_text=_("Answers per task before it is decided."),
    )  # fmt: skip
    rule = forms.ChoiceField(
        label=_("Aggregation rule"), choices=TaskQueue.Rule.choices, initial="majority"
    )
    max_redundancy = forms.IntegerField(
        label=_("Escalate up to"), min_value=1, max_value=100, initial=5,
        help_text=_("Extra answers are asked for, up to this many, when there is no decision."),
    )  # fmt: skip
    lease_minutes = forms.IntegerField(
        label=_("Lease time (minutes)"), min_value=1, max_value=24 * 60, initial=10,
        help_text=_("A task comes back to the pool if its page is closed this long."),
    )  # fmt: skip
    undo_minutes = forms.IntegerField(
        label=_("Undo window (minutes)"), min_value=0, max_value=24 * 60, initial=2,
        required=False,
        help_text=_("A person may take an answer back this long after submitting, while the "
                    "task is not decided (0: never)."),
    )  # fmt: skip
    priority = forms.IntegerField(
        label=_("Priority"), initial=0, **model_bounds(TaskQueue, "priority")
    )
    gold_rate = forms.FloatField(
        label=_("Gold rate"), min_value=0, max_value=1, initial=0.0,
        help_text=_("Share of served items that are gold checks (0–1)."),
    )  # fmt: skip
    qualification_count = forms.IntegerField(
        label=_("Qualification items K"), min_value=0, max_value=100, initial=0,
        help_text=_("Gold items every annotator answers first; 0 means no qualification."),
    )  # fmt: skip
    qualification_min_accuracy = forms.FloatField(
        label=_("Qualification accuracy"), min_value=0, max_value=1, initial=0.8
    )
    gold_pause_below = forms.FloatField(
        label=_("Pause below gold accuracy"), min_value=0, max_value=1, required=False,
        help_text=_("Empty: never pause automatically."),
    )  # fmt: skip
    gold_pause_min_answers = forms.IntegerField(
        label=_("…after at least this many gold answers"),
        initial=5,
        **model_bounds(TaskQueue, "gold_pause_min_answers", low=1),
    )
    outcome_handler = forms.ChoiceField(label=_("Outcome handler"), required=False)

    def __init__(self, *args, queue: TaskQueue | None = None, **kwargs):
        if queue is not None and "initial" not in kwargs:
            kwargs["initial"] = self.initial_for(queue)
        super().__init__(*args, **kwargs)
        self.fields["kind"].choices = kinds.kind_choices()
        self.fields["outcome_handler"].choices = outcomes.handler_choices()
        if queue is not None:
            self.fields["kind"].disabled = True
            self.fields["kind"].help_text = _("The kind is fixed once a queue exists.")
        elif not self.is_bound and "config" not in self.initial:
            kind = self.initial.get("kind") or kinds.kind_choices()[0][0]
            self.initial["config"] = json.dumps(DEFAULT_CONFIGS.get(kind, {}), indent=2)

    @staticmethod
    def initial_for(queue: TaskQueue) -> dict:
        return {
            "kind": queue.kind,
            "title": queue.title,
            "instructions": queue.instructions,
            "config": json.dumps(queue.config, indent=2, ensure_ascii=False),
            "redundancy": queue.redundancy,
            "rule": queue.rule,
            "max_redundancy": queue.max_redundancy,
            "lease_minutes": max(1, round(queue.lease_ttl.total_seconds() / 60)),
            "undo_minutes": round(queue.undo_window.total_seconds() / 60),
            "priority": queue.priority,
            "gold_rate": queue.gold_rate,
            "qualification_count": queue.qualification_count,
            "qualification_min_accuracy": queue.qualification_min_accuracy,
            "gold_pause_below": queue.gold_pause_below,
            "gold_pause_min_answers": queue.gold_pause_min_answers,
            "outcome_handler": queue.outcome_handler,
        }

    def clean_config(self) -> dict:
        raw = (self.cleaned_data.get("config") or "").strip()
        if not raw:
            if self.fields["kind"].disabled:
                return {}
            return DEFAULT_CONFIGS.get(self.data.get("kind", ""), {})
        value = json_text(raw)
        if not isinstance(value, dict):
            raise forms.ValidationError(_("The configuration must be a JSON object {…}."))
        return value

    def clean(self):
        data = super().clean()
        red, top = data.get("redundancy"), data.get("max_redundancy")
        if red and top and top < red:
            self.add_error(
                "max_redundancy", _("The escalation maximum must be at least the redundancy.")
            )
        return data

    def service_fields(self) -> dict:
        """The cleaned data as keyword arguments for services.queue_create / queue_update."""
        d = dict(self.cleaned_data)
        d.pop("kind", None)
        d["lease_ttl"] = timedelta(minutes=d.pop("lease_minutes"))
        undo = d.pop("undo_minutes")
        if undo is not None:  # left empty: the queue keeps its window (2 minutes when new)
            d["undo_window"] = timedelta(minutes=undo)
        d["outcome_handler"] = d.get("outcome_handler") or ""
        return d


class UploadForm(FileOrTextForm):
    file_label = _("JSONL file")
    text_label = _("…or paste lines")
    rows = 8
    missing = _("Choose a JSONL file or paste some lines.")

    def content(self) -> bytes:
        upload = self.cleaned_data.get("file")
        if upload:
            return upload.read()
        return self.cleaned_data["text"].encode("utf-8")


class InviteForm(forms.Form):
    role = forms.ChoiceField(label=_("Role"))
    project = forms.ModelChoiceField(
        label=_("Project"),
        queryset=Project.objects.none(),
        required=False,
        empty_label=_("(no project)"),
        help_text=_("The new account becomes a member of this project."),
    )
    days = forms.IntegerField(label=_("Valid for (days)"), min_value=1, max_value=90, initial=7)

    def __init__(self, *args, user, projects, **kwargs):
        super().__init__(*args, **kwargs)
        choices = [
            (r, roles.ROLE_LABELS[r]) for r in (roles.CROWDWORKER, roles.CURATOR, roles.RESEARCHER)
        ]
        if roles.has_role(user, [roles.ADMIN]):
            choices.append((roles.ADMIN, roles.ROLE_LABELS[roles.ADMIN]))
        self.fields["role"].choices = choices
        self.fields["project"].queryset = projects


class InviteAcceptForm(forms.Form):
    username = forms.CharField(label=_("User name"), max_length=150)
    password1 = forms.CharField(label=_("Password"), widget=forms.PasswordInput, strip=False)
    password2 = forms.CharField(label=_("Password again"), widget=forms.PasswordInput, strip=False)

    def clean_username(self) -> str:
        username = self.cleaned_data["username"].strip()
        field = get_user_model()._meta.get_field("username")
        for validator in field.validators:
            validator(username)
        if get_user_model().objects.filter(username__iexact=username).exists():
            raise forms.ValidationError(_("That user name is taken."))
        return username

    def clean(self):
        data = super().clean()
        p1, p2 = data.get("password1"), data.get("password2")
        if p1 and p2 and p1 != p2:
            self.add_error("password2", _("The two passwords differ."))
        elif p1:
            try:
                password_validation.validate_password(p1)
            except forms.ValidationError as exc:
                self.add_error("password1", exc)
        return data


class TaskFilterForm(forms.Form):
    """The task browser's filters (page query string and the API's query parameters)."""

    STATES = [("", _("Any state")), *Task.State.choices]
    FLAGS = [
        ("", _("Any")),
        ("escalated", _("Escalated")),
        ("reported", _("Reported")),
        ("settled", _("Settled by a curator")),
    ]
    GOLD = [("", _("Gold and not")), ("yes", _("Gold only")), ("no", _("Not gold"))]
    SORTS = [
        ("id", _("Oldest first")),
        ("-id", _("Newest first")),
        ("agreement", _("Least agreement first")),
        ("-decided_at", _("Recently finished first")),
    ]

    q = forms.CharField(required=False, max_length=200, label=_("Text"), strip=True)
    state = forms.ChoiceField(required=False, choices=STATES, label=_("State"))
    flag = forms.ChoiceField(required=False, choices=FLAGS, label=_("Flag"))
    annotator = forms.CharField(required=False, max_length=150, label=_("Answered by"))
    gold = forms.ChoiceField(required=False, choices=GOLD, label=_("Gold"))
    sort = forms.ChoiceField(required=False, choices=SORTS, label=_("Sort"))
    page = forms.IntegerField(required=False, min_value=1, max_value=100_000)

    def clean_q(self) -> str:
        text = self.cleaned_data["q"]
        if "\x00" in text:
            raise forms.ValidationError(_("The text cannot contain a NUL character."))
        return text

    def task_filter(self) -> selectors.TaskFilter:
        d = self.cleaned_data
        return selectors.TaskFilter(
            state=d["state"],
            flag=d["flag"],
            annotator=d["annotator"].strip(),
            gold={"yes": True, "no": False}.get(d["gold"]),
            text=d["q"],
            sort=d["sort"] or "id",
        )


class SettleForm(forms.Form):
    """A curator's settlement. ``pick`` is "majority", "own" (the answer written in
    ``answer_json``) or one of the answers given, as JSON; the kind's schema checks an answer in
    the service, as an annotator's."""

    pick = forms.CharField(max_length=20_000, initial="majority", label=_("Settle"))
    answer_json = forms.CharField(
        required=False,
        max_length=20_000,
        label=_("…or your own answer (JSON, as an annotator's response)"),
        widget=forms.Textarea(attrs={"rows": 2, "spellcheck": "false"}),
    )
    reason = forms.CharField(
        max_length=2000,
        label=_("Reason"),
        widget=forms.Textarea(attrs={"rows": 2}),
        error_messages={"required": _("Say why you settle: the reason is kept with the outcome.")},
    )

    def clean(self):
        data = super().clean()
        pick = (data.get("pick") or "").strip()
        if pick == "majority":
            data["method"], data["response"] = "majority", None
            return data
        text = (data.get("answer_json") or "").strip() if pick == "own" else pick
        if not text:
            raise forms.ValidationError(_("Write your answer, or choose one of the answers."))
        try:
            data["response"] = structured.loads(text)
        except structured.StructuredTextError as exc:
            raise forms.ValidationError(
                _("Your answer is not valid JSON: %(e)s") % {"e": exc.message}
            ) from exc
        data["method"] = "choice"
        return data


class SendBackForm(forms.Form):
    """A reviewer sends one person's answer back; the note is required (its author reads it)."""

    annotator = forms.CharField(max_length=150, label=_("Whose answer"))
    note = forms.CharField(
        max_length=2000,
        label=_("Note for the annotator"),
        widget=forms.Textarea(attrs={"rows": 2}),
        error_messages={
            "required": _("Say what is wrong with the answer: its author reads your note.")
        },
    )


class ReportFilterForm(forms.Form):
    """The reports inbox's filters: a status ("all" for every report) and one of its queues."""

    status = forms.ChoiceField(
        required=False,
        choices=[("", _("Open")), *[(s, s) for s in ("resolved", "requeued", "cancelled")]]
        + [("all", _("All"))],
    )
    queue = forms.IntegerField(required=False, min_value=1, max_value=2**63 - 1)
    page = forms.IntegerField(required=False, min_value=1, max_value=100_000)


class ReportHandleForm(forms.Form):
    action = forms.ChoiceField(
        choices=[("resolve", "resolve"), ("requeue", "requeue"), ("cancel", "cancel")]
    )
    note = forms.CharField(required=False, max_length=2000)
