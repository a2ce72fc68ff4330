"""Loading a scorer's open_clip model once per process (the Hugging Face hub forced offline, so
a load never waits on the network) and encoding images and texts with it (L2-normalised float32;
callers store float16). torch and open_clip are imported lazily."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.conf import settings

from ..models import Scorer
from ..tiny_clip import register_model_config
from .weights import IDENTITY_FIELDS, ScorerUnavailable, clip_cache_dir, scorer_weights_check

# Random weights are drawn with a fixed seed so every process (web, worker, CLI) builds the same
# model and cached embeddings stay consistent with freshly computed ones.
RANDOM_WEIGHTS_SEED = 0


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
    scorer_weights_check(scorer)
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
