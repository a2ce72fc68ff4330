"""VLind-Bench (vlind-bench.txt Sec. 3–4, App. A): concepts, LLM-drafted instance triples checked
by three people, counterfactual images in three styles checked by three people, a factual image
and the visual-perception nouns of each triple.

An instance of the published ``data.json`` is a kept triple with at least one good image, a
factual image and both VP nouns; ``export`` assembles it.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from annotator.platform.models import CreatedStamp, optional_link
from curation.models.llm import FromGeneration
from curation.recipes.framework.models import PeopleDecide, RecipePipeline

__all__ = ["VLindBench", "VLindConcept", "VLindImage", "VLindTriple"]

# The published layout has four image ids per style (0–3, 4–7, 8–11): App. C, data.json.
MAX_PER_STYLE = 4


class VLindBench(RecipePipeline):
    """One VLind-Bench build of a project: its concepts, triples, images and review queues."""

    description = models.TextField(blank=True)
    triples_per_concept = models.PositiveSmallIntegerField(
        default=50, help_text=_("Instance triples the LLM drafts per concept (Sec. 4: 50).")
    )
    images_per_style = models.PositiveSmallIntegerField(
        default=4, help_text=_("Counterfactual images per style (Sec. 4: four of each).")
    )
    triple_queue = optional_link("annotator.TaskQueue")
    image_queue = optional_link("annotator.TaskQueue")
    # An OpenAI-compatible endpoint that serves images.generate (DALL-E 3 in the paper).
    image_provider = optional_link("curation.LLMProvider")
    image_model = models.CharField(max_length=200, blank=True, default="dall-e-3")
    image_size = models.CharField(max_length=20, default="1024x1024")

    class Meta(RecipePipeline.Meta):
        db_table = "curation_vlindbench"
        constraints = [
            models.UniqueConstraint(
                fields=["project", "name"], name="vlindbench_project_name_uniq"
            ),
            models.CheckConstraint(
                condition=Q(images_per_style__gte=1) & Q(images_per_style__lte=MAX_PER_STYLE),
                name="vlindbench_images_per_style_1_4",
            ),
            models.CheckConstraint(
                condition=Q(triples_per_concept__gte=1), name="vlindbench_triples_gte_1"
            ),
        ]


class VLindConcept(models.Model):
    """A concept (Sec. 4: climate, color, …) and its hand-written 3-shot examples (App. A)."""

    bench = models.ForeignKey(VLindBench, on_delete=models.CASCADE, related_name="concepts")
    name = models.CharField(max_length=40)
    description = models.CharField(max_length=300, blank=True)
    # "an image of …": how the first example would be depicted (App. A template).
    image_hint = models.CharField(max_length=300)
    # Three {"context", "true_statement", "false_statement"}: one in prose, two in the JSON.
    examples = models.JSONField(default=list)
    position = models.PositiveSmallIntegerField(default=0)
    active = models.BooleanField(default=True)

    class Meta:
        db_table = "curation_vlindconcept"
        ordering = ["bench", "position", "name"]
        constraints = [
            models.UniqueConstraint(fields=["bench", "name"], name="vlindconcept_name_uniq"),
        ]

    def __str__(self) -> str:
        return self.name


class Checked(FromGeneration, PeopleDecide):
    """A drafted triple or an image that three people check: how many accepted it so far."""

    accepts = models.PositiveSmallIntegerField(default=0)

    class Meta:
        abstract = True


class VLindTriple(Checked):
    """An instance triple (Sec. 4): counterfactual context, true statement (true in the context),
    false statement (true by common sense); then its factual image and VP nouns."""

    class Status(models.TextChoices):
        REVIEW = "review", _("In review")
        KEPT = "kept", _("Kept")
        REJECTED = "rejected", _("Rejected")

    bench = models.ForeignKey(VLindBench, on_delete=models.CASCADE, related_name="triples")
    concept = models.ForeignKey(VLindConcept, on_delete=models.CASCADE, related_name="triples")
    # Numbered per concept in drafting order; data.json's context_id.
    context_id = models.PositiveIntegerField()
    context = models.TextField()
    true_statement = models.TextField()
    false_statement = models.TextField()
    # What the factual image shows (Sec. 4: s_fact, or T_cf made factual); data.json field.
    factual_context = models.TextField(blank=True)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.REVIEW)
    factual_image = models.ForeignKey(
        "curation.Image", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # App. A: two key nouns and two absent nouns from the LLM; a person picks one of each.
    noun_candidates = models.JSONField(default=dict, blank=True)
    noun_generation = models.ForeignKey(
        "curation.Generation", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    existent_noun = models.CharField(max_length=100, blank=True)
    non_existent_noun = models.CharField(max_length=100, blank=True)
    # The curator's pick; empty: the good image with the most accepts.
    best_image = optional_link("vlind.VLindImage")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "curation_vlindtriple"
        ordering = ["concept__position", "context_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["concept", "context_id"], name="vlindtriple_context_id_uniq"
            ),
        ]
        indexes = [models.Index(fields=["bench", "status"], name="vlindtriple_status_idx")]

    def __str__(self) -> str:
        return self.context[:60]


class VLindImage(Checked, CreatedStamp):
    """One counterfactual image of a triple in a style and slot (data.json image id 0–11)."""

    class Style(models.TextChoices):
        PHOTOREALISTIC = "photorealistic", _("Photorealistic")
        ILLUSTRATION = "illustration", _("Illustration")
        CARTOON = "cartoon", _("Cartoon")

    class Origin(models.TextChoices):
        UPLOAD = "upload", _("Uploaded")
        GENERATED = "generated", _("Generated")
        PLACEHOLDER = "placeholder", _("Placeholder (demo)")

    class Status(models.TextChoices):
        REVIEW = "review", _("In review")
        GOOD = "good", _("Good")
        BAD = "bad", _("Rejected")

    triple = models.ForeignKey(VLindTriple, on_delete=models.CASCADE, related_name="images")
    slot = models.PositiveSmallIntegerField()
    style = models.CharField(max_length=14, choices=Style.choices)
    image = models.ForeignKey("curation.Image", on_delete=models.PROTECT, related_name="+")
    origin = models.CharField(max_length=11, choices=Origin.choices)
    status = models.CharField(max_length=6, choices=Status.choices, default=Status.REVIEW)

    class Meta:
        db_table = "curation_vlindimage"
        ordering = ["triple", "slot"]
        constraints = [
            models.UniqueConstraint(fields=["triple", "slot"], name="vlindimage_slot_uniq"),
            models.CheckConstraint(condition=Q(slot__lte=11), name="vlindimage_slot_lte_11"),
        ]
        indexes = [models.Index(fields=["status"], name="vlindimage_status_idx")]

    def __str__(self) -> str:
        return f"{self.triple_id}:{self.slot}"
