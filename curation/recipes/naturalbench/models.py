"""NaturalBench (naturalbench.txt Sec. 3, App. A–C): a pipeline per project that mines confounding
pairs, has people verify them, drafts questions with an LLM, keeps the questions two people answer
as intended, assembles 2 × 2 samples, tags skills and exports frozen dataset versions.

The funnel, one table per step: ConfoundingPair (mined, then verified or discarded) →
PairQuestionSet (one per pair and question type: its drafting attempts and final state) →
QuestionDraft (one LLM call's two questions) → VQAItem (one (image, question) answered by people)
→ NaturalBenchSample (assembled or refused, with its skill tags) → NaturalBenchVersion (export).
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from annotator.platform.models import JobStamp, optional_link
from curation.models.llm import FromGeneration
from curation.recipes.framework.models import PeopleDecide, RecipePipeline

from . import skills

__all__ = [
    "ConfoundingPair",
    "NaturalBenchPipeline",
    "NaturalBenchSample",
    "NaturalBenchVersion",
    "PairQuestionSet",
    "QuestionDraft",
    "VQAItem",
]


class QuestionType(models.TextChoices):
    YES_NO = "yes_no", _("Yes-or-No")
    MULTIPLE_CHOICE = "multiple_choice", _("Multiple-Choice")


class NaturalBenchPipeline(RecipePipeline):
    """One NaturalBench collection run over a corpus, with its settings."""

    class Method(models.TextChoices):
        EQ1 = "eq1", _("Mismatches of every selected scorer (Eq. 1)")
        RANDOM = "random", _("Random pairs (Flickr-Random baseline, Table 6)")
        APPROX = "eq1_ann", _("Approximate Eq. 1: mismatches among nearest neighbours (FAISS)")

    corpus = models.ForeignKey("curation.Corpus", on_delete=models.PROTECT, related_name="+")
    scorers = models.ManyToManyField(
        "curation.Scorer",
        blank=True,
        related_name="+",
        db_table="curation_naturalbenchpipeline_scorers",
    )
    method = models.CharField(max_length=8, choices=Method.choices, default=Method.EQ1)
    question_types = models.JSONField(default=list)
    language = models.CharField(
        max_length=35, default="en", help_text=_("Captions in this language are paired.")
    )
    caption_max_chars = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text=_("Shorten longer captions through the LLM before scoring (DOCCI: 230)."),
    )
    annotators_per_item = models.PositiveSmallIntegerField(default=2)
    taggers_per_item = models.PositiveSmallIntegerField(default=3)
    max_regenerations = models.PositiveSmallIntegerField(default=3)
    random_pairs = models.PositiveIntegerField(
        null=True, blank=True, help_text=_("Random baseline only: how many pairs (empty: all).")
    )
    seed = models.PositiveIntegerField(default=0)
    provider = optional_link(
        "curation.LLMProvider",
        help_text=_("Drafts questions and shortens captions (empty: the project's default)."),
    )
    auto_regenerate = models.BooleanField(
        default=True,
        help_text=_("Draft a pair's questions again as soon as one of its items fails."),
    )
    pair_queue = optional_link("annotator.TaskQueue")
    answer_queue = optional_link("annotator.TaskQueue")
    tag_queue = optional_link("annotator.TaskQueue")
    # What the last mining run saw: samples, scorers, mismatches before one-per-sample, shortening.
    mining = models.JSONField(default=dict, blank=True)
    demo = models.BooleanField(
        default=False, help_text=_("Made by the demo: offline drafter, random-weights scorer.")
    )

    class Meta(RecipePipeline.Meta):
        db_table = "curation_naturalbenchpipeline"
        constraints = [
            models.UniqueConstraint(
                fields=["project", "name"], name="nbpipeline_project_name_uniq"
            ),
            models.CheckConstraint(
                condition=Q(annotators_per_item__gte=1), name="nbpipeline_annotators_gte_1"
            ),
            models.CheckConstraint(
                condition=Q(taggers_per_item__gte=1), name="nbpipeline_taggers_gte_1"
            ),
            models.CheckConstraint(
                condition=Q(max_regenerations__lte=10), name="nbpipeline_max_regen_lte_10"
            ),
        ]


class ConfoundingPair(PeopleDecide):
    """Two image-text samples a scorer mismatches (Eq. 1), ``i0 < i1`` by corpus position.

    ``scores`` holds, per scorer, the four S values [S(i0,t0), S(i0,t1), S(i1,t0), S(i1,t1)] and
    whether Eq. 1 calls the pair a mismatch (always true for mined pairs)."""

    class State(models.TextChoices):
        MINED = "mined", _("Mined")
        REVIEW = "review", _("In verification")
        VERIFIED = "verified", _("Verified")
        DISCARDED = "discarded", _("Discarded")

    pipeline = models.ForeignKey(
        NaturalBenchPipeline, on_delete=models.CASCADE, related_name="pairs"
    )
    position = models.PositiveIntegerField()
    sample_0 = models.ForeignKey("curation.Sample", on_delete=models.PROTECT, related_name="+")
    sample_1 = models.ForeignKey("curation.Sample", on_delete=models.PROTECT, related_name="+")
    caption_0 = models.ForeignKey("curation.Caption", on_delete=models.PROTECT, related_name="+")
    caption_1 = models.ForeignKey("curation.Caption", on_delete=models.PROTECT, related_name="+")
    scores = models.JSONField(default=list, blank=True)
    state = models.CharField(max_length=9, choices=State.choices, default=State.MINED)
    agreement = models.FloatField(null=True, blank=True)

    class Meta:
        db_table = "curation_confoundingpair"
        ordering = ["pipeline", "position"]
        constraints = [
            models.UniqueConstraint(fields=["pipeline", "position"], name="nbpair_position_uniq"),
            models.UniqueConstraint(
                fields=["pipeline", "sample_0", "sample_1"], name="nbpair_samples_uniq"
            ),
            models.CheckConstraint(
                condition=~Q(sample_0=models.F("sample_1")), name="nbpair_two_samples"
            ),
        ]
        indexes = [models.Index(fields=["pipeline", "state"], name="nbpair_state_idx")]

    def __str__(self) -> str:
        return f"pair {self.position}"


class PairQuestionSet(models.Model):
    """The questions of one verified pair in one question type: drafted, answered by people,
    drafted again when an answer fails (up to ``max_regenerations`` times), kept or given up."""

    class State(models.TextChoices):
        PENDING = "pending", _("Waiting for a draft")
        ANSWERING = "answering", _("Being answered")
        KEPT = "kept", _("Kept")
        GIVEN_UP = "given_up", _("Given up")

    pipeline = models.ForeignKey(
        NaturalBenchPipeline, on_delete=models.CASCADE, related_name="question_sets"
    )
    pair = models.ForeignKey(
        ConfoundingPair, on_delete=models.CASCADE, related_name="question_sets"
    )
    question_type = models.CharField(max_length=16, choices=QuestionType.choices)
    state = models.CharField(max_length=9, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    reason = models.TextField(
        blank=True, help_text=_("Why the last draft failed or why we gave up.")
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "curation_pairquestionset"
        ordering = ["pipeline", "pair", "question_type"]
        constraints = [
            models.UniqueConstraint(fields=["pair", "question_type"], name="nbqset_pair_type_uniq"),
        ]
        indexes = [models.Index(fields=["pipeline", "state"], name="nbqset_state_idx")]

    def __str__(self) -> str:
        return f"{self.pair} · {self.question_type}"


class QuestionDraft(FromGeneration):
    """One LLM call's two questions for a pair (App. A prompts), with its provenance."""

    class Status(models.TextChoices):
        INVALID = "invalid", _("Invalid output")
        ANSWERING = "answering", _("Being answered")
        KEPT = "kept", _("Kept")
        REJECTED = "rejected", _("Rejected by annotators")

    question_set = models.ForeignKey(
        PairQuestionSet, on_delete=models.CASCADE, related_name="drafts"
    )
    attempt = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=9, choices=Status.choices)
    problems = models.JSONField(default=list, blank=True)
    # Published texts: multiple-choice questions carry "\nOption: A:<x>; B:<y>;".
    question_0 = models.TextField(blank=True)
    question_1 = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "curation_questiondraft"
        ordering = ["question_set", "attempt"]
        constraints = [
            models.UniqueConstraint(
                fields=["question_set", "attempt"], name="nbdraft_attempt_uniq"
            ),
            models.CheckConstraint(condition=Q(attempt__gte=1), name="nbdraft_attempt_gte_1"),
        ]

    def __str__(self) -> str:
        return f"{self.question_set} #{self.attempt}"


class VQAItem(PeopleDecide):
    """One (image, question) of a draft, answered by people choosing among the two candidate
    answers and "Unanswerable" (Sec. 3); ``answer`` is the intended one (a0/a1 spelled)."""

    class State(models.TextChoices):
        OPEN = "open", _("Being answered")
        CORRECT = "correct", _("Answered as intended")
        FAILED = "failed", _("Failed")

    draft = models.ForeignKey(QuestionDraft, on_delete=models.CASCADE, related_name="items")
    key = models.CharField(max_length=5)  # q0_i0, q0_i1, q1_i0, q1_i1
    image = models.ForeignKey("curation.Image", on_delete=models.PROTECT, related_name="+")
    question = models.TextField()
    choices = models.JSONField(default=list)
    intended = models.CharField(max_length=500, help_text=_("The choice people should pick."))
    answer = models.CharField(max_length=3)  # Yes / No / A / B
    state = models.CharField(max_length=7, choices=State.choices, default=State.OPEN)

    class Meta:
        db_table = "curation_vqaitem"
        ordering = ["draft", "key"]
        constraints = [
            models.UniqueConstraint(fields=["draft", "key"], name="nbitem_draft_key_uniq"),
        ]

    def __str__(self) -> str:
        return f"{self.draft} {self.key}"


class NaturalBenchSample(models.Model):
    """A 2 × 2 sample in the published layout (METRICS.md Sec. 1), or the record of a refusal.

    ``record`` holds the published fields with images as ``sha256:<hex>``; ``skills`` the
    decided tags of question 0 and question 1 (None until decided)."""

    class State(models.TextChoices):
        ASSEMBLED = "assembled", _("Assembled")
        REFUSED = "refused", _("Refused")

    pipeline = models.ForeignKey(
        NaturalBenchPipeline, on_delete=models.CASCADE, related_name="samples"
    )
    draft = models.OneToOneField(QuestionDraft, on_delete=models.PROTECT, related_name="sample")
    index = models.PositiveIntegerField(null=True, blank=True)
    state = models.CharField(max_length=9, choices=State.choices)
    question_type = models.CharField(max_length=16, choices=QuestionType.choices)
    record = models.JSONField(default=dict, blank=True)
    problems = models.JSONField(default=list, blank=True)
    image_0 = models.ForeignKey("curation.Image", on_delete=models.PROTECT, related_name="+")
    image_1 = models.ForeignKey("curation.Image", on_delete=models.PROTECT, related_name="+")
    tag_task_0 = optional_link("annotator.Task", one_to_one=True)
    tag_task_1 = optional_link("annotator.Task", one_to_one=True)
    skills = models.JSONField(default=list, blank=True)
    tag_agreement = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "curation_naturalbenchsample"
        ordering = ["pipeline", "index", "id"]
        constraints = [
            models.UniqueConstraint(fields=["pipeline", "index"], name="nbsample_index_uniq"),
            models.CheckConstraint(
                condition=Q(state="refused") | Q(index__isnull=False),
                name="nbsample_assembled_has_index",
            ),
        ]
        indexes = [models.Index(fields=["pipeline", "state"], name="nbsample_state_idx")]

    def __str__(self) -> str:
        return f"sample {self.index}" if self.index is not None else f"refused #{self.pk}"

    @property
    def skill_labels(self) -> list[list[str] | None]:
        """The decided tags of question 0 and question 1 as labels (None: not decided yet)."""
        return [
            None if tags is None else skills.labels(tags) for tags in self.skills or [None, None]
        ]


def export_upload_to(instance: NaturalBenchVersion, filename: str) -> str:
    return f"exports/naturalbench/{instance.pipeline_id}/{filename}"


class NaturalBenchVersion(JobStamp):
    """A frozen, content-hashed export of a pipeline's samples: never edited after it is made.

    ``sha256`` is the hash of the JSONL records (images referenced by their own SHA-256), so two
    exports of the same content have the same hash. ``benchmark_version`` is the evaluation
    app's BenchmarkVersion made from it."""

    pipeline = models.ForeignKey(
        NaturalBenchPipeline, on_delete=models.CASCADE, related_name="versions"
    )
    label = models.CharField(max_length=60)
    sha256 = models.CharField(max_length=64)
    sample_count = models.PositiveIntegerField()
    card = models.JSONField(default=dict)
    archive = models.FileField(upload_to=export_upload_to, max_length=255)
    archive_sha256 = models.CharField(max_length=64)
    parquet = models.FileField(upload_to=export_upload_to, max_length=255, blank=True)
    parquet_sha256 = models.CharField(max_length=64, blank=True)
    benchmark_version = optional_link("evaluation.BenchmarkVersion")

    class Meta:
        db_table = "curation_naturalbenchversion"
        ordering = ["pipeline", "-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["pipeline", "label"], name="nbversion_label_uniq"),
            models.UniqueConstraint(fields=["pipeline", "sha256"], name="nbversion_sha_uniq"),
        ]

    def __str__(self) -> str:
        return f"{self.pipeline} {self.label}"
