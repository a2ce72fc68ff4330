"""The scorer registry's services: the NaturalBench default, the tiny test scorer, checking,
creating and changing a scorer, and the signature that names its embeddings cache."""

from __future__ import annotations

import os
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from ..models import EmbeddingCache, Scorer
from ..tiny_clip import TINY_CONFIG, TINY_MODEL_NAME, register_tiny
from .cache import embeddings_clear, scorer_signature
from .loading import scorer_unload
from .weights import IDENTITY_FIELDS

# NaturalBench Sec. 3 / App. A: pairs mined on Flickr30K with OpenCLIP ViT-L-14 (LAION-400M).
NATURALBENCH_MODEL = "ViT-L-14"
NATURALBENCH_TAG = "laion400m_e32"


def scorer_defaults() -> dict[str, Any]:
    """The scorer offered first: NaturalBench's OpenCLIP ViT-L-14 (LAION-400M, epoch 32)."""
    return {
        "label": f"{NATURALBENCH_MODEL} · {NATURALBENCH_TAG} (NaturalBench)",
        "model_name": NATURALBENCH_MODEL,
        "pretrained": NATURALBENCH_TAG,
        "checkpoint_path": "",
        "model_config": {},
        "random_weights": False,
        "dtype": Scorer.DType.FP32,
        "device": Scorer.Device.AUTO,
        "batch_size": 32,
    }


def scorer_ensure_default() -> Scorer:
    """Get or create the NaturalBench default scorer (idempotent); it becomes the default scorer
    when no other scorer is marked default."""
    fields = scorer_defaults()
    with transaction.atomic():
        scorer = Scorer.objects.filter(
            model_name=fields["model_name"], pretrained=fields["pretrained"], checkpoint_path=""
        ).first()
        if scorer is None:
            scorer = Scorer.objects.create(**fields)
        if not Scorer.objects.filter(is_default=True).exists():
            Scorer.objects.filter(pk=scorer.pk).update(is_default=True)
            scorer.is_default = True
    return scorer


def scorer_tiny(*, label: str = "tiny (random weights)") -> Scorer:
    """Get or create the tiny random-weights scorer of ``curation.tiny_clip`` (tests, demo)."""
    register_tiny()
    scorer, _ = Scorer.objects.get_or_create(
        label=label,
        defaults={
            "model_name": TINY_MODEL_NAME,
            "model_config": TINY_CONFIG,
            "random_weights": True,
            "dtype": Scorer.DType.FP32,
            "device": Scorer.Device.AUTO,
            "batch_size": 32,
        },
    )
    return scorer


# The fields scorer_validate reads.
CHECKED_FIELDS = (
    "label",
    "model_name",
    "pretrained",
    "checkpoint_path",
    "model_config",
    "random_weights",
    "batch_size",
)


def _stripped(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v.strip() if isinstance(v, str) else v for k, v in fields.items()}


def scorer_validate(fields: dict[str, Any], *, instance: Scorer | None = None) -> None:
    """Raise ``ValidationError`` (a dict of field → message) for a scorer that cannot work;
    ``fields`` holds at least the CHECKED_FIELDS."""
    label, model_name, pretrained, checkpoint_path, model_config, random_weights, batch_size = (
        fields[name] for name in CHECKED_FIELDS
    )
    errors: dict[str, str] = {}
    if not label.strip():
        errors["label"] = "Give the scorer a name."
    elif (
        Scorer.objects.filter(label=label.strip())
        .exclude(pk=getattr(instance, "pk", None))
        .exists()
    ):
        errors["label"] = f"A scorer named {label.strip()!r} already exists."
    known = _known_models()
    if not model_name.strip():
        errors["model_name"] = "Give an open_clip architecture, e.g. ViT-L-14."
    elif not model_config and model_name not in known:
        close = [m for m in known if model_name.lower().replace("/", "-") in m.lower()][:8]
        errors["model_name"] = f"open_clip has no architecture {model_name!r}." + (
            f" Did you mean: {', '.join(close)}?" if close else " See open_clip.list_models()."
        )
    if pretrained and checkpoint_path:
        errors["checkpoint_path"] = "Give a pretrained tag or a checkpoint path, not both."
    if random_weights and (pretrained or checkpoint_path):
        errors["random_weights"] = (
            "Random weights use no tag and no checkpoint: clear them or untick random weights."
        )
    if not (random_weights or pretrained or checkpoint_path):
        errors["pretrained"] = "Give a pretrained tag, a checkpoint path, or tick random weights."
    if pretrained and "model_name" not in errors and not model_config:
        tags = _known_tags(model_name)
        if pretrained not in tags:
            errors["pretrained"] = f"open_clip has no tag {pretrained!r} for {model_name}." + (
                f" Known tags: {', '.join(tags)}." if tags else " It has no pretrained tags."
            )
    if checkpoint_path and not os.path.isabs(checkpoint_path):
        errors["checkpoint_path"] = "Give an absolute path (the worker runs in another folder)."
    if not 1 <= int(batch_size) <= 4096:
        errors["batch_size"] = "Batch size must be between 1 and 4096."
    if errors:
        raise ValidationError(errors)


def scorer_create(
    *,
    label: str,
    model_name: str,
    pretrained: str = "",
    checkpoint_path: str = "",
    model_config: dict | None = None,
    random_weights: bool = False,
    dtype: str = Scorer.DType.FP32,
    device: str = Scorer.Device.AUTO,
    batch_size: int = 32,
    is_default: bool = False,
) -> Scorer:
    values = (label, model_name, pretrained, checkpoint_path, model_config or {}, random_weights)
    fields = dict(zip(CHECKED_FIELDS, (*values, batch_size), strict=True))
    scorer_validate(fields)
    with transaction.atomic():
        if is_default:
            Scorer.objects.filter(is_default=True).update(is_default=False)
        return Scorer.objects.create(
            **_stripped(fields), dtype=dtype, device=device, is_default=is_default
        )


def scorer_record(scorer: Scorer) -> dict[str, Any]:
    """What a run that used ``scorer`` records of it: the fields that decide its numbers and the
    signature naming its embeddings (provenance of mined pairs, partners)."""
    return {
        "id": scorer.pk,
        "label": scorer.label,
        **{f: getattr(scorer, f) for f in IDENTITY_FIELDS},
        "signature": scorer_signature(scorer),
    }


def scorer_uses(scorer: Scorer) -> list[str]:
    """What chose ``scorer`` ("2 naturalbench pipelines", "1 hunt round"): every row of another
    model that links to it, found through the model registry so no recipe is named here (the
    embeddings cache is the scorer's own)."""
    uses = []
    for rel in Scorer._meta.get_fields(include_hidden=True):
        if not rel.auto_created or rel.concrete:
            continue
        model = rel.related_model
        if model is EmbeddingCache or model._meta.auto_created:  # an M2M's table: seen as M2M
            continue
        n = model._default_manager.filter(**{rel.field.name: scorer}).count()
        if n:
            noun = model._meta.verbose_name if n == 1 else model._meta.verbose_name_plural
            uses.append(f"{n} {noun}")
    return uses


def scorer_update(*, scorer: Scorer, **fields: Any) -> Scorer:
    """Change a scorer. A change of weights or dtype deletes its cached embeddings (they would
    no longer match what the scorer computes) and the recorded context length and dimension.
    Refused for a scorer something already chose (a pipeline, a hunt round): its weights decided
    what they mined, so they are never changed under them; a new scorer is made instead."""
    merged = {f: getattr(scorer, f) for f in (*IDENTITY_FIELDS, "label", "batch_size")}
    merged.update(_stripped(fields))
    scorer_validate(merged, instance=scorer)
    changed = [f for f in IDENTITY_FIELDS if f in fields and fields[f] != getattr(scorer, f)]
    identity_changed = bool(changed)
    uses = scorer_uses(scorer) if identity_changed else []
    if uses:
        raise ValidationError(
            {
                changed[0]: (
                    f"{scorer.label!r} is used by {', '.join(uses)}: its weights decide what "
                    "they mine, so they stay as they are. Add a new scorer for other weights "
                    "and choose it there."
                )
            }
        )
    with transaction.atomic():
        if identity_changed:
            embeddings_clear(scorer=scorer)
            fields = {**fields, "context_length": None, "embed_dim": None}
        if fields.get("is_default"):
            Scorer.objects.filter(is_default=True).exclude(pk=scorer.pk).update(is_default=False)
        for name, value in _stripped(fields).items():
            setattr(scorer, name, value)
        scorer.save()
    scorer_unload(scorer=scorer)
    return scorer


def _known_models() -> list[str]:
    import open_clip

    return open_clip.list_models()


def _known_tags(model_name: str) -> list[str]:
    import open_clip

    return open_clip.list_pretrained_tags_by_model(model_name)
