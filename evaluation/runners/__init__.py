"""Run models on a benchmark version through the LLM gateway (or a CLIP-style scorer), as
resumable jobs.

- ``run_model_start`` / ``run_model`` (``llm``): a VLM answers every kept item with its family's
  official prompt; the family's ``LLMRunner`` says which calls an item needs and how its answers
  are read.
- ``score_model_start`` (``scorer``): a family with a ``ScorerRunner`` is scored by a ``Scorer``.
- ``standin``: offline stand-ins (no model, labelled so) and the demo's runs on a version.
- ``pool``: network calls run in a bounded thread pool (``provider.concurrency``); the job's own
  thread prepares calls (database, images) and records results. A family's pairwise judge
  (``family.pairwise.judge``) uses the same pool.
"""

from .common import (
    EXTRACTION_PURPOSE,
    JUDGE_JOB,
    JUDGE_PURPOSE,
    RUN_JOB,
    RUN_PURPOSE,
    provider_is_blind,
    provider_label,
)
from .images import ImageMissing, ImageResolver, image_root, open_pil
from .llm import item_prediction, option_owners, run_model, run_model_start
from .pool import CallSpec, Outcome, outcome_text
from .scorer import score_model_start
from .standin import STANDIN_NOTE, demo_runs_add, standin_run

__all__ = [
    "EXTRACTION_PURPOSE",
    "JUDGE_JOB",
    "JUDGE_PURPOSE",
    "RUN_JOB",
    "RUN_PURPOSE",
    "STANDIN_NOTE",
    "CallSpec",
    "ImageMissing",
    "ImageResolver",
    "Outcome",
    "demo_runs_add",
    "image_root",
    "item_prediction",
    "open_pil",
    "option_owners",
    "outcome_text",
    "provider_is_blind",
    "provider_label",
    "run_model",
    "run_model_start",
    "score_model_start",
    "standin_run",
]
