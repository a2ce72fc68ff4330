"""Images keyed by their content hash, and corpora of (image, captions) samples."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from annotator.platform.models import CreatedStamp

from .llm import FromGeneration


def image_upload_to(instance: Image, filename: str) -> str:
    # Content-addressed: images/ab/abcdef….jpg, so identical bytes land on one path.
    return f"images/{instance.sha256[:2]}/{instance.sha256}.{instance.format.lower()}"


def thumbnail_upload_to(instance: Image, filename: str) -> str:
    return f"thumbs/{instance.sha256[:2]}/{instance.sha256}.webp"


class Image(FromGeneration, CreatedStamp):
    """One stored picture, deduplicated by the SHA-256 of its (normalised) bytes."""

    class Format(models.TextChoices):
        JPEG = "JPEG", "JPEG"
        PNG = "PNG", "PNG"
        WEBP = "WEBP", "WEBP"

    sha256 = models.CharField(max_length=64, unique=True)
    file = models.FileField(upload_to=image_upload_to, max_length=255)
    thumbnail = models.FileField(upload_to=thumbnail_upload_to, max_length=255, blank=True)
    width = models.PositiveIntegerField()
    height = models.PositiveIntegerField()
    format = models.CharField(max_length=8, choices=Format.choices)
    # Format of the uploaded file before normalisation (e.g. GIF, CMYK JPEG), for the record.
    original_format = models.CharField(max_length=16, blank=True)
    byte_size = models.PositiveBigIntegerField()
    original_name = models.CharField(max_length=255, blank=True)
    source = models.CharField(max_length=500, blank=True, help_text=_("URL or dataset id."))
    licence = models.CharField(max_length=200, blank=True)
    attribution = models.CharField(max_length=500, blank=True)
    # Derived images (perturbations, generated images) link to where they came from.
    derived_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="derivatives"
    )
    derivation = models.JSONField(
        default=dict, blank=True, help_text=_("How it was made: {'op': …, 'params': {…}}.")
    )

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(width__gt=0) & Q(height__gt=0), name="image_positive_size"
            ),
        ]

    def __str__(self) -> str:
        return self.original_name or self.sha256[:12]


class Corpus(CreatedStamp):
    """A named collection of samples imported together (Flickr30K, DOCCI, a folder of photos)."""

    project = models.ForeignKey(
        "annotator.Project", on_delete=models.CASCADE, related_name="corpora"
    )
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=80)
    description = models.TextField(blank=True)
    source = models.CharField(max_length=500, blank=True)
    licence = models.CharField(max_length=200, blank=True)
    sample_count = models.PositiveIntegerField(default=0)
    caption_count = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["name", "id"]
        verbose_name_plural = "corpora"
        constraints = [
            models.UniqueConstraint(fields=["project", "slug"], name="corpus_project_slug_uniq"),
        ]

    def __str__(self) -> str:
        return self.name


class Sample(models.Model):
    """One image of a corpus with its captions; ``source_id`` is the id in the original dataset."""

    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="samples")
    image = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="samples")
    source_id = models.CharField(max_length=200)
    licence = models.CharField(max_length=200, blank=True)
    position = models.PositiveIntegerField()

    class Meta:
        ordering = ["corpus", "position"]
        constraints = [
            models.UniqueConstraint(fields=["corpus", "source_id"], name="sample_source_uniq"),
            models.UniqueConstraint(fields=["corpus", "position"], name="sample_position_uniq"),
        ]

    def __str__(self) -> str:
        return f"{self.corpus_id}:{self.source_id}"


class Caption(models.Model):
    """A caption of a sample in a language (BCP 47). ``short_text`` is an LLM-shortened version
    for scorers with a short context (NaturalBench App. A: DOCCI captions ≤ 230 characters)."""

    sample = models.ForeignKey(Sample, on_delete=models.CASCADE, related_name="captions")
    text = models.TextField()
    language = models.CharField(max_length=35, default="en")
    position = models.PositiveSmallIntegerField(default=0)
    short_text = models.TextField(blank=True)
    short_generation = models.ForeignKey(
        "curation.Generation", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )

    class Meta:
        ordering = ["sample", "position"]
        constraints = [
            models.UniqueConstraint(fields=["sample", "position"], name="caption_position_uniq"),
        ]
        # and caption_text_trgm_idx (pg_trgm GIN over UPPER(text), migration 0010 on PostgreSQL):
        # the hunt's pool search, text__icontains, over a million captions
        indexes = [models.Index(fields=["language"], name="caption_language_idx")]

    def __str__(self) -> str:
        return self.text[:60]
