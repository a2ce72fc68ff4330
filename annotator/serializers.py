"""Small input and output serializers for the JSON API (annotator/api.py).

Input serializers only validate shapes and bounds; the services check domain rules. Output
serializers decide what each role may see: nothing a crowdworker receives holds a gold answer,
whether an item is gold, or anyone else's response.
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from .kinds import REGISTRY, report_reasons
from .models import Task, TaskQueue
from .platform.forms import ID_MAX
from .services import QUEUE_FIELDS

SMALLINT_MAX = 32767
INT_MAX = 2**31 - 1
MAX_LEASE_SECONDS = 7 * 24 * 3600


def check_storable_json(value: Any, where: str = "value") -> None:
    """Refuse what PostgreSQL's jsonb cannot store: NUL characters and non-finite numbers."""
    if isinstance(value, str):
        if "\x00" in value:
            raise serializers.ValidationError(f"{where}: text may not contain NUL characters.")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise serializers.ValidationError(f"{where}: numbers must be finite.")
    elif isinstance(value, dict):
        for key, item in value.items():
            check_storable_json(key, where)
            check_storable_json(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            check_storable_json(item, f"{where}.{i}")


class StorableJSONField(serializers.JSONField):
    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        check_storable_json(value, self.field_name or "value")
        return value


class JSONObjectField(StorableJSONField):
    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not isinstance(value, dict):
            raise serializers.ValidationError(_("Expected a JSON object."))
        return value


def _seconds(value: timedelta | None) -> int | None:
    return int(value.total_seconds()) if value is not None else None


# --------------------------------------------------------------------------------------------
# Queues
# --------------------------------------------------------------------------------------------
class QueueFieldsIn(serializers.Serializer):
    """The tunable fields of a queue; every one optional (create adds project, kind, title)."""

    title = serializers.CharField(max_length=200, required=False)
    instructions = serializers.CharField(allow_blank=True, max_length=100_000, required=False)
    config = JSONObjectField(required=False)
    redundancy = serializers.IntegerField(min_value=1, max_value=100, required=False)
    rule = serializers.ChoiceField(choices=TaskQueue.Rule.choices, required=False)
    max_redundancy = serializers.IntegerField(min_value=1, max_value=100, required=False)
    lease_ttl = serializers.IntegerField(
        min_value=1,
        max_value=MAX_LEASE_SECONDS,
        required=False,
        help_text="Lease time in seconds.",
    )
    undo_window = serializers.IntegerField(
        min_value=0,
        max_value=24 * 3600,
        required=False,
        help_text="Seconds after submitting during which a person may undo an answer, while "
        "the task is not decided (0: never).",
    )
    priority = serializers.IntegerField(min_value=-INT_MAX, max_value=INT_MAX, required=False)
    status = serializers.ChoiceField(choices=TaskQueue.Status.choices, required=False)
    gold_rate = serializers.FloatField(min_value=0, max_value=1, required=False)
    qualification_count = serializers.IntegerField(
        min_value=0, max_value=SMALLINT_MAX, required=False
    )
    qualification_min_accuracy = serializers.FloatField(min_value=0, max_value=1, required=False)
    gold_pause_below = serializers.FloatField(
        min_value=0, max_value=1, allow_null=True, required=False
    )
    gold_pause_min_answers = serializers.IntegerField(
        min_value=0, max_value=SMALLINT_MAX, required=False
    )
    outcome_handler = serializers.CharField(max_length=80, allow_blank=True, required=False)

    def to_service_fields(self) -> dict:
        fields = dict(self.validated_data)
        if "lease_ttl" in fields:
            fields["lease_ttl"] = timedelta(seconds=fields["lease_ttl"])
        if "undo_window" in fields:
            fields["undo_window"] = timedelta(seconds=fields["undo_window"])
        return fields


class QueueCreateIn(QueueFieldsIn):
    project = serializers.IntegerField(
        min_value=1, max_value=ID_MAX, help_text="Id of a project you belong to."
    )
    kind = serializers.ChoiceField(choices=sorted(REGISTRY))
    title = serializers.CharField(max_length=200)


class QueueStatusIn(serializers.Serializer):
    status = serializers.ChoiceField(
        choices=TaskQueue.Status.choices, help_text="open (resume), paused or closed."
    )


class QueueWorkerOut(serializers.ModelSerializer):
    """What a crowdworker sees of a queue: what the workspace page uses and shows."""

    config = serializers.SerializerMethodField(
        help_text="The settings the task page uses (e.g. the skill taxonomy, review criteria)."
    )
    report_reasons = serializers.SerializerMethodField(
        help_text="Codes a report may give; free text only with 'other'."
    )

    class Meta:
        model = TaskQueue
        fields = [
            "id",
            "project",
            "kind",
            "title",
            "instructions",
            "config",
            "status",
            "report_reasons",
        ]

    @extend_schema_field({"type": "object"})
    def get_config(self, queue: TaskQueue) -> dict:
        kind = REGISTRY.get(queue.kind)
        return kind.public_config(queue.config) if kind else {}

    @extend_schema_field(
        {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"code": {"type": "string"}, "label": {"type": "string"}},
            },
        }
    )
    def get_report_reasons(self, queue: TaskQueue) -> list[dict]:
        return [
            {"code": r["code"], "label": str(_(r["label"]))} for r in report_reasons(queue.config)
        ]


class QueueOut(serializers.ModelSerializer):
    """What curators and researchers see of a queue."""

    lease_ttl = serializers.SerializerMethodField(help_text="Lease time in seconds.")
    progress = serializers.SerializerMethodField()

    class Meta:
        model = TaskQueue
        fields = ["id", "project", "kind", *QUEUE_FIELDS, "created_at", "progress"]

    def get_lease_ttl(self, queue: TaskQueue) -> int | None:
        return _seconds(queue.lease_ttl)

    undo_window = serializers.SerializerMethodField(help_text="Undo window in seconds.")

    def get_undo_window(self, queue: TaskQueue) -> int | None:
        return _seconds(queue.undo_window)

    @extend_schema_field(
        {
            "type": "object",
            "nullable": True,
            "additionalProperties": {"type": "integer"},
            "description": "Task counts: total, open, leased, done, decided, undecided, "
            "escalated, cancelled, gold, percent. Cancelled tasks are not in total.",
        }
    )
    def get_progress(self, queue: TaskQueue) -> dict | None:
        return self.context.get("progress", {}).get(queue.pk)


# --------------------------------------------------------------------------------------------
# People
# --------------------------------------------------------------------------------------------
class MemberOut(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()
    roles = serializers.ListField(child=serializers.CharField(), help_text="Global roles.")
    is_active = serializers.BooleanField()
    live_leases = serializers.IntegerField(help_text="Tasks they hold now in this project.")
    accepted = serializers.IntegerField(help_text="Their answers that stand (gold aside).")
    sent_back = serializers.IntegerField(help_text="Their answers a reviewer sent back.")
    acceptance_rate = serializers.FloatField(
        allow_null=True, help_text="accepted / (accepted + sent_back); null: no answers yet."
    )


class MemberRemovedOut(serializers.Serializer):
    project = serializers.IntegerField()
    user = serializers.IntegerField()
    leases_ended = serializers.IntegerField(help_text="Live leases ended: back in the pool.")


# --------------------------------------------------------------------------------------------
# Tasks
# --------------------------------------------------------------------------------------------
class TaskOut(serializers.ModelSerializer):
    """A task as curators and researchers see it (gold answer and outcome included)."""

    class Meta:
        model = Task
        fields = [
            "id",
            "queue",
            "external_id",
            "payload",
            "gold",
            "is_gold",
            "state",
            "required",
            "active_count",
            "done_count",
            "escalations",
            "outcome",
            "agreement",
            "created_at",
            "decided_at",
            "settled_at",
            "settle_reason",
        ]


class TaskPageOut(serializers.Serializer):
    count = serializers.IntegerField(help_text="Matching tasks, counted up to 1,001.")
    count_capped = serializers.BooleanField(help_text="More than 1,000 tasks match.")
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = TaskOut(many=True)


class SettleIn(serializers.Serializer):
    method = serializers.ChoiceField(
        choices=["majority", "choice"],
        help_text="majority: the most frequent answer (plurality); choice: ``response``.",
    )
    response = StorableJSONField(
        required=False,
        allow_null=True,
        default=None,
        help_text="With method=choice: the answer, as an annotator's response (the kind's schema).",
    )
    reason = serializers.CharField(max_length=2000, help_text="Why: kept with the outcome.")


class QueueSettleIn(SettleIn):
    filter = serializers.DictField(
        required=False,
        default=dict,
        help_text="The task browser's filters (q, state, flag, annotator, gold), as on "
        "GET /api/queues/{id}/tasks/: every task they select is settled.",
    )


class SettleOut(serializers.Serializer):
    selected = serializers.IntegerField()
    settled = serializers.IntegerField(allow_null=True, help_text="null while a job settles them")
    no_majority = serializers.IntegerField(allow_null=True)
    refused = serializers.IntegerField(allow_null=True)
    skipped = serializers.IntegerField(allow_null=True)
    job = serializers.IntegerField(allow_null=True, help_text="The job settling many tasks.")
    message = serializers.CharField()


MAX_CANCEL_IDS = 10_000


class StrictIntegerField(serializers.IntegerField):
    """A JSON integer: no numeric strings, booleans or fractions."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class TasksCancelIn(serializers.Serializer):
    ids = serializers.ListField(
        child=StrictIntegerField(min_value=1, max_value=2**63 - 1),
        min_length=1,
        max_length=MAX_CANCEL_IDS,
        help_text="Ids of tasks of this queue.",
    )
    reason = serializers.CharField(max_length=2000, allow_blank=True, required=False, default="")


class TasksCancelOut(serializers.Serializer):
    cancelled = serializers.IntegerField(help_text="Open tasks cancelled now.")
    skipped = serializers.IntegerField(
        help_text="Tasks already decided, undecided or cancelled: left as they were."
    )
    leases_ended = serializers.IntegerField(
        help_text="Live leases ended; their holders' submits answer 409."
    )
    message = serializers.CharField()


class TaskRowIn(serializers.Serializer):
    """One task of a bulk upload: a payload object, or this wrapper with a gold answer and id."""

    payload = serializers.JSONField()
    gold = serializers.JSONField(required=False, allow_null=True)
    id = serializers.CharField(required=False, max_length=200)


class BulkCreatedOut(serializers.Serializer):
    created = serializers.IntegerField()


class KeyOut(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()


class ClaimedTaskOut(serializers.Serializer):
    """A task handed to an annotator: what their task page shows, and nothing more.

    Never its gold answer, whether it is a check item, other people's answers or where it came
    from; forced_choice candidates come by side (left, right) with their texts only.
    """

    id = serializers.IntegerField()
    queue = serializers.IntegerField()
    kind = serializers.CharField()
    payload = serializers.JSONField(
        help_text="The task as the page shows it: the kind's public fields of the payload."
    )
    keys = KeyOut(many=True)
    expires_at = serializers.DateTimeField()


class ClaimOut(serializers.Serializer):
    task = ClaimedTaskOut(allow_null=True)
    message = serializers.CharField(allow_blank=True)
    retry_after = serializers.IntegerField(
        allow_null=True, help_text="Seconds until leases held by others may come back."
    )


class SubmitIn(serializers.Serializer):
    response = JSONObjectField(help_text="The answer; its shape depends on the queue's kind.")
    duration_ms = serializers.IntegerField(min_value=0, max_value=INT_MAX, required=False)


class SubmitOut(serializers.Serializer):
    annotation_id = serializers.IntegerField()
    created = serializers.BooleanField(help_text="False when this submit repeated an earlier one.")
    next = ClaimOut()


class ReportIn(serializers.Serializer):
    reason = serializers.CharField(
        max_length=40, help_text="One of the queue's report reason codes, e.g. broken_image."
    )
    details = serializers.CharField(
        max_length=1000,
        allow_blank=True,
        required=False,
        default="",
        help_text="What is wrong, in words: only (and then required) with the reason 'other'.",
    )


class ReleasedOut(serializers.Serializer):
    task_id = serializers.IntegerField()
    state = serializers.CharField()


class HeartbeatOut(serializers.Serializer):
    task_id = serializers.IntegerField()
    expires_at = serializers.DateTimeField()


# --------------------------------------------------------------------------------------------
# Exports
# --------------------------------------------------------------------------------------------
class OutcomeRowOut(serializers.Serializer):
    task_id = serializers.IntegerField()
    external_id = serializers.CharField()
    state = serializers.CharField()
    is_gold = serializers.BooleanField()
    outcome = serializers.JSONField(allow_null=True)
    agreement = serializers.FloatField(allow_null=True)
    escalations = serializers.IntegerField()
    required = serializers.IntegerField()
    done_count = serializers.IntegerField()
    decided_at = serializers.DateTimeField(allow_null=True)
    payload = serializers.JSONField()
    gold = serializers.JSONField(allow_null=True)
    settled_by = serializers.CharField(
        allow_null=True, help_text="The curator who settled the task (else null)."
    )
    settled_at = serializers.DateTimeField(allow_null=True)
    settle_reason = serializers.CharField(allow_blank=True)


class AnnotationRowOut(serializers.Serializer):
    annotation_id = serializers.IntegerField()
    task_id = serializers.IntegerField()
    external_id = serializers.CharField()
    annotator = serializers.CharField(help_text="The annotator's user name.")
    response = serializers.JSONField()
    duration_ms = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    is_gold = serializers.BooleanField()
    gold_correct = serializers.BooleanField(allow_null=True)


class TagAgreementOut(serializers.Serializer):
    tag = serializers.CharField()
    n_items = serializers.IntegerField(help_text="Items with at least two answers.")
    n_votes = serializers.IntegerField(help_text="Answers that chose this tag.")
    percent_agreement = serializers.FloatField(allow_null=True)
    cohen_kappa = serializers.FloatField(allow_null=True, help_text="Mean over rater pairs.")
    krippendorff_alpha = serializers.FloatField(allow_null=True)


class AnnotatorAgreementOut(serializers.Serializer):
    annotator_id = serializers.IntegerField()
    username = serializers.CharField()
    n = serializers.IntegerField(help_text="Answers, gold included.")
    cohen_kappa = serializers.FloatField(
        allow_null=True,
        help_text="Mean Cohen's κ against each other person; multi-label kinds: on (item, tag) "
        "yes/no decisions.",
    )
    agreement_with_outcome = serializers.FloatField(allow_null=True)
    gold_accuracy = serializers.FloatField(allow_null=True)


class AgreementOut(serializers.Serializer):
    """A queue's agreement: whole labels for every kind; multi-label kinds add set figures."""

    queue_id = serializers.IntegerField()
    kind = serializers.CharField()
    multilabel = serializers.BooleanField()
    n_items_compared = serializers.IntegerField()
    percent_agreement = serializers.FloatField(
        allow_null=True, help_text="Multi-label kinds: the share of pairs whose sets are equal."
    )
    cohen_kappa = serializers.FloatField(allow_null=True)
    fleiss_kappa = serializers.FloatField(allow_null=True)
    krippendorff_alpha = serializers.FloatField(allow_null=True)
    set_alpha_masi = serializers.FloatField(
        allow_null=True, required=False, help_text="Krippendorff's α with MASI distance."
    )
    set_alpha_jaccard = serializers.FloatField(
        allow_null=True, required=False, help_text="Krippendorff's α with Jaccard distance."
    )
    mean_set_similarity = serializers.FloatField(
        allow_null=True, required=False, help_text="Mean pairwise Jaccard similarity per item."
    )
    per_tag = TagAgreementOut(many=True, required=False)
    per_annotator = AnnotatorAgreementOut(many=True)
    n_tasks_decided = serializers.IntegerField()
    n_tasks_settled = serializers.IntegerField(
        help_text="Decided by a curator's settlement: their outcome is the curator's, and the "
        "figures above count the annotators' answers only."
    )


class HistoryEntryOut(serializers.Serializer):
    """One of your recent answers (``GET /api/queues/{id}/history/``)."""

    task_id = serializers.IntegerField()
    response = serializers.JSONField(help_text="Your answer, as you gave it.")
    answered_at = serializers.DateTimeField()
    undone_at = serializers.DateTimeField(
        allow_null=True, help_text="When you took this answer back (null: it stands)."
    )
    undo_until = serializers.DateTimeField(
        allow_null=True, help_text="Until when POST /api/tasks/{id}/undo/ takes it back."
    )
    refusal = serializers.CharField(help_text="Why it can no longer be undone, if so.")
    sent_back_at = serializers.DateTimeField(
        allow_null=True, help_text="When a reviewer sent this answer back (null: they did not)."
    )
    sent_back_note = serializers.CharField(help_text="The reviewer's note, when sent back.")
