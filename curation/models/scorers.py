"""CLIP-style scorers (open_clip) and the record of their cached embeddings on disk."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _


class Scorer(models.Model):
    """An open_clip model: a name with a pretrained tag, or a local checkpoint path."""

    class DType(models.TextChoices):
        FP32 = "fp32", "float32"
        FP16 = "fp16", "float16"
        BF16 = "bf16", "bfloat16"

    class Device(models.TextChoices):
        AUTO = "auto", _("CUDA when present, else CPU")
        CPU = "cpu", "CPU"
        CUDA = "cuda", "CUDA"

    label = models.CharField(max_length=100, unique=True)
    model_name = models.CharField(
        max_length=100, help_text=_("open_clip architecture, e.g. ViT-L-14.")
    )
    pretrained = models.CharField(
        max_length=200, blank=True, help_text=_("open_clip pretrained tag, e.g. laion400m_e32.")
    )
    checkpoint_path = models.CharField(
        max_length=500, blank=True, help_text=_("A local checkpoint file instead of a tag.")
    )
    # A model config registered at run time (tiny test models); empty for built-in architectures.
    model_config = models.JSONField(default=dict, blank=True)
    random_weights = models.BooleanField(
        default=False, help_text=_("No trained weights: scores are not meaningful.")
    )
    dtype = models.CharField(max_length=4, choices=DType.choices, default=DType.FP32)
    device = models.CharField(max_length=4, choices=Device.choices, default=Device.AUTO)
    batch_size = models.PositiveIntegerField(default=32)
    context_length = models.PositiveIntegerField(null=True, blank=True)
    embed_dim = models.PositiveIntegerField(null=True, blank=True)
    is_default = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["label"]
        constraints = [
            models.CheckConstraint(
                condition=~(~Q(pretrained="") & ~Q(checkpoint_path="")),
                name="scorer_tag_or_checkpoint",
            ),
        ]

    def __str__(self) -> str:
        return self.label


class EmbeddingCache(models.Model):
    """Where one scorer's embeddings of one modality live (L2-normalised float16 ``.npy`` files
    keyed by item id) and how many items they hold."""

    class Modality(models.TextChoices):
        IMAGE = "image", _("Images")
        TEXT = "text", _("Texts")

    scorer = models.ForeignKey(Scorer, on_delete=models.CASCADE, related_name="caches")
    modality = models.CharField(max_length=5, choices=Modality.choices)
    path = models.CharField(max_length=500)
    count = models.PositiveIntegerField(default=0)
    dim = models.PositiveIntegerField(null=True, blank=True)
    truncated = models.PositiveIntegerField(
        default=0, help_text=_("Texts cut at the model's context length.")
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["scorer", "modality"]
        constraints = [
            models.UniqueConstraint(
                fields=["scorer", "modality"], name="cache_scorer_modality_uniq"
            ),
        ]
