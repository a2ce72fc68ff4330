"""VisIT-Bench (visit-bench.txt Sec. 2–4, App. C–F): instruction families, crowd-written
instructions and instruction-conditioned captions, LLM references that people verify, forced-choice
A/B ratings of model responses, and a living leaderboard of submitted models.

The funnel, one table per step: VisitCategory (with its seed example) → VisitInstance (an
instruction about one or more VisitImages; captioned, then given a reference) → VisitReference (an
LLM draft, or the published GPT-4 response, and its verification verdict, Table 2) → VisitPair (an
(instance, model A, model B) tuple rated by people, Sec. 4.2) → VisitSubmission (a new model's
responses, judged by the LLM judge in both orders, App. F).

The evaluation app's objects (benchmark version, runs, judgment sets) are foreign keys.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from annotator.platform.models import CreatedStamp, NewestFirst, optional_link
from curation.models.llm import FromGeneration
from curation.recipes.framework.models import PeopleDecide, RecipePipeline
from evaluation.models import ResponsePair

__all__ = [
    "VisitCategory",
    "VisitImage",
    "VisitInstance",
    "VisitPair",
    "VisitPipeline",
    "VisitReference",
    "VisitSubmission",
    "VisitTask",
]


class VisitPipeline(RecipePipeline):
    """One VisIT-Bench collection in a project: its queues, settings and published version."""

    description = models.TextField(blank=True)
    caption_min_length = models.PositiveSmallIntegerField(
        default=80, help_text=_("Shortest instruction-conditioned caption accepted (characters).")
    )
    max_caption_rounds = models.PositiveSmallIntegerField(
        default=2,
        help_text=_("A caption sent back by a reviewer is rewritten at most this many times."),
    )
    votes_per_pair = models.PositiveSmallIntegerField(
        default=5, help_text=_("Crowd judgments per (instance, model A, model B) tuple.")
    )
    provider = optional_link(
        "curation.LLMProvider",
        help_text=_("Drafts the references (empty: the project's default, else offline)."),
    )
    instruction_queue = optional_link("annotator.TaskQueue")
    caption_queue = optional_link("annotator.TaskQueue")
    review_queue = optional_link("annotator.TaskQueue")
    rating_queue = optional_link("annotator.TaskQueue")
    # evaluation.BenchmarkVersion the pairs, responses and judgments belong to (the latest one
    # published from this pipeline), and the crowd-vote JudgmentSet this pipeline feeds.
    version = optional_link("evaluation.BenchmarkVersion")
    human_set = optional_link("evaluation.JudgmentSet")

    class Meta(RecipePipeline.Meta):
        db_table = "curation_visitpipeline"
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="visitpipeline_name_uniq"),
            models.CheckConstraint(
                condition=Q(votes_per_pair__gte=1), name="visitpipeline_votes_gte_1"
            ),
            models.CheckConstraint(
                condition=Q(caption_min_length__gte=1), name="visitpipeline_caption_min_gte_1"
            ),
        ]


class VisitCategory(CreatedStamp):
    """An instruction category — the paper's "instruction family" (Sec. 2.1), the dataset's
    ``instruction_category``: a name, a description, single or multi-image, and a seed
    example (an instance with ``origin=seed``) crowdworkers imitate."""

    class Origin(models.TextChoices):
        AUTHORED = "authored", _("Created by a curator")
        IMPORTED = "imported", _("Imported (category of the published dataset)")

    pipeline = models.ForeignKey(VisitPipeline, on_delete=models.CASCADE, related_name="categories")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    multi_image = models.BooleanField(default=False)
    origin = models.CharField(max_length=8, choices=Origin.choices, default=Origin.AUTHORED)

    class Meta:
        db_table = "curation_visitfamily"
        ordering = ["name", "id"]
        verbose_name_plural = "visit categories"
        constraints = [
            models.UniqueConstraint(fields=["pipeline", "name"], name="visitfamily_name_uniq"),
        ]

    def __str__(self) -> str:
        return self.name


class VisitInstance(models.Model):
    """One instruction about one or more images, its instruction-conditioned caption and where
    it stands in the funnel."""

    class Origin(models.TextChoices):
        SEED = "seed", _("Seed example")
        CROWD = "crowd", _("Written by a crowdworker")
        IMPORTED = "imported", _("Imported")

    class State(models.TextChoices):
        SEED = "seed", _("Seed example")
        CAPTIONING = "captioning", _("Waiting for captions")
        DRAFTING = "drafting", _("Waiting for the reference draft")
        VERIFYING = "verifying", _("Reference in review")
        VERIFIED = "verified", _("Verified")
        DISCARDED = "discarded", _("Discarded")

    pipeline = models.ForeignKey(VisitPipeline, on_delete=models.CASCADE, related_name="instances")
    category = models.ForeignKey(VisitCategory, on_delete=models.CASCADE, related_name="instances")
    origin = models.CharField(max_length=8, choices=Origin.choices)
    state = models.CharField(max_length=10, choices=State.choices)
    # The item id in published versions (imported: the dataset's (image, instruction) key).
    external_id = models.CharField(max_length=200, blank=True)
    position = models.PositiveIntegerField(default=0)
    instruction = models.TextField()
    caption = models.TextField(blank=True)
    caption_round = models.PositiveSmallIntegerField(default=1)
    draft_error = models.TextField(blank=True)
    # Published columns kept for the export (public_images_metadata, reference_output, line).
    metadata = models.JSONField(default=dict, blank=True)
    author = optional_link(settings.AUTH_USER_MODEL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "curation_visitinstance"
        ordering = ["pipeline", "position", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["pipeline", "external_id"],
                condition=~Q(external_id=""),
                name="visitinstance_external_id_uniq",
            ),
            models.CheckConstraint(
                condition=Q(caption_round__gte=1), name="visitinstance_round_gte_1"
            ),
        ]
        indexes = [models.Index(fields=["pipeline", "state"], name="visitinstance_state_idx")]

    def __str__(self) -> str:
        return self.instruction[:60]


class VisitImage(models.Model):
    """An image of an instance: a stored Image, or a remote URL kept as a reference (fetched when
    reachable), with its instruction-conditioned caption (one per image, Fig. 4)."""

    instance = models.ForeignKey(VisitInstance, on_delete=models.CASCADE, related_name="images")
    position = models.PositiveSmallIntegerField(default=0)
    image = models.ForeignKey(
        "curation.Image", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    url = models.CharField(max_length=2000, blank=True)
    caption = models.TextField(blank=True)
    fetch_error = models.CharField(max_length=300, blank=True)

    class Meta:
        db_table = "curation_visitimage"
        ordering = ["instance", "position"]
        constraints = [
            models.UniqueConstraint(fields=["instance", "position"], name="visitimage_pos_uniq"),
            models.CheckConstraint(
                condition=Q(image__isnull=False) | ~Q(url=""), name="visitimage_has_source"
            ),
        ]

    def __str__(self) -> str:
        return self.url or str(self.image_id)


class VisitReference(FromGeneration, PeopleDecide):
    """A reference response for one caption round and its verification (Sec. 2.1, Table 2)."""

    class Source(models.TextChoices):
        LLM = "llm", _("LLM draft")
        IMPORTED = "imported", _("Published GPT-4 response")
        HUMAN = "human", _("Published human-written response")
        SEED = "seed", _("Seed example response")

    class Verdict(models.TextChoices):
        PENDING = "pending", _("In review")
        CORRECT = "correct", _("Correct")
        CAPTION = "caption", _("Problem in the caption")
        RESPONSE = "response", _("Problem in the response")
        INCORRECT = "incorrect", _("Incorrect (no reason given)")

    instance = models.ForeignKey(VisitInstance, on_delete=models.CASCADE, related_name="references")
    round = models.PositiveSmallIntegerField(default=1)
    text = models.TextField()
    source = models.CharField(max_length=8, choices=Source.choices)
    offline = models.BooleanField(default=False)
    verdict = models.CharField(max_length=9, choices=Verdict.choices, default=Verdict.PENDING)
    comments = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "curation_visitreference"
        ordering = ["instance", "round"]
        constraints = [
            models.UniqueConstraint(fields=["instance", "round"], name="visitreference_round_uniq"),
        ]
        indexes = [models.Index(fields=["verdict"], name="visitreference_verdict_idx")]

    def __str__(self) -> str:
        return self.text[:60]


class VisitTask(models.Model):
    """Which category (instruction generation) or image and round (caption) a write_text task is
    about, so its outcome handler finds its place."""

    class Stage(models.TextChoices):
        INSTRUCTION = "instruction", _("Instruction generation")
        CAPTION = "caption", _("Instruction-conditioned caption")

    task = models.OneToOneField("annotator.Task", on_delete=models.CASCADE, related_name="+")
    pipeline = models.ForeignKey(VisitPipeline, on_delete=models.CASCADE, related_name="+")
    stage = models.CharField(max_length=11, choices=Stage.choices)
    category = models.ForeignKey(
        VisitCategory, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    image = models.ForeignKey(
        VisitImage, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    round = models.PositiveSmallIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "curation_visittask"
        constraints = [
            models.CheckConstraint(
                condition=(Q(stage="instruction") & Q(category__isnull=False))
                | (Q(stage="caption") & Q(image__isnull=False)),
                name="visittask_stage_target",
            ),
        ]
        indexes = [models.Index(fields=["pipeline", "stage"], name="visittask_stage_idx")]


class VisitPair(ResponsePair):
    """An (instance, model A, model B) tuple for forced-choice human rating (Sec. 4.2); the
    verified reference counts as a model. Votes are counted per response."""

    pipeline = models.ForeignKey(VisitPipeline, on_delete=models.CASCADE, related_name="pairs")
    instance = models.ForeignKey(VisitInstance, on_delete=models.CASCADE, related_name="+")
    version = models.ForeignKey(
        "evaluation.BenchmarkVersion", on_delete=models.RESTRICT, related_name="+"
    )
    item_id = models.CharField(max_length=200)
    task = optional_link("annotator.Task", one_to_one=True)
    # model_a, model_b, "tie" (an even vote), or "" while people are still rating.
    winner = models.CharField(max_length=200, blank=True)
    seed = models.BigIntegerField(default=0)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "curation_visitpair"
        ordering = ["pipeline", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["pipeline", "version_id", "item_id", "pair_key"],
                name="visitpair_uniq",
            ),
            models.CheckConstraint(condition=~Q(model_a=models.F("model_b")), name="visitpair_two"),
        ]
        indexes = [models.Index(fields=["pipeline", "decided_at"], name="visitpair_decided_idx")]

    def __str__(self) -> str:
        return f"{self.model_a} vs {self.model_b} on {self.item_id}"


class VisitSubmission(NewestFirst):
    """A new model's responses for the living leaderboard (Sec. 1, App. F): imported as a run,
    paired with the reference and a random other model per instance (seeded), judged by the LLM
    judge in both orders."""

    class Status(models.TextChoices):
        JUDGING = "judging", _("Being judged")
        FAILED = "failed", _("Failed")

    pipeline = models.ForeignKey(
        VisitPipeline, on_delete=models.CASCADE, related_name="submissions"
    )
    model_name = models.CharField(max_length=200)
    filename = models.CharField(max_length=255, blank=True)
    format = models.CharField(max_length=5)
    rows = models.PositiveIntegerField(default=0)
    version = models.ForeignKey(
        "evaluation.BenchmarkVersion", on_delete=models.RESTRICT, related_name="+"
    )
    run = optional_link("evaluation.ModelRun")
    judgment_set_label = models.CharField(max_length=120)
    judge_job = optional_link("annotator.Job")
    seed = models.BigIntegerField(default=0)
    reference_pairs = models.PositiveIntegerField(default=150)
    pairs = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.JUDGING)
    error = models.TextField(blank=True)

    class Meta(NewestFirst.Meta):
        db_table = "curation_visitsubmission"
        constraints = [
            models.UniqueConstraint(
                fields=["pipeline", "version_id", "model_name"], name="visitsubmission_model_uniq"
            ),
        ]

    def __str__(self) -> str:
        return self.model_name
