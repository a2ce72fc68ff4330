"""CLIP-style scorers through open_clip: the registry's services, weight checks, loading, encoding.

A scorer is an open_clip architecture plus its weights: a pretrained tag (resolved in the local
Hugging Face / open_clip cache), a local checkpoint file, or random weights (tiny test models and
the offline demo). This machine cannot download weights, so every load first checks that the
weights are on disk and otherwise raises ``ScorerUnavailable`` saying exactly what to set; open_clip
itself then runs with the Hugging Face hub forced offline, so a load never waits on the network.

torch and open_clip are imported lazily: importing this package (views, admin) stays cheap.
Modules: ``services`` (the registry), ``weights`` (where the weights are), ``loading`` (models
loaded once per process, encoding).
"""

from .cache import scorer_signature
from .loading import (
    RANDOM_WEIGHTS_SEED,
    LoadedScorer,
    encode_images,
    encode_texts,
    load_open_clip,
    resolve_device,
    scorer_load,
    scorer_unload,
    token_counts,
)
from .services import (
    NATURALBENCH_MODEL,
    NATURALBENCH_TAG,
    scorer_create,
    scorer_defaults,
    scorer_ensure_default,
    scorer_record,
    scorer_tiny,
    scorer_update,
    scorer_uses,
    scorer_validate,
)
from .weights import (
    IDENTITY_FIELDS,
    RANDOM_WEIGHTS_LABEL,
    ScorerUnavailable,
    WeightsStatus,
    clip_cache_dir,
    scorer_weights,
    scorer_weights_check,
)

__all__ = [
    "IDENTITY_FIELDS",
    "NATURALBENCH_MODEL",
    "NATURALBENCH_TAG",
    "RANDOM_WEIGHTS_LABEL",
    "RANDOM_WEIGHTS_SEED",
    "LoadedScorer",
    "ScorerUnavailable",
    "WeightsStatus",
    "clip_cache_dir",
    "encode_images",
    "encode_texts",
    "load_open_clip",
    "resolve_device",
    "scorer_create",
    "scorer_defaults",
    "scorer_ensure_default",
    "scorer_load",
    "scorer_record",
    "scorer_signature",
    "scorer_tiny",
    "scorer_unload",
    "scorer_update",
    "scorer_uses",
    "scorer_validate",
    "scorer_weights",
    "scorer_weights_check",
    "token_counts",
]
