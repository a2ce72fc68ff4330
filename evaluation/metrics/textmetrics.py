"""Reference-based text metrics for the VisIT-Bench agreement baselines (visit-bench.txt Sec. 4.3).

BLEU-4, ROUGE-L, METEOR and CIDEr come from the COCO caption toolkit (pycocoevalcap), on text
tokenized as the toolkit's own evaluation does: Stanford's PTB tokenizer (its bundled CoreNLP jar,
lower-cased, punctuation dropped), so they need a `java` executable; METEOR 1.5's jar ships its own
paraphrase data and runs offline. BERTScore (the bert-score package) runs from a local model folder
(``BLINDSPOT_BERTSCORE_MODEL``, or the weights of its default model in the local Hugging Face
cache); without one the result says why instead of producing a number.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pycocoevalcap.bleu.bleu import Bleu
from pycocoevalcap.cider.cider import Cider
from pycocoevalcap.meteor.meteor import Meteor
from pycocoevalcap.rouge.rouge import Rouge
from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

BLEU4 = "bleu4"
ROUGE_L = "rouge_l"
METEOR = "meteor"
CIDER = "cider"
BERTSCORE = "bertscore"

BERTSCORE_MODEL = "roberta-large"  # bert_score's default for English
BERTSCORE_ENV = "BLINDSPOT_BERTSCORE_MODEL"  # a local model folder (config, weights, tokenizer)

# Characters Java reads as line ends: the tokenizer keeps one caption per line (-preserveLines),
# so one inside a caption would shift every later caption onto the wrong id.
_LINE_BREAKS = re.compile("[\r\n\u2028\u2029\x85\x0b\x0c]")
NO_JAVA = "COCO's PTB tokenizer and METEOR 1.5 need a Java runtime (`java` not found on PATH)"


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


class TokenizerUnavailable(RuntimeError):
    """The PTB tokenizer cannot run here (no Java, or its output does not line up)."""


def tokenize_many(texts: Mapping[str, str]) -> dict[str, str]:
    """PTB-tokenized texts, as pycocoevalcap's evaluation tokenizes captions before scoring
    (``PTBTokenizer``: lower-cased, punctuation dropped; visit-bench.txt Sec. 4.3). One Java call
    for all of them."""
    if not texts:
        return {}
    if shutil.which("java") is None:
        raise TokenizerUnavailable(NO_JAVA)
    captions = {k: [{"caption": _LINE_BREAKS.sub(" ", str(v))}] for k, v in texts.items()}
    try:
        # The toolkit writes its input next to its jar (site-packages) and runs java there.
        tokenized = PTBTokenizer().tokenize(captions)
    except OSError as exc:
        raise TokenizerUnavailable(f"the PTB tokenizer could not run: {exc}") from exc
    if set(tokenized) != set(texts):
        raise TokenizerUnavailable("the PTB tokenizer's output does not line up with its input")
    return {k: tokenized[k][0] for k in texts}


def tokenize(text: str) -> str:
    """One text, PTB-tokenized (``tokenize_many``)."""
    return tokenize_many({"0": text})["0"]


def _prepare(
    candidates: Mapping[str, str], references: Mapping[str, str]
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    if set(candidates) != set(references):
        raise ValueError("candidates and references must have the same ids")
    both = tokenize_many(
        {
            **{f"r{k}": v for k, v in references.items()},
            **{f"c{k}": v for k, v in candidates.items()},
        }
    )
    # The METEOR wire protocol uses "|||" as a separator.
    gts = {k: [both[f"r{k}"].replace("|||", " ")] for k in references}
    res = {k: [both[f"c{k}"].replace("|||", " ")] for k in references}
    return gts, res


def _coco(
    metric: str,
    candidates: Mapping[str, str],
    references: Mapping[str, str],
    score: Callable[[dict, dict], Sequence[float]],
) -> TextMetricResult:
    """Per-candidate scores from a COCO caption toolkit scorer: ``score(gts, res)`` returns one
    score per id, in the order of ``gts``; unavailable (with the reason) without the tokenizer."""
    if not candidates:
        return TextMetricResult(metric)
    try:
        gts, res = _prepare(candidates, references)
    except TokenizerUnavailable as exc:
        return unavailable(metric, str(exc))
    return TextMetricResult(metric, dict(zip(gts, map(float, score(gts, res)), strict=True)))


def bleu4(candidates: Mapping[str, str], references: Mapping[str, str]) -> TextMetricResult:
    """Sentence BLEU-4 of each candidate against its reference (COCO toolkit; Sec. 4.3 baseline)."""

    def score(gts: dict, res: dict) -> Sequence[float]:
        _, per_order = Bleu(4).compute_score(gts, res, verbose=0)
        return per_order[3]

    return _coco(BLEU4, candidates, references, score)


def rouge_l(candidates: Mapping[str, str], references: Mapping[str, str]) -> TextMetricResult:
    """ROUGE-L F-measure (β = 1.2, COCO toolkit) per candidate (visit-bench.txt Sec. 4.3)."""

    return _coco(
        ROUGE_L, candidates, references, lambda gts, res: Rouge().compute_score(gts, res)[1]
    )


def cider(candidates: Mapping[str, str], references: Mapping[str, str]) -> TextMetricResult:
    """CIDEr-D per candidate; IDF comes from the given references (COCO toolkit; Sec. 4.3)."""

    return _coco(CIDER, candidates, references, lambda gts, res: Cider().compute_score(gts, res)[1])


METEOR_IDLE_S = 60.0  # the METEOR process is stopped after this long unused


class MeteorProcess:
    """The METEOR 1.5 jar's process (``-stdio``), shared by this process's calls: starting it
    (a JVM loading METEOR's paraphrase tables) takes ~7 s here, scoring a few captions
    milliseconds, and a leaderboard's or a demo's runs are scored one after another. Each
    segment is scored on its own (``SCORE`` then ``EVAL`` of the stats sent), so sharing the
    process changes no number. One call at a time; stopped after ``METEOR_IDLE_S`` unused, at
    exit, and after any failure (the next call starts a fresh one)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._scorer: Meteor | None = None
        self._timer: threading.Timer | None = None
        self.started = 0  # processes started so far (tests read it)

    def score(self, gts: dict, res: dict) -> Sequence[float]:
        with self._lock:
            self._cancel_timer()
            if self._scorer is None or self._scorer.meteor_p.poll() is not None:
                self._stop()
                self._scorer = Meteor()
                self.started += 1
            try:
                return self._scorer.compute_score(gts, res)[1]
            except BaseException:
                self._stop()
                raise
            finally:
                if self._scorer is not None:
                    self._timer = threading.Timer(METEOR_IDLE_S, self.stop)
                    self._timer.daemon = True
                    self._timer.start()

    def stop(self) -> None:
        with self._lock:
            self._stop()

    @property
    def running(self) -> bool:
        return self._scorer is not None and self._scorer.meteor_p.poll() is None

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _stop(self) -> None:
        self._cancel_timer()
        scorer, self._scorer = self._scorer, None
        if scorer is None:
            return
        process = scorer.meteor_p
        process.stdin.close()
        process.kill()
        process.wait()
        # pycocoevalcap's __del__ takes the scorer's lock, which a failed compute_score leaves
        # held: free it, so that collecting the scorer cannot hang.
        if scorer.lock.locked():
            scorer.lock.release()


METEOR_PROCESS = MeteorProcess()
atexit.register(METEOR_PROCESS.stop)


def meteor(candidates: Mapping[str, str], references: Mapping[str, str]) -> TextMetricResult:
    """METEOR 1.5 segment scores via the COCO toolkit's bundled jar (visit-bench.txt Sec. 4.3)."""
    if shutil.which("java") is None:
        return unavailable(METEOR, "METEOR 1.5 needs a Java runtime (`java` not found on PATH)")
    return _coco(METEOR, candidates, references, METEOR_PROCESS.score)


def _hub_cache() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME", str(Path.home() / ".cache" / "huggingface"))
    return Path(home) / "hub"


def bertscore_weights_present(model: str = BERTSCORE_MODEL) -> bool:
    """True when a model's weights are in the local Hugging Face cache (METRICS.md Sec. 2)."""
    snapshots = _hub_cache() / f"models--{model.replace('/', '--')}" / "snapshots"
    return snapshots.is_dir() and any(
        path.name.endswith((".safetensors", ".bin")) for path in snapshots.rglob("*")
    )


def bertscore_model() -> tuple[str, int | None] | None:
    """(model, layer) BERTScore runs with: the local folder in ``BLINDSPOT_BERTSCORE_MODEL``
    (its last layer unless ``BLINDSPOT_BERTSCORE_LAYERS`` says), else the default model when its
    weights are in the local cache (bert_score picks its layer); None when neither."""
    folder = os.environ.get(BERTSCORE_ENV, "").strip()
    if folder:
        layers = os.environ.get("BLINDSPOT_BERTSCORE_LAYERS", "").strip()
        return folder, int(layers) if layers else None
    if bertscore_weights_present(BERTSCORE_MODEL):
        return BERTSCORE_MODEL, None
    return None


def _last_layer(folder: str) -> int:
    """The number of hidden layers a local model folder's config.json declares."""

    config = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
    return int(config.get("num_hidden_layers") or config["n_layers"])


def bertscore(
    candidates: Mapping[str, str],
    references: Mapping[str, str],
    *,
    model: str | None = None,
    num_layers: int | None = None,
) -> TextMetricResult:
    """BERTScore F1 per candidate with bert_score (visit-bench.txt Sec. 4.3 baseline), only from
    a local model (``bertscore_model``); otherwise an explicit unavailable result. Nothing is
    downloaded."""
    if model is None:
        configured = bertscore_model()
        if configured is None:
            return unavailable(
                BERTSCORE,
                f"no local BERTScore model: set {BERTSCORE_ENV} to a model folder, or put the "
                f"{BERTSCORE_MODEL} weights in the local Hugging Face cache ({_hub_cache()})",
            )
        model, num_layers = configured
    if set(candidates) != set(references):
        raise ValueError("candidates and references must have the same ids")
    if not candidates:
        return TextMetricResult(BERTSCORE)
    local = Path(model).is_dir()
    if local and not (Path(model) / "config.json").is_file():
        return unavailable(BERTSCORE, f"{model} holds no config.json: not a model folder")
    if local and num_layers is None:
        num_layers = _last_layer(model)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # Imported here, not with the module: bert_score pulls in transformers, seconds of start-up
    # for every process when only this metric needs it.
    import bert_score

    ids = list(candidates)
    _, _, f1 = bert_score.score(
        [candidates[k] for k in ids],
        [references[k] for k in ids],
        model_type=model,
        num_layers=num_layers,
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
