"""CLIP-style scorers through open_clip: the registry's services, weight checks, loading, encoding.

A scorer is an open_clip architecture plus its weights: a pretrained tag (resolved in the local
Hugging Face / open_clip cache), a local checkpoint file, or random weights (tiny test models and
the offline demo). This machine cannot download weights, so every load first checks that the
weights are on disk and otherwise raises ``ScorerUnavailable`` saying exactly what to set; open_clip
itself then runs with the Hugging Face hub forced offline, so a load never waits on the network.

torch and open_clip are imported lazily: importing this module (views, admin) stays cheap.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from .models import Scorer
from .tiny_clip import TINY_CONFIG, TINY_MODEL_NAME, register_model_config, register_tiny

log = logging.getLogger(__name__)

# NaturalBench Sec. 3 / App. A: pairs mined on Flickr30K with OpenCLIP ViT-L-14 (LAION-400M).
NATURALBENCH_MODEL = "ViT-L-14"
NATURALBENCH_TAG = "laion400m_e32"
RANDOM_WEIGHTS_LABEL = "random weights — scores are not meaningful"
# Random weights are drawn with a fixed seed so every process (web, worker, CLI) builds the same
# model and cached embeddings stay consistent with freshly computed ones.
RANDOM_WEIGHTS_SEED = 0
IDENTITY_FIELDS = (
    "model_name",
    "pretrained",
    "checkpoint_path",
    "model_config",
    "random_weights",
    "dtype",
)


class ScorerUnavailable(RuntimeError):
    """The scorer's weights are not here (or do not load); the message says what to set."""


# --------------------------------------------------------------------------------------------
# Registry services
# --------------------------------------------------------------------------------------------
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


def scorer_validate(
    *,
    label: str,
    model_name: str,
    pretrained: str = "",
    checkpoint_path: str = "",
    model_config: dict | None = None,
    random_weights: bool = False,
    batch_size: int = 32,
    instance: Scorer | None = None,
) -> None:
    """Raise ``ValidationError`` (a dict of field → message) for a scorer that cannot work."""
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
    scorer_validate(
        label=label,
        model_name=model_name,
        pretrained=pretrained,
        checkpoint_path=checkpoint_path,
        model_config=model_config,
        random_weights=random_weights,
        batch_size=batch_size,
    )
    with transaction.atomic():
        if is_default:
            Scorer.objects.filter(is_default=True).update(is_default=False)
        return Scorer.objects.create(
            label=label.strip(),
            model_name=model_name.strip(),
            pretrained=pretrained.strip(),
            checkpoint_path=checkpoint_path.strip(),
            model_config=model_config or {},
            random_weights=random_weights,
            dtype=dtype,
            device=device,
            batch_size=batch_size,
            is_default=is_default,
        )


def scorer_update(*, scorer: Scorer, **fields: Any) -> Scorer:
    """Change a scorer. A change of weights or dtype deletes its cached embeddings (they would
    no longer match what the scorer computes) and the recorded context length and dimension."""
    merged = {f: getattr(scorer, f) for f in (*IDENTITY_FIELDS, "label", "batch_size")}
    merged.update({k: v.strip() if isinstance(v, str) else v for k, v in fields.items()})
    scorer_validate(
        label=merged["label"],
        model_name=merged["model_name"],
        pretrained=merged["pretrained"],
        checkpoint_path=merged["checkpoint_path"],
        model_config=merged["model_config"],
        random_weights=merged["random_weights"],
        batch_size=merged["batch_size"],
        instance=scorer,
    )
    identity_changed = any(f in fields and fields[f] != getattr(scorer, f) for f in IDENTITY_FIELDS)
    with transaction.atomic():
        if identity_changed:
            from .embeddings import embeddings_clear

            embeddings_clear(scorer=scorer)
            fields = {**fields, "context_length": None, "embed_dim": None}
        if fields.get("is_default"):
            Scorer.objects.filter(is_default=True).exclude(pk=scorer.pk).update(is_default=False)
        for name, value in fields.items():
            setattr(scorer, name, value.strip() if isinstance(value, str) else value)
        scorer.save()
    scorer_unload(scorer=scorer)
    return scorer


def scorer_signature(scorer: Scorer) -> str:
    """A short hash of what determines the scorer's numbers (weights, dtype) and of the row's
    creation time: names the cache folder, so two databases sharing one embeddings folder, or
    an edited scorer, never read each other's vectors."""
    payload = {f: getattr(scorer, f) for f in IDENTITY_FIELDS}
    payload["created_at"] = scorer.created_at.isoformat() if scorer.created_at else ""
    blob = json.dumps(payload, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:10]


# --------------------------------------------------------------------------------------------
# Weights: where they are, without loading the model
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class WeightsStatus:
    state: str  # "found" | "missing" | "random"
    path: str = ""  # the file that will be loaded (found) or was looked for (missing)
    hint: str = ""  # short "set X" for the list page
    message: str = ""  # the full explanation (ScorerUnavailable's message)

    @property
    def found(self) -> bool:
        return self.state == "found"

    @property
    def missing(self) -> bool:
        return self.state == "missing"

    @property
    def random(self) -> bool:
        return self.state == "random"


def clip_cache_dir() -> str | None:
    """Where open_clip looks for tagged weights: ``BLINDSPOT_CLIP_CACHE_DIR`` (setting or env),
    else open_clip's defaults (the Hugging Face hub cache, ``~/.cache/clip`` for URLs)."""
    value = getattr(settings, "BLINDSPOT_CLIP_CACHE_DIR", None) or os.environ.get(
        "BLINDSPOT_CLIP_CACHE_DIR"
    )
    return str(value) if value else None


def scorer_weights(scorer: Scorer) -> WeightsStatus:
    """Are the scorer's weights on this machine? Looks at files only (no model is built)."""
    if scorer.random_weights:
        return WeightsStatus("random", hint=RANDOM_WEIGHTS_LABEL, message=RANDOM_WEIGHTS_LABEL)
    if scorer.checkpoint_path:
        path = scorer.checkpoint_path
        if os.path.isfile(path):
            return WeightsStatus("found", path=path)
        return WeightsStatus(
            "missing",
            path=path,
            hint="set checkpoint_path",
            message=(
                f"Scorer {scorer.label!r}: the checkpoint file {path} does not exist. "
                f"Put the checkpoint at {path} (on the web and worker machines), or set the "
                f"scorer's checkpoint_path to a file that exists."
            ),
        )
    if scorer.pretrained:
        return _tag_weights(scorer)
    return WeightsStatus(
        "missing",
        hint="set pretrained or checkpoint_path",
        message=(
            f"Scorer {scorer.label!r} has no weights: set a pretrained tag, a checkpoint_path, "
            f"or tick random weights."
        ),
    )


def _tag_weights(scorer: Scorer) -> WeightsStatus:
    from open_clip import pretrained as oc_pretrained

    name, tag, cache_dir = scorer.model_name, scorer.pretrained, clip_cache_dir()
    cfg = oc_pretrained.get_pretrained_cfg(name, tag)
    if not cfg:
        tags = oc_pretrained.list_pretrained_tags_by_model(name)
        return WeightsStatus(
            "missing",
            hint="set a known pretrained tag",
            message=(
                f"Scorer {scorer.label!r}: open_clip knows no tag {tag!r} for {name} "
                f"(known: {', '.join(tags) or 'none'}). Set pretrained to one of them, or set "
                f"checkpoint_path to a local file."
            ),
        )
    url = cfg.get("url", "")
    if "file" in cfg:
        path = cfg["file"]
        if os.path.isfile(path):
            return WeightsStatus("found", path=path)
        return _missing_tag(scorer, where=path, url=url, cache_hint="")
    hf_hub = cfg.get("hf_hub", "")
    # open_clip prefers the hub when huggingface_hub is installed and the tag has a hub entry.
    if hf_hub and oc_pretrained.has_hf_hub():
        from huggingface_hub import constants as hf_constants
        from huggingface_hub import try_to_load_from_cache

        repo_id, filename = os.path.split(hf_hub)
        filename = filename or oc_pretrained.HF_WEIGHTS_NAME
        candidates = [filename]
        safe = getattr(oc_pretrained, "_get_safe_alternatives", None)
        if safe is not None and getattr(oc_pretrained, "_has_safetensors", False):
            candidates = [*safe(filename), filename]
        for candidate in candidates:
            hit = try_to_load_from_cache(repo_id, candidate, cache_dir=cache_dir)
            if isinstance(hit, str) and os.path.isfile(hit):
                return WeightsStatus("found", path=hit)
        hub_cache = cache_dir or hf_constants.HF_HUB_CACHE
        return _missing_tag(
            scorer,
            where=f"{hub_cache} (Hugging Face repo {repo_id}, file {filename})",
            url=url or f"https://huggingface.co/{repo_id}/resolve/main/{filename}",
            cache_hint=(
                f"copy that repository into a Hugging Face cache folder, set HF_HUB_CACHE "
                f"(or BLINDSPOT_CLIP_CACHE_DIR) to it (now {hub_cache}) and restart the web and "
                f"worker processes"
            ),
        )
    if url:
        folder = cache_dir or os.path.expanduser("~/.cache/clip")
        path = os.path.join(folder, os.path.basename(url))
        if os.path.isfile(path):
            return WeightsStatus("found", path=path)
        return _missing_tag(
            scorer,
            where=path,
            url=url,
            cache_hint=f"put the file at {path} (or set BLINDSPOT_CLIP_CACHE_DIR to its folder)",
        )
    return _missing_tag(scorer, where="(no download source known)", url="", cache_hint="")


def _missing_tag(scorer: Scorer, *, where: str, url: str, cache_hint: str) -> WeightsStatus:
    ways = [w for w in (cache_hint,) if w]
    ways.append(
        "download the checkpoint elsewhere"
        + (f" ({url})" if url else "")
        + ", put it on this machine, set the scorer's checkpoint_path to the file and clear "
        "its pretrained tag"
    )
    return WeightsStatus(
        "missing",
        path=where,
        hint="set HF_HUB_CACHE or checkpoint_path",
        message=(
            f"Scorer {scorer.label!r}: weights for {scorer.model_name} / {scorer.pretrained} are "
            f"not on this machine (looked in {where}) and cannot be downloaded here. "
            f"Either {'; or '.join(ways)}."
        ),
    )


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------
@dataclass
class LoadedScorer:
    model: Any
    preprocess: Any
    tokenizer: Any
    device: str
    context_length: int
    embed_dim: int
    input_dtype: Any  # torch dtype images are cast to
    key: tuple = ()


_loaded: dict[Any, LoadedScorer] = {}
_load_lock = threading.Lock()


def resolve_device(device: str) -> str:
    import torch

    if device in ("", "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


@contextlib.contextmanager
def _hub_offline():
    """Force the Hugging Face hub offline while open_clip runs, so a missing file fails at once."""
    try:
        from huggingface_hub import constants as hf_constants
    except ImportError:  # no hub: open_clip only uses URLs, which we checked beforehand
        yield
        return
    before_const, before_env = hf_constants.HF_HUB_OFFLINE, os.environ.get("HF_HUB_OFFLINE")
    hf_constants.HF_HUB_OFFLINE = True
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        yield
    finally:
        hf_constants.HF_HUB_OFFLINE = before_const
        if before_env is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = before_env


def load_open_clip(
    *,
    model_name: str,
    pretrained: str | None = None,
    model_config: dict | None = None,
    dtype: str = "fp32",
    device: str = "auto",
    seed: int = RANDOM_WEIGHTS_SEED,
    cache_dir: str | None = None,
) -> LoadedScorer:
    """Build an open_clip model, its preprocessing and tokenizer (no database access).

    ``pretrained`` is a tag or a checkpoint path as open_clip takes it; ``None`` = random weights
    drawn with ``seed``; ``cache_dir`` is where tagged weights are looked up (None = open_clip's
    defaults). Failures become ``ScorerUnavailable``.
    """
    import open_clip
    import torch

    if model_config:
        register_model_config(model_name, model_config)
    dev = resolve_device(device)
    try:
        with _hub_offline(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model, _, preprocess = open_clip.create_model_and_transforms(
                model_name,
                pretrained=pretrained or None,
                precision=dtype,
                device=dev,
                cache_dir=cache_dir,
            )
            tokenizer = open_clip.get_tokenizer(model_name)
    except Exception as exc:  # noqa: BLE001 - every open_clip failure is reported the same way
        raise ScorerUnavailable(
            f"open_clip could not build {model_name} with weights {pretrained or 'random'!s}: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    model.eval()
    input_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(dtype, torch.float32)
    context_length = int(
        getattr(tokenizer, "context_length", None) or getattr(model, "context_length", 77)
    )
    loaded = LoadedScorer(
        model=model,
        preprocess=preprocess,
        tokenizer=tokenizer,
        device=dev,
        context_length=context_length,
        embed_dim=0,
        input_dtype=input_dtype,
    )
    loaded.embed_dim = int(encode_texts(loaded, [""])[0].shape[1])
    return loaded


def _load_key(scorer: Scorer) -> tuple:
    # A rewritten checkpoint file (same path) must load again: its size and mtime are in the key.
    stamp: tuple = ()
    if scorer.checkpoint_path and os.path.isfile(scorer.checkpoint_path):
        st = os.stat(scorer.checkpoint_path)
        stamp = (st.st_size, st.st_mtime_ns)
    return (
        scorer.pk,
        *(json.dumps(getattr(scorer, f), sort_keys=True) for f in IDENTITY_FIELDS),
        scorer.device,
        stamp,
    )


def scorer_load(scorer: Scorer) -> LoadedScorer:
    """The scorer's model, preprocessing and tokenizer, loaded once per process.

    Raises ``ScorerUnavailable`` before touching open_clip when the weights are not on disk.
    Records the context length and embedding dimension on the Scorer row after the first load.
    """
    key = _load_key(scorer)
    with _load_lock:
        loaded = _loaded.get(scorer.pk)
        if loaded is None or loaded.key != key:
            loaded = _load_uncached(scorer, key)
            _loaded[scorer.pk] = loaded
    if (scorer.context_length, scorer.embed_dim) != (loaded.context_length, loaded.embed_dim):
        scorer.context_length, scorer.embed_dim = loaded.context_length, loaded.embed_dim
        Scorer.objects.filter(pk=scorer.pk).update(
            context_length=loaded.context_length, embed_dim=loaded.embed_dim
        )
    return loaded


def _load_uncached(scorer: Scorer, key: tuple) -> LoadedScorer:
    status = scorer_weights(scorer)
    if status.missing:
        raise ScorerUnavailable(status.message)
    threads = getattr(settings, "BLINDSPOT_TORCH_THREADS", None)
    if threads:
        # Several workers on few cores: one thread each is faster than torch's one per core.
        import torch

        torch.set_num_threads(int(threads))
    source = None if scorer.random_weights else (scorer.checkpoint_path or scorer.pretrained)
    try:
        loaded = load_open_clip(
            model_name=scorer.model_name,
            pretrained=source,
            model_config=scorer.model_config or None,
            dtype=scorer.dtype,
            device=scorer.device,
            cache_dir=clip_cache_dir(),
        )
    except ScorerUnavailable as exc:
        raise ScorerUnavailable(f"Scorer {scorer.label!r}: {exc}") from exc
    loaded.key = key
    return loaded


def scorer_unload(*, scorer: Scorer | None = None) -> None:
    """Forget loaded models (one scorer's, or all) so their memory can be freed."""
    with _load_lock:
        if scorer is None:
            _loaded.clear()
        else:
            _loaded.pop(scorer.pk, None)


# --------------------------------------------------------------------------------------------
# Encoding (L2-normalised float32; callers store float16)
# --------------------------------------------------------------------------------------------
def encode_images(loaded: LoadedScorer, images: list) -> np.ndarray:
    """PIL images → (n, dim) L2-normalised float32, through the scorer's own preprocessing."""
    import torch

    batch = torch.stack([loaded.preprocess(im) for im in images])
    batch = batch.to(device=loaded.device, dtype=loaded.input_dtype)
    with torch.inference_mode():
        feats = loaded.model.encode_image(batch).float()
    return _normalise(feats.cpu().numpy())


def token_counts(loaded: LoadedScorer, texts: list[str]) -> list[list[int]] | list[int]:
    """Token ids (SOT … EOT, untruncated) per text for open_clip's BPE tokenizer; for other
    tokenizers the count of tokens including special ones."""
    tok = loaded.tokenizer
    if hasattr(tok, "sot_token_id") and getattr(tok, "reduction_fn", None) is None:
        return [[tok.sot_token_id, *tok.encode(t), tok.eot_token_id] for t in texts]
    inner = getattr(tok, "tokenizer", None)
    if inner is not None:
        clean = getattr(tok, "clean_fn", lambda s: s)
        return [len(ids) for ids in inner([clean(t) for t in texts])["input_ids"]]
    return [0 for _ in texts]  # unknown tokenizer: truncation cannot be detected


def encode_texts(loaded: LoadedScorer, texts: list[str]) -> tuple[np.ndarray, list[int]]:
    """Texts → ((n, dim) L2-normalised float32, token counts incl. SOT/EOT before truncation).

    A text longer than the context length is cut the way open_clip cuts it (keep the first
    ``context_length - 1`` tokens, end with EOT); the caller counts ``tokens > context_length``.
    """
    import torch

    n_ctx = loaded.context_length
    ids = token_counts(loaded, texts)
    if ids and isinstance(ids[0], list):
        tokens = torch.zeros(len(ids), n_ctx, dtype=torch.long)
        eot = loaded.tokenizer.eot_token_id
        for i, row in enumerate(ids):
            if len(row) > n_ctx:
                row = [*row[: n_ctx - 1], eot]
            tokens[i, : len(row)] = torch.tensor(row)
        counts = [len(row) for row in ids]
    else:
        tokens = loaded.tokenizer(texts)
        counts = list(ids)
    with torch.inference_mode():
        feats = loaded.model.encode_text(tokens.to(loaded.device)).float()
    return _normalise(feats.cpu().numpy()), counts


def _normalise(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.maximum(norms, 1e-12)).astype(np.float32)


def _known_models() -> list[str]:
    import open_clip

    return open_clip.list_models()


def _known_tags(model_name: str) -> list[str]:
    import open_clip

    return open_clip.list_pretrained_tags_by_model(model_name)
