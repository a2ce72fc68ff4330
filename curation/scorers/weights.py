"""Where a scorer's weights are, found without loading the model: a local checkpoint, a
pretrained tag in the Hugging Face / open_clip cache, or random weights; and, when missing,
exactly what to set. This machine cannot download weights."""

from __future__ import annotations

import os
from dataclasses import dataclass

from django.conf import settings

from ..models import Scorer

RANDOM_WEIGHTS_LABEL = "random weights — scores are not meaningful"
# What determines a scorer's numbers: a change of any of them invalidates its cached embeddings.
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


def scorer_weights_check(scorer: Scorer, error: type[Exception] = ScorerUnavailable) -> None:
    """Refuse work that could only fail: ``error`` with what to set when the weights are missing
    (before a model is loaded, or a job that would load it is queued)."""
    status = scorer_weights(scorer)
    if status.missing:
        raise error(status.message)


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
