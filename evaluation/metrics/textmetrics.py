"""Reference-based text metrics for the VisIT-Bench agreement baselines (visit-bench.txt Sec. 4.3).

BLEU-4, ROUGE-L, METEOR and CIDEr come from the COCO caption toolkit (pycocoevalcap), whose
METEOR 1.5 jar ships its own paraphrase data and runs offline (it needs a `java` executable).
BERTScore needs model weights; when they are not present locally the result says so explicitly
instead of producing a number.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

BLEU4 = "bleu4"
ROUGE_L = "rouge_l"
METEOR = "meteor"
CIDER = "cider"
BERTSCORE = "bertscore"

BERTSCORE_MODEL = "roberta-large"  # bert_score's default for English

_TOKEN = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True)
class TextMetricResult:
    """Per-candidate scores of one metric, or the reason it could not be computed."""

    metric: str
    scores: dict[str, float] = field(default_factory=dict)
    available: bool = True
    reason: str = ""


def unavailable(metric: str, reason: str) -> TextMetricResult:
    """An explicit "cannot compute" result, never a made-up number (METRICS.md Sec. 2)."""
    return TextMetricResult(metric=metric, available=False, reason=reason)


def tokenize(text: str) -> str:
    """Lowercase, split off punctuation: Java-free stand-in for COCO's PTB tokenizer (Sec. 4.3)."""
    return " ".join(_TOKEN.findall(text.lower()))


def _prepare(
    candidates: Mapping[str, str], references: Mapping[str, str]
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    if set(candidates) != set(references):
        raise ValueError("candidates and references must have the same ids")
    # The METEOR wire protocol uses "|||" and newlines as separators.
    gts = {k: [tokenize(v).replace("|||", " ")] for k, v in references.items()}
    res = {k: [tokenize(v).replace("|||", " ")] for k, v in candidates.items()}
    return gts, res


def _coco(
    metric: str,
    candidates: Mapping[str, str],
    references: Mapping[str, str],
    score: Callable[[dict, dict], Sequence[float]],
) -> TextMetricResult:
    """Per-candidate scores from a COCO caption toolkit scorer: ``score(gts, res)`` returns one
    score per id, in the order of ``gts``."""
    if not candidates:
        return TextMetricResult(metric)
    gts, res = _prepare(candidates, references)
    return TextMetricResult(metric, dict(zip(gts, map(float, score(gts, res)), strict=True)))


def bleu4(candidates: Mapping[str, str], references: Mapping[str, str]) -> TextMetricResult:
    """Sentence BLEU-4 of each candidate against its reference (COCO toolkit; Sec. 4.3 baseline)."""
    from pycocoevalcap.bleu.bleu import Bleu

    def score(gts: dict, res: dict) -> Sequence[float]:
        _, per_order = Bleu(4).compute_score(gts, res, verbose=0)
        return per_order[3]

    return _coco(BLEU4, candidates, references, score)


def rouge_l(candidates: Mapping[str, str], references: Mapping[str, str]) -> TextMetricResult:
    """ROUGE-L F-measure (β = 1.2, COCO toolkit) per candidate (visit-bench.txt Sec. 4.3)."""
    from pycocoevalcap.rouge.rouge import Rouge

    return _coco(
        ROUGE_L, candidates, references, lambda gts, res: Rouge().compute_score(gts, res)[1]
    )


def cider(candidates: Mapping[str, str], references: Mapping[str, str]) -> TextMetricResult:
    """CIDEr-D per candidate; IDF comes from the given references (COCO toolkit; Sec. 4.3)."""
    from pycocoevalcap.cider.cider import Cider

    return _coco(CIDER, candidates, references, lambda gts, res: Cider().compute_score(gts, res)[1])


def meteor(candidates: Mapping[str, str], references: Mapping[str, str]) -> TextMetricResult:
    """METEOR 1.5 segment scores via the COCO toolkit's bundled jar (visit-bench.txt Sec. 4.3)."""
    if shutil.which("java") is None:
        return unavailable(METEOR, "METEOR 1.5 needs a Java runtime (`java` not found on PATH)")
    from pycocoevalcap.meteor.meteor import Meteor

    def score(gts: dict, res: dict) -> Sequence[float]:
        scorer = Meteor()
        try:
            return scorer.compute_score(gts, res)[1]
        finally:
            # pycocoevalcap stops its java subprocess only in __del__ (safe to run twice): stop
            # it now.
            scorer.__del__()

    return _coco(METEOR, candidates, references, score)


def _hub_cache() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME", str(Path.home() / ".cache" / "huggingface"))
    return Path(home) / "hub"


def bertscore_weights_present(model: str = BERTSCORE_MODEL) -> bool:
    """True when the BERTScore weights are in the local Hugging Face cache (METRICS.md Sec. 2)."""
    snapshots = _hub_cache() / f"models--{model.replace('/', '--')}" / "snapshots"
    return snapshots.is_dir() and any(
        path.name.endswith((".safetensors", ".bin")) for path in snapshots.rglob("*")
    )


def bertscore(
    candidates: Mapping[str, str],
    references: Mapping[str, str],
    *,
    model: str = BERTSCORE_MODEL,
) -> TextMetricResult:
    """BERTScore F1 per candidate, only from local weights; otherwise an explicit unavailable
    result (visit-bench.txt Sec. 4.3). Nothing is downloaded."""
    try:
        import bert_score  # noqa: F401
    except ImportError:
        return unavailable(BERTSCORE, "the bert-score package (and PyTorch) is not installed")
    if not bertscore_weights_present(model):
        return unavailable(
            BERTSCORE,
            f"weights for {model} are not in the local Hugging Face cache ({_hub_cache()})",
        )
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    ids = list(candidates)
    _, _, f1 = bert_score.score(
        [candidates[k] for k in ids], [references[k] for k in ids], model_type=model
    )
    return TextMetricResult(BERTSCORE, {k: float(v) for k, v in zip(ids, f1.tolist(), strict=True)})


def all_text_metrics(
    candidates: Mapping[str, str], references: Mapping[str, str]
) -> dict[str, TextMetricResult]:
    """Every Sec. 4.3 reference-based baseline for the same candidates (visit-bench.txt Fig. 7)."""
    return {
        BLEU4: bleu4(candidates, references),
        ROUGE_L: rouge_l(candidates, references),
        METEOR: meteor(candidates, references),
        CIDER: cider(candidates, references),
        BERTSCORE: bertscore(candidates, references),
    }
