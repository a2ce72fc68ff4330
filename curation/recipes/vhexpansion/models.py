"""VHExpansion (vhexpansion.txt Sec. 3): visual-hallucination test cases, their negations checked
by people, and their perturbed image variants.

A test case is (image, yes/no question, answer). Its negation flips question and answer (Sec. 3.1)
and links back to it; a variant is the same case on a perturbed image (Sec. 3.2, App. C) and links
to the derived ``Image`` (whose ``derivation`` records the operation and its parameters).
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from annotator.platform.models import optional_link
from curation.models.llm import FromGeneration
from curation.recipes.framework.models import PeopleDecide, RecipePipeline

__all__ = ["VHCase", "VHCaseSet", "VHNegation", "VHVariant"]


class VHCaseSet(RecipePipeline):
    """A set of VH test cases imported together (an MMVP, VHTest or POPE sample, NaturalBench)."""

    description = models.TextField(blank=True)
    source = models.CharField(max_length=255, blank=True, help_text=_("File or benchmark."))
    review_queue = optional_link(
        "annotator.TaskQueue", help_text=_("The review queue people check the negations in.")
    )
    max_attempts = models.PositiveSmallIntegerField(
        default=3, help_text=_("Negations drafted per case before a case is dropped.")
    )

    class Meta(RecipePipeline.Meta):
        db_table = "curation_vhcaseset"
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="vhcaseset_project_name_uniq"),
            models.CheckConstraint(
                condition=Q(max_attempts__gte=1), name="vhcaseset_max_attempts_gte_1"
            ),
        ]


class VHCase(models.Model):
    """One original test case {x_I, x_Q, y_A} (Sec. 3)."""

    class Answer(models.TextChoices):
        YES = "yes", _("Yes")
        NO = "no", _("No")

    class NegationState(models.TextChoices):
        PENDING = "pending", _("Not drafted yet")
        REVIEW = "review", _("In review")
        ACCEPTED = "accepted", _("Accepted")
        DROPPED = "dropped", _("Dropped")
        FAILED = "failed", _("Drafting failed")

    case_set = models.ForeignKey(VHCaseSet, on_delete=models.CASCADE, related_name="cases")
    external_id = models.CharField(max_length=200)
    position = models.PositiveIntegerField()
    image = models.ForeignKey("curation.Image", on_delete=models.PROTECT, related_name="+")
    question = models.TextField()
    answer = models.CharField(max_length=3, choices=Answer.choices)
    source_dataset = models.CharField(max_length=100, blank=True)
    category = models.CharField(max_length=100, blank=True)
    # Does the case trigger VH in the target model (Eq. 1's branch)? None: not known.
    triggers_vh = models.BooleanField(null=True, blank=True)
    negation_state = models.CharField(
        max_length=8, choices=NegationState.choices, default=NegationState.PENDING
    )
    negation_error = models.TextField(blank=True)

    class Meta:
        db_table = "curation_vhcase"
        ordering = ["case_set", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["case_set", "external_id"], name="vhcase_external_id_uniq"
            ),
            models.UniqueConstraint(fields=["case_set", "position"], name="vhcase_position_uniq"),
        ]
        indexes = [
            models.Index(fields=["case_set", "negation_state"], name="vhcase_state_idx"),
        ]

    def __str__(self) -> str:
        return self.external_id


class VHNegation(FromGeneration, PeopleDecide):
    """One drafted negation {x_I, ¬x_Q, ¬y_A} of a case (Sec. 3.1, Fig. 3) and its review.

    Only an ``accepted`` negation reaches an expanded set; at most one per case.
    """

    class Status(models.TextChoices):
        REVIEW = "review", _("In review")
        ACCEPTED = "accepted", _("Accepted")
        REJECTED = "rejected", _("Rejected")
        DISCARDED = "discarded", _("Discarded (not a new question)")

    case = models.ForeignKey(VHCase, on_delete=models.CASCADE, related_name="negations")
    attempt = models.PositiveSmallIntegerField()
    question = models.TextField()
    answer = models.CharField(max_length=3, choices=VHCase.Answer.choices)
    # The configured LLM failed and the offline rule-based negator drafted this one.
    fallback = models.BooleanField(default=False)
    status = models.CharField(max_length=9, choices=Status.choices, default=Status.REVIEW)
    note = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "curation_vhnegation"
        ordering = ["case", "attempt"]
        constraints = [
            models.UniqueConstraint(fields=["case", "attempt"], name="vhnegation_attempt_uniq"),
            models.UniqueConstraint(
                fields=["case"], condition=Q(status="accepted"), name="vhnegation_one_accepted"
            ),
            models.CheckConstraint(condition=Q(attempt__gte=1), name="vhnegation_attempt_gte_1"),
        ]
        indexes = [models.Index(fields=["status"], name="vhnegation_status_idx")]

    def __str__(self) -> str:
        return self.question[:60]


class VHVariant(models.Model):
    """A case on a perturbed image: a common perturbation (App. C) or an adversarial one (Eq. 1).

    The question and answer are the case's; the negation pairs with it on the same image.
    """

    class Kind(models.TextChoices):
        COMMON = "common", _("Common perturbation")
        ADVERSARIAL = "adversarial", _("Adversarial perturbation")

    case = models.ForeignKey(VHCase, on_delete=models.CASCADE, related_name="variants")
    perturbation = models.CharField(max_length=40)
    kind = models.CharField(max_length=11, choices=Kind.choices)
    image = models.ForeignKey("curation.Image", on_delete=models.PROTECT, related_name="+")
    params = models.JSONField(default=dict, blank=True)
    # Adversarial only: the branch of Eq. 1 used, the final cosine and the ℓ∞ norm actually used.
    triggers_vh = models.BooleanField(null=True, blank=True)
    final_cosine = models.FloatField(null=True, blank=True)
    linf = models.FloatField(null=True, blank=True)
    job = optional_link("annotator.Job")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "curation_vhvariant"
        ordering = ["case", "perturbation"]
        constraints = [
            models.UniqueConstraint(fields=["case", "perturbation"], name="vhvariant_uniq"),
        ]
        indexes = [models.Index(fields=["perturbation"], name="vhvariant_perturbation_idx")]

    def __str__(self) -> str:
        return f"{self.case_id}:{self.perturbation}"
