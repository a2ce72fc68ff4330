"""Hunts (issue 24): people write questions that fool vision-language models live, a blind model
keeps them honest, and a partner image on which the answer flips makes every item
vision-centric (NaturalBench Sec. 3).

HuntRound (a curator opens it: targets, blind model, image pool, limits, points) →
HuntCandidate (a worker's question on a pool image, then its partner image and second question)
→ HuntAnswer (one model's answer to one slot of the 2 × 2, with its Generation) →
HuntCheck (one slot verified by other people in a ``vqa_choice`` queue) → a validated candidate
is published as a NaturalBench sample.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from annotator.platform.models import optional_link
from curation.models.llm import FromGeneration
from curation.recipes.framework.models import PeopleDecide, RecipePipeline

__all__ = ["HuntAnswer", "HuntCandidate", "HuntCheck", "HuntRound", "HuntTarget"]


class HuntRound(RecipePipeline):
    """One hunt over an image pool against one or more target models."""

    class QuestionType(models.TextChoices):
        # The NaturalBench family's question types (METRICS.md Sec. 1): a two-option question
        # embeds its options as "<question>\nOption: A:<x>; B:<y>;" and is answered A or B.
        YES_NO = "yes_no", _("Yes-or-No")
        TWO_OPTION = "multiple_choice", _("Two options (A or B)")

    class State(models.TextChoices):
        OPEN = "open", _("Open")
        CLOSED = "closed", _("Closed")

    corpus = models.ForeignKey(
        "curation.Corpus",
        on_delete=models.PROTECT,
        related_name="+",
        help_text=_("The image pool workers hunt in."),
    )
    scorer = optional_link(
        "curation.Scorer",
        help_text=_("Proposes partner images: the pool's nearest neighbours in its embeddings."),
    )
    blind = optional_link(
        "curation.LLMProvider",
        help_text=_("Answers from the question text alone (empty: the offline blind baseline)."),
    )
    question_type = models.CharField(
        max_length=16, choices=QuestionType.choices, default=QuestionType.YES_NO
    )
    state = models.CharField(max_length=6, choices=State.choices, default=State.OPEN)
    instructions = models.TextField(blank=True, help_text=_("Markdown shown to workers."))
    max_items_per_worker = models.PositiveIntegerField(
        default=50, help_text=_("Questions one worker may submit in this round.")
    )
    max_per_minute = models.PositiveSmallIntegerField(
        default=6, help_text=_("Questions one worker may submit per minute.")
    )
    points_per_item = models.PositiveSmallIntegerField(
        default=10, help_text=_("Points a worker earns for each validated blindspot.")
    )
    hide_targets = models.BooleanField(
        default=True, help_text=_("Workers see 'Model A', 'Model B', … instead of model names.")
    )
    verifiers = models.PositiveSmallIntegerField(
        default=2, help_text=_("Other people who must all give the intended answer.")
    )
    neighbours = models.PositiveSmallIntegerField(
        default=6, help_text=_("Partner images proposed per question.")
    )
    verify_queue = optional_link("annotator.TaskQueue")
    demo = models.BooleanField(
        default=False, help_text=_("Made by the demo: stand-in targets, offline blind baseline.")
    )

    class Meta(RecipePipeline.Meta):
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="hunt_round_name_uniq"),
            models.CheckConstraint(condition=Q(verifiers__gte=1), name="hunt_verifiers_gte_1"),
            models.CheckConstraint(condition=Q(max_per_minute__gte=1), name="hunt_rate_gte_1"),
            models.CheckConstraint(
                condition=Q(neighbours__gte=1, neighbours__lte=9), name="hunt_neighbours_1_9"
            ),
        ]
        indexes = [models.Index(fields=["project", "state"], name="hunt_round_state_idx")]


class HuntTarget(models.Model):
    """A model the round tries to fool; workers see ``alias`` when the round hides names."""

    round = models.ForeignKey(HuntRound, on_delete=models.CASCADE, related_name="targets")
    provider = models.ForeignKey("curation.LLMProvider", on_delete=models.PROTECT, related_name="+")
    position = models.PositiveSmallIntegerField()
    alias = models.CharField(max_length=40)

    class Meta:
        ordering = ["round", "position"]
        constraints = [
            models.UniqueConstraint(fields=["round", "provider"], name="hunt_target_uniq"),
            models.UniqueConstraint(fields=["round", "position"], name="hunt_target_pos_uniq"),
        ]

    def __str__(self) -> str:
        return self.alias


class HuntCandidate(models.Model):
    """A worker's question and answer on a pool image; then the partner image where the answer
    flips and the second question that make it a 2 × 2 sample; then people's verification."""

    class State(models.TextChoices):
        ASKING = "asking", _("Models answering")
        PARTNER = "partner", _("Waiting for a partner image")
        PAIRING = "pairing", _("Models answering the pair")
        NOT_BLINDSPOT = "no_blindspot", _("Not a blindspot")
        VERIFYING = "verifying", _("Being verified")
        VALIDATED = "validated", _("Validated")
        REJECTED = "rejected", _("Rejected by verifiers")
        FAILED = "failed", _("Model calls failed")

    round = models.ForeignKey(HuntRound, on_delete=models.CASCADE, related_name="candidates")
    worker = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    image = models.ForeignKey("curation.Image", on_delete=models.PROTECT, related_name="+")
    question = models.CharField(max_length=500)  # two options: with them, as published
    answer = models.CharField(max_length=2)  # a0 ("Yes" / "A") or a1 ("No" / "B") on ``image``
    normal = models.CharField(max_length=500)  # duplicates.normal_form(question)
    duplicate_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    duplicate_score = models.FloatField(null=True, blank=True)
    # partners.nearest: {"method": "nearest" | "random", "images": [{"id", "score"}]}
    neighbours = models.JSONField(default=dict, blank=True)
    partner = models.ForeignKey(
        "curation.Image", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    question_1 = models.CharField(max_length=500, blank=True)
    state = models.CharField(max_length=12, choices=State.choices, default=State.ASKING)
    # criterion.Verdict of the last complete step: fooled per target alias, blind vs chance.
    verdict = models.JSONField(default=dict, blank=True)
    blindspot = models.BooleanField(null=True, blank=True)
    record = models.JSONField(default=dict, blank=True)  # the NaturalBench record once paired
    points = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(blank=True)
    job = optional_link("annotator.Job")  # the model calls now running or last run
    validated_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["round", "-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(answer__in=["a0", "a1"]), name="hunt_answer_a0_a1"),
            models.CheckConstraint(
                condition=Q(partner__isnull=True) | ~Q(partner=models.F("image")),
                name="hunt_partner_not_image",
            ),
        ]
        indexes = [
            models.Index(fields=["round", "worker", "-created_at"], name="hunt_cand_worker_idx"),
            models.Index(fields=["round", "state"], name="hunt_cand_state_idx"),
            models.Index(fields=["round", "normal"], name="hunt_cand_normal_idx"),
        ]

    def __str__(self) -> str:
        return self.question[:60]


class HuntAnswer(FromGeneration):
    """One model's answer to one slot of a candidate (``target`` empty: the blind model), parsed
    by the NaturalBench family's official parser."""

    candidate = models.ForeignKey(HuntCandidate, on_delete=models.CASCADE, related_name="answers")
    target = models.ForeignKey(
        HuntTarget, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    slot = models.CharField(max_length=5)  # q0_i0, q0_i1, q1_i0, q1_i1
    text = models.TextField(blank=True)  # the model's words ("" when the call failed)
    parsed = models.CharField(max_length=2, blank=True)  # a0 / a1 / "" (unparseable)
    correct = models.BooleanField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["candidate", "slot", "target"]
        constraints = [
            models.UniqueConstraint(
                fields=["candidate", "target", "slot"], name="hunt_answer_target_uniq"
            ),
            models.UniqueConstraint(
                fields=["candidate", "slot"],
                condition=Q(target__isnull=True),
                name="hunt_answer_blind_uniq",
            ),
        ]


class HuntCheck(PeopleDecide):
    """One (image, question) of a paired candidate, answered by other people choosing among
    "Yes", "No" (or the two options) and "Unanswerable" (NaturalBench Sec. 3: kept only if all
    pick the intended)."""

    class State(models.TextChoices):
        OPEN = "open", _("Being answered")
        CORRECT = "correct", _("Answered as intended")
        FAILED = "failed", _("Failed")

    candidate = models.ForeignKey(HuntCandidate, on_delete=models.CASCADE, related_name="checks")
    slot = models.CharField(max_length=5)
    intended = models.CharField(max_length=300)  # the choice shown: Yes / No, or "A: <x>" …
    state = models.CharField(max_length=7, choices=State.choices, default=State.OPEN)

    class Meta:
        ordering = ["candidate", "slot"]
        constraints = [
            models.UniqueConstraint(fields=["candidate", "slot"], name="hunt_check_slot_uniq"),
        ]
