"""Run models and LLM judges on a benchmark version through the LLM gateway, as resumable jobs.

- ``run_model_start`` / ``run_model``: a VLM answers every kept item of a version with its
  family's official prompt (``evaluation.prompts``); every call is a gateway ``Generation`` and
  each item's outputs become one ``Prediction`` (raw outputs, parsed answers, and under
  ``scores["provenance"]`` the Generation id of every output and the error of every failed
  call). Failed or malformed calls are recorded as failed outputs (parsed as unparseable, so
  they count as wrong, METRICS.md), never as a crash. A re-run of the same run fills only what
  is missing or failed and reuses every OK generation of earlier attempts. Metrics are then
  computed with ``services.metrics_compute``.
- ``score_model_start``: NaturalBench-Retrieval pairs scored by a CLIP-style ``Scorer``
  (Winoground scores, App. B).
- ``judge_start`` / ``judge_run``: the VisIT-Bench judge (App. F) on (instance, A, B) pairs in
  BOTH orders, with the one extraction call when a verdict is unclear, fed to
  ``services.judgment_record``; ``judge_pairs_sample`` draws the pairs reproducibly.

Network calls run in a bounded thread pool (``provider.concurrency``); the job's own thread
prepares calls (database, images) and records results, as the gateway's batch job does. The
batch job itself does not fit: it keys generations per batch, not per prediction, and a
judgment needs a follow-up call that depends on the first one's answer.
"""

from __future__ import annotations

import contextlib
import io
import math
import random
import re
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlparse

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotator.platform.errors import Conflict, Invalid
from annotator.platform.jobs import job_enqueue, job_progress
from annotator.platform.models import Job
from curation.gateway import calls as gateway_calls
from curation.gateway.rendering import TemplateError
from curation.gateway.service import Plan, generation_prepare, generation_record
from curation.models import Generation, Image, LLMProvider, PromptTemplate, Scorer

from . import compute, importers, prompts, services
from .metrics import naturalbench as nb
from .metrics import visit, vlind
from .models import (
    BenchmarkItem,
    BenchmarkVersion,
    EvaluatedModel,
    Family,
    JudgmentSet,
    ModelRun,
    PairJudgment,
    Prediction,
)

RUN_JOB = "evaluation.run_model"
JUDGE_JOB = "evaluation.judge"
RUN_PURPOSE = "evaluation.run"
JUDGE_PURPOSE = "evaluation.judge"
EXTRACTION_PURPOSE = "evaluation.judge_extraction"
DEFAULT_JUDGE_INSTANCES = 150
MAX_PAIRS = 20_000
REFERENCE_PLAYER = importers.OFFICIAL_REFERENCE_PLAYER
RUNNER_FAMILIES = (Family.NATURALBENCH, Family.VHEXPANSION, Family.VLIND, Family.VISIT)
_SHA256 = re.compile(r"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])")


# --- Images of items -----------------------------------------------------------------------------


class ImageMissing(LookupError):
    """An item names an image this server cannot find (the call is recorded as failed)."""


def image_root() -> Path | None:
    root = getattr(settings, "BLINDSPOT_EVAL_IMAGE_ROOT", "") or ""
    return Path(root) if root else None


class ImageResolver:
    """Benchmark items name images by string. In order: a curation Image whose SHA-256 the
    string contains (exports write ``images/<sha256>.<ext>``); an Image whose ``source`` is the
    string; a file under ``BLINDSPOT_EVAL_IMAGE_ROOT`` (the path, or a URL's path or its file
    name), ingested so the generation can point at it. URLs are never fetched."""

    def __init__(self) -> None:
        self._cache: dict[str, Image | ImageMissing] = {}

    def prefetch(self, refs: Iterable[str]) -> None:
        """Look up many names in two queries (by hash, by source) before the calls start."""
        wanted = {r for r in refs if r and r.strip() and r not in self._cache}
        by_sha: dict[str, list[str]] = {}
        for ref in wanted:
            match = _SHA256.search(ref.strip().lower())
            if match:
                by_sha.setdefault(match.group(0), []).append(ref)
        for image in Image.objects.filter(sha256__in=by_sha):
            for ref in by_sha[image.sha256]:
                self._cache[ref] = image
        by_source: dict[str, list[str]] = {}
        for ref in wanted - set(self._cache):
            by_source.setdefault(ref.strip()[:500], []).append(ref)
        # Highest id first, so the oldest image with a source is the one kept.
        for image in Image.objects.filter(source__in=by_source).order_by("-id"):
            for ref in by_source[image.source]:
                self._cache[ref] = image

    def __call__(self, ref: str) -> Image:
        if ref not in self._cache:
            try:
                self._cache[ref] = self._resolve(ref)
            except ImageMissing as exc:
                self._cache[ref] = exc
        found = self._cache[ref]
        if isinstance(found, ImageMissing):
            raise found
        return found

    def _resolve(self, ref: str) -> Image:
        ref = (ref or "").strip()
        if not ref:
            raise ImageMissing("The item names no image.")
        match = _SHA256.search(ref.lower())
        if match:
            image = Image.objects.filter(sha256=match.group(0)).first()
            if image is not None:
                return image
        image = Image.objects.filter(source=ref[:500]).order_by("id").first()
        if image is not None:
            return image
        path = self._local_file(ref)
        if path is None:
            raise ImageMissing(
                f"Image {ref!r} is neither an imported image nor a file under "
                "BLINDSPOT_EVAL_IMAGE_ROOT; import the images or set that folder."
            )
        from curation.assets import ImageRejected, image_ingest, max_image_bytes

        if path.stat().st_size > max_image_bytes():
            raise ImageMissing(f"Image {ref!r} is larger than the upload limit.")
        try:
            image, _ = image_ingest(data=path.read_bytes(), name=path.name, source=ref[:500])
        except ImageRejected as exc:
            raise ImageMissing(f"Image {ref!r} was rejected: {exc.reason}") from exc
        return image

    @staticmethod
    def _local_file(ref: str) -> Path | None:
        root = image_root()
        if root is None:
            return None
        parsed = urlparse(ref)
        relative = parsed.path if parsed.scheme in ("http", "https") else ref
        candidates = [relative.lstrip("/"), PurePosixPath(relative).name]
        base = root.resolve()
        for candidate in candidates:
            if not candidate:
                continue
            path = (base / candidate).resolve()
            # A name like "../../etc/passwd" must not leave the folder.
            if path.is_relative_to(base) and path.is_file():
                return path
        return None


def _open_pil(image: Image):
    from PIL import Image as PILImage

    with image.file.storage.open(image.file.name, "rb") as handle:
        pil = PILImage.open(io.BytesIO(handle.read()))
        pil.load()
    return pil.convert("RGB")


# --- What each family asks (METRICS.md; evaluation.prompts) ---------------------------------------


@dataclass(frozen=True)
class CallSpec:
    key: str
    template: str
    variables: dict
    images: tuple[str, ...] = ()
    logprobs: bool = False


@dataclass
class Outcome:
    """One call's result for an item: the raw text, or None when the call failed."""

    text: str | None
    generation_id: int
    error: str = ""
    logprobs: Any = None


def _nb_calls(item: BenchmarkItem, options: dict) -> list[CallSpec]:
    data = item.data
    template = prompts.NB_TEMPLATES[data["question_type"]]
    separator = " " if options.get("space_before_suffix") else ""
    logprobs = bool(options.get("logprobs"))
    specs = []
    for key in nb.SAMPLE_KEYS:  # q0_i0, q0_i1, q1_i0, q1_i1
        question, image = data[f"question_{key[1]}"], data[f"image_{key[4]}"]
        variables = {"question": question, "separator": separator}
        specs.append(CallSpec(key, template, variables, (image,), logprobs))
    if options.get("post_hoc"):
        # P(a | q) from the question alone for post-hoc debiasing (Sec. 5, Eq. 5).
        for q in (0, 1):
            variables = {"question": data[f"question_{q}"], "separator": separator}
            specs.append(CallSpec(f"q{q}_blind", template, variables, (), True))
    return specs


def _vh_calls(item: BenchmarkItem, options: dict) -> list[CallSpec]:
    return [
        CallSpec(
            "answer",
            prompts.VH_ANSWER,
            {"question": item.data["question"]},
            (item.data.get("image", ""),),
        )
    ]


def vlind_image_paths(data: dict) -> tuple[str, str, dict[str, str]]:
    """(factual image, best counterfactual image, good image id → path) in the official layout
    ``{counterfactual|factual}/{concept}/{context_id}_{context}/{id}.jpg`` (gpt4o_eval.py)."""
    concept, context_id = data.get("concept", ""), data.get("context_id", "")
    counterfactual = f"counterfactual/{concept}/{context_id}_{data.get('context', '')}"
    factual = f"factual/{concept}/{context_id}_{data.get('factual_context', '')}/0.jpg"
    good = {g: f"{counterfactual}/{g}.jpg" for g in data.get("good_images", [])}
    return factual, f"{counterfactual}/{data.get('best_img_id', '')}.jpg", good


def _vlind_calls(item: BenchmarkItem, options: dict) -> list[CallSpec]:
    """The official tests: a (CK, factual image), b (VP), c (CB, best counterfactual image)
    and d (LP, every good image); the first statement of each should be True (Sec. 3)."""
    data = item.data
    factual, best, good = vlind_image_paths(data)
    true_s, false_s = data["true_statement"], data["false_statement"]
    ck, vp, cb, lp = (prompts.VLIND_TEMPLATES[k] for k in ("ck", "vp", "cb", "lp"))
    specs = [
        CallSpec("a1_image", ck, {"statement": false_s}, (factual,)),
        CallSpec("a2_image", ck, {"statement": true_s}, (factual,)),
        CallSpec("b1", vp, {"statement": vlind.vp_statement(data["existent_noun"])}, (best,)),
        CallSpec("b2", vp, {"statement": vlind.vp_statement(data["non-existent_noun"])}, (best,)),
        CallSpec("c1_image", cb, {"context": data["context"], "statement": true_s}, (best,)),
        CallSpec("c2_image", cb, {"context": data["context"], "statement": false_s}, (best,)),
    ]
    for image_id, path in good.items():
        specs.append(CallSpec(f"d1:{image_id}", lp, {"statement": true_s}, (path,)))
        specs.append(CallSpec(f"d2:{image_id}", lp, {"statement": false_s}, (path,)))
    return specs


def _visit_calls(item: BenchmarkItem, options: dict) -> list[CallSpec]:
    return [
        CallSpec(
            "response",
            prompts.VISIT_RESPONSE,
            {"instruction": item.data["instruction"]},
            (item.data.get("image", ""),),
        )
    ]


ITEM_CALLS: dict[str, Callable[[BenchmarkItem, dict], list[CallSpec]]] = {
    Family.NATURALBENCH: _nb_calls,
    Family.VHEXPANSION: _vh_calls,
    Family.VLIND: _vlind_calls,
    Family.VISIT: _visit_calls,
}

FAMILY_TEMPLATES = {
    Family.NATURALBENCH: list(prompts.NB_TEMPLATES.values()),
    Family.VHEXPANSION: [prompts.VH_ANSWER],
    Family.VLIND: list(prompts.VLIND_TEMPLATES.values()),
    Family.VISIT: [prompts.VISIT_RESPONSE],
}


def answer_likelihoods(logprobs: Any, question_type: str) -> tuple[float, float] | None:
    """(P(a0), P(a1)) from the first answer token's top log-probabilities: the summed
    probability of the tokens that read "yes"/"no" ("A"/"B"), case and spacing ignored
    (the likelihoods of NaturalBench Sec. 5, App. D, as far as a chat endpoint exposes them)."""
    content = (logprobs or {}).get("content") or []
    if not content:
        return None
    first = content[0]
    words = ("yes", "no") if question_type == nb.YES_NO else ("a", "b")
    seen: dict[str, float] = {}
    for entry in [first, *(first.get("top_logprobs") or [])]:
        token = str(entry.get("token", ""))
        if token not in seen and isinstance(entry.get("logprob"), int | float):
            seen[token] = float(entry["logprob"])
    totals = [0.0, 0.0]
    for token, logprob in seen.items():
        word = token.strip().strip(".,:;!?\"'()").lower()
        if word in words:
            totals[words.index(word)] += math.exp(logprob)
    return totals[0], totals[1]


def _text(outcome: Outcome | None) -> str:
    return outcome.text if outcome is not None and outcome.text is not None else ""


def item_prediction(
    family: str, item: BenchmarkItem, outcomes: dict[str, Outcome]
) -> tuple[Any, Any, dict]:
    """(raw_output, parsed_answer, scores) of one item from its calls' outcomes."""
    provenance = {
        "generations": {k: o.generation_id for k, o in sorted(outcomes.items())},
        "failed": {k: o.error for k, o in sorted(outcomes.items()) if o.text is None},
    }
    scores: dict[str, Any] = {"provenance": provenance}
    if family == Family.NATURALBENCH:
        raw = {k: _text(outcomes.get(k)) for k in nb.SAMPLE_KEYS}
        for key in ("q0_blind", "q1_blind"):
            if key in outcomes:
                raw[key] = _text(outcomes[key])
        parsed = compute.parse_naturalbench(
            compute.ItemData(item.item_id, item.data, item.kept), raw
        )
        qtype = item.data["question_type"]

        def likelihoods(key: str) -> tuple[float, float] | None:
            outcome = outcomes.get(key)
            if outcome is None or outcome.text is None:
                return None
            return answer_likelihoods(outcome.logprobs, qtype)

        pairs = [likelihoods(k) for k in nb.SAMPLE_KEYS]
        if all(p is not None for p in pairs):
            scores["p_a0"] = [p[0] for p in pairs]
            scores["p_a1"] = [p[1] for p in pairs]
            blind = [likelihoods(k) for k in ("q0_blind", "q1_blind")]
            # Eq. 5 divides by P(a | q): only usable when both are positive.
            if all(b is not None and b[0] > 0 and b[1] > 0 for b in blind):
                scores["p_a0_blind"] = [b[0] for b in blind]
                scores["p_a1_blind"] = [b[1] for b in blind]
        return raw, parsed, scores
    if family == Family.VHEXPANSION:
        raw = _text(outcomes.get("answer"))
        answer = nb.parse_answer(raw, nb.YES_NO)
        return raw, None if answer is None else ("yes" if answer == nb.A0 else "no"), scores
    if family == Family.VLIND:
        raw_map: dict[str, Any] = {"d1": {}, "d2": {}}
        parsed_map: dict[str, Any] = {"d1": {}, "d2": {}}
        for key, outcome in outcomes.items():
            text = _text(outcome)
            answer = vlind.parse_true_false(text)
            if ":" in key:
                group, image_id = key.split(":", 1)
                raw_map[group][image_id], parsed_map[group][image_id] = text, answer
            else:
                raw_map[key], parsed_map[key] = text, answer
        return raw_map, parsed_map, scores
    return _text(outcomes.get("response")), None, scores


# --- The call pool --------------------------------------------------------------------------------


@dataclass
class _Call:
    tag: Any  # who is waiting for the answer (item, or pair and order)
    spec: CallSpec
    item_key: str
    purpose: str


@dataclass
class _Pool:
    """Prepare and record in this thread, call the endpoint in at most ``workers`` threads."""

    provider: LLMProvider
    templates: dict[str, PromptTemplate]
    job_id: int | None
    project: Any
    created_by: Any
    seed: int | None
    blind: bool
    resolver: ImageResolver = field(default_factory=ImageResolver)
    generations: int = 0

    def _plan(self, call: _Call) -> Plan:
        images, missing = [], []
        if not self.blind:
            for ref in call.spec.images:
                try:
                    images.append(self.resolver(ref))
                except ImageMissing as exc:
                    missing.append(str(exc))
        template = self.templates[call.spec.template]
        try:
            plan = generation_prepare(
                template=template,
                variables=call.spec.variables,
                project=self.project,
                provider=self.provider,
                purpose=call.purpose,
                seed=self.seed,
                images=images,
                logprobs=call.spec.logprobs,
                job=self.job_id,
                created_by=self.created_by,
                item_key=call.item_key[:200],
            )
        except TemplateError as exc:
            raise Invalid(f"Template {template.name!r} v{template.version}: {exc}") from exc
        if missing:
            plan.request.blocked = plan.request.blocked or " ".join(missing)
            plan.params["images_missing"] = list(call.spec.images)
        if prompts.has_turns(template.text):
            _apply_turns(plan, template)
        return plan

    def run(self, calls: Iterable[_Call], on_result: Callable[[_Call, Generation], list]) -> None:
        """``on_result`` may return follow-up calls (the judge's extraction call)."""
        queue = iter(calls)
        follow_ups: list[_Call] = []
        workers = max(1, int(self.provider.concurrency or 1))
        in_flight: dict[Future, tuple[_Call, Plan]] = {}

        def submit_next(pool: ThreadPoolExecutor) -> bool:
            call = follow_ups.pop(0) if follow_ups else next(queue, None)
            if call is None:
                return False
            plan = self._plan(call)
            in_flight[pool.submit(gateway_calls.execute, plan.request)] = (call, plan)
            return True

        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="eval-run") as pool:
            while len(in_flight) < workers and submit_next(pool):
                pass
            while in_flight:
                finished, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                # One commit for the answers that arrived together.
                with transaction.atomic():
                    for future in finished:
                        call, plan = in_flight.pop(future)
                        generation = generation_record(plan, future.result())
                        self.generations += 1
                        follow_ups.extend(on_result(call, generation) or [])
                while len(in_flight) < workers and submit_next(pool):
                    pass


def _apply_turns(plan: Plan, template: PromptTemplate) -> None:
    """Send the template's conversation as separate chat turns (App. F: system, user,
    assistant, user); images, if any, ride in the last user turn."""
    turns = prompts.render_turns(template.text, plan.variables, template=template.name)

    def build(messages: list[dict]) -> list[dict]:
        head = [m for m in messages if m["role"] == "system"]
        user = next(m for m in messages if m["role"] == "user")
        images = (
            [p for p in user["content"] if p.get("type") == "image_url"]
            if isinstance(user["content"], list)
            else []
        )
        out = head + [{"role": t.role, "content": t.text} for t in turns]
        if images:
            out[-1] = {"role": "user", "content": [{"type": "text", "text": turns[-1].text}]}
            out[-1]["content"] += images
        return out

    plan.request.messages = build(plan.request.messages)
    plan.stored_messages = build(plan.stored_messages)


def _templates(names: Sequence[str]) -> dict[str, PromptTemplate]:
    """The current version of each template, pinned for the whole job (seeded if new)."""
    prompts.ensure_templates(names)
    from curation.gateway import template_current

    return {name: template_current(name) for name in names}


def _template_record(templates: dict[str, PromptTemplate]) -> dict:
    return {n: {"version": t.version, "sha256": t.sha256} for n, t in sorted(templates.items())}


def _progress(job_id: int | None, done: int, total: int | None = None, message: str = ""):
    if job_id:
        job_progress(job_id=job_id, done=done, total=total, message=message)


class _Progress:
    """Per-item progress, written at most every ``every`` seconds (one UPDATE each)."""

    def __init__(self, job_id: int | None, every: float = 0.5) -> None:
        self.job_id, self.every, self.last = job_id, every, 0.0

    def __call__(self, done: int) -> None:
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last = now
            _progress(self.job_id, done)


# --- Model runs -----------------------------------------------------------------------------------


def provider_is_blind(provider: LLMProvider) -> bool:
    return provider.kind == LLMProvider.Kind.OFFLINE


def provider_label(provider: LLMProvider, *, judge: bool = False) -> str:
    """How pages name a provider in a "run a model" (or "run the judge") choice."""
    if provider_is_blind(provider):
        return prompts.OFFLINE_JUDGE_LABEL if judge else prompts.BLIND_BASELINE_LABEL
    vision = "" if judge else (" · vision" if provider.supports_vision else " · text only")
    return f"{provider.name} · {provider.model or 'default model'}{vision}"


def _default_model_name(provider: LLMProvider) -> str:
    if provider_is_blind(provider):
        return prompts.BLIND_BASELINE_LABEL
    return (provider.model or provider.name)[:200]


def _kept_items(version: BenchmarkVersion, limit: int | None):
    items = version.items.filter(kept=True).order_by("position")
    return items[:limit] if limit else items


def _check_limit(limit: int | None) -> int | None:
    if limit in (None, ""):
        return None
    try:
        limit = int(limit)
    except (TypeError, ValueError) as exc:
        raise Invalid("The item limit must be a whole number.") from exc
    if limit < 1:
        raise Invalid("The item limit must be at least 1 (leave it empty for every item).")
    return limit


def _run_options(family: str, options: dict | None) -> dict:
    options = dict(options or {})
    unknown = set(options) - {"space_before_suffix", "logprobs", "post_hoc"}
    if unknown:
        raise Invalid(f"Unknown run options: {', '.join(sorted(unknown))}.")
    if family != Family.NATURALBENCH:
        if any(options.values()):
            raise Invalid("These options (suffix spacing, likelihoods) belong to NaturalBench.")
        return {}
    clean = {
        k: bool(options.get(k, False)) for k in ("space_before_suffix", "logprobs", "post_hoc")
    }
    if clean["post_hoc"] and not clean["logprobs"]:
        raise Invalid("Post-hoc debiasing needs answer likelihoods: tick 'log-probabilities'.")
    return clean


def _runner_run(
    *,
    version: BenchmarkVersion,
    model_name: str,
    label: str,
    settings_: dict,
    seed: int,
    created_by,
    provider: LLMProvider | None = None,
) -> ModelRun:
    """The run to fill: a new one, or the same model and label again (resume)."""
    label = (label or "").strip()[:120]
    model_name = services._clean_name(model_name, "model name", 200)
    model, _ = EvaluatedModel.objects.get_or_create(
        name=model_name,
        defaults={
            "provider": (provider.name if provider else settings_.get("scorer", ""))[:100],
            "endpoint": (provider.base_url if provider else "")[:500],
            "parameters": {
                k: settings_[k]
                for k in ("temperature", "max_tokens", "scorer_signature")
                if k in settings_
            },
        },
    )
    run = (
        ModelRun.objects.select_for_update(of=("self",))
        .select_related("job")
        .filter(model=model, version=version, label=label)
        .first()
    )
    if run is None:
        return ModelRun.objects.create(
            model=model,
            version=version,
            label=label,
            source=ModelRun.Source.RUNNER,
            prompt_settings=settings_,
            status=ModelRun.Status.PENDING,
            seed=seed,
            created_by=created_by,
        )
    name = f"{model_name}{f' ({label})' if label else ''}"
    if run.source != ModelRun.Source.RUNNER:
        raise Conflict(f"{name} already has an imported run on this version; give a run label.")
    if run.job is not None and not run.job.is_finished:
        raise Conflict(f"{name} is already running on this version (job {run.job_id}).")
    keys = ("runner", "provider_id", "scorer_id", "options")
    before = {k: (run.prompt_settings or {}).get(k) for k in keys}
    if before != {k: settings_.get(k) for k in keys} or run.seed != seed:
        raise Conflict(
            f"{name} already ran on this version with other settings; give the new run a label "
            "(re-running with the same settings fills only what is missing)."
        )
    return run


def _job(*, kind: str, params: dict, created_by, project, total: int, enqueue: bool) -> Job:
    """A Job row sent to Celery after commit, or (``enqueue=False``, the CLI) left for the
    caller to run in-process with the task's ``apply``."""
    if enqueue:
        return job_enqueue(
            kind=kind, params=params, created_by=created_by, project=project, total=total
        )
    return Job.objects.create(
        kind=kind, params=params, created_by=created_by, project=project, total=total
    )


def _enqueue_run(
    run: ModelRun, *, created_by, params: dict, total: int, enqueue: bool = True
) -> Job:
    job = _job(
        kind=RUN_JOB,
        params={"run_id": run.pk, **params},
        created_by=created_by,
        project=run.version.benchmark.project,
        total=total,
        enqueue=enqueue,
    )
    ModelRun.objects.filter(pk=run.pk).update(job=job, status=ModelRun.Status.PENDING)
    return job


def run_model_start(
    *,
    version: BenchmarkVersion,
    provider: LLMProvider,
    created_by,
    limit: int | None = None,
    label: str = "",
    model_name: str = "",
    seed: int = 0,
    options: dict | None = None,
    rounds: int = 1000,
    text_metrics: bool = True,
    enqueue: bool = True,
) -> Job:
    """Check the request now (clear errors, nothing written), then answer the version's kept
    items with ``provider`` in a job; the same model and label again resumes the run."""
    family = version.benchmark.family
    if family == Family.NATURALBENCH_RETRIEVAL:
        raise Invalid("NaturalBench-Retrieval is scored by a CLIP-style scorer: choose a scorer.")
    if family not in RUNNER_FAMILIES:
        raise Invalid(f"No runner for the {family!r} family.")
    limit = _check_limit(limit)
    clean = _run_options(family, options)
    if not _kept_items(version, None).exists():
        raise Invalid("This version has no items that count; there is nothing to answer.")
    blind = provider_is_blind(provider)
    if not blind and not provider.supports_vision:
        raise Invalid(
            f"Provider {provider.name!r} is not marked as accepting images; a model run sends "
            "each item's images. Tick 'supports vision' on its page or choose another provider."
        )
    settings_ = {
        "runner": "vlm",
        "provider_id": provider.pk,
        "provider": provider.name,
        "provider_kind": provider.kind,
        "endpoint_model": provider.model,
        "base_url": provider.base_url,
        "temperature": provider.temperature,
        "max_tokens": provider.max_tokens,
        "blind_baseline": blind,
        "images": "not sent: offline blind baseline" if blind else "data URLs",
        "options": clean,
    }
    total = _kept_items(version, limit).count() + 1
    params = {"limit": limit, "rounds": int(rounds), "text_metrics": bool(text_metrics)}
    with transaction.atomic():
        run = _runner_run(
            version=version,
            model_name=model_name or _default_model_name(provider),
            label=label,
            settings_=settings_,
            seed=int(seed or 0),
            created_by=created_by,
            provider=provider,
        )
        return _enqueue_run(run, created_by=created_by, params=params, total=total, enqueue=enqueue)


def _reusable(run: ModelRun) -> dict[tuple[int, str], Generation]:
    """OK generations of earlier attempts of this run, by (item pk, call key)."""
    prefix = f"evalrun{run.pk}|"
    found: dict[tuple[int, str], Generation] = {}
    for generation in Generation.objects.filter(
        purpose=RUN_PURPOSE, item_key__startswith=prefix, status=Generation.Status.OK
    ).order_by("id"):
        _, item_pk, key = generation.item_key.split("|", 2)
        found[(int(item_pk), key)] = generation
    return found


def _failed_keys(scores: Any) -> dict:
    provenance = scores.get("provenance") if isinstance(scores, dict) else None
    return (provenance or {}).get("failed") or {}


def _outcome(generation: Generation) -> Outcome:
    if generation.status == Generation.Status.OK:
        return Outcome(generation.raw_response, generation.pk, logprobs=generation.logprobs)
    return Outcome(None, generation.pk, error=generation.error or "the call failed")


@contextlib.contextmanager
def _marks_failed(model, pk: int, running: str, failed: str):
    """A crash (template error, lost scorer, database) leaves the row failed, not running."""
    try:
        yield
    except Exception:
        model.objects.filter(pk=pk, status=running).update(status=failed)
        raise


def run_model(
    *,
    run_id: int,
    job_id: int | None = None,
    limit: int | None = None,
    rounds: int = 1000,
    text_metrics: bool = True,
    compute_metrics: bool = True,
) -> dict:
    """The body of a run job (also the CLI's): answer what is missing, then compute metrics."""
    with _marks_failed(ModelRun, run_id, ModelRun.Status.RUNNING, ModelRun.Status.FAILED):
        return _run_model(
            run_id=run_id,
            job_id=job_id,
            limit=limit,
            rounds=rounds,
            text_metrics=text_metrics,
            compute_metrics=compute_metrics,
        )


def _run_model(
    *,
    run_id: int,
    job_id: int | None,
    limit: int | None,
    rounds: int,
    text_metrics: bool,
    compute_metrics: bool,
) -> dict:
    run = ModelRun.objects.select_related("version__benchmark", "model").get(pk=run_id)
    settings_ = run.prompt_settings or {}
    if settings_.get("runner") == "scorer":
        return _score_model(run, job_id=job_id, limit=limit, rounds=rounds)
    family = run.version.benchmark.family
    provider = LLMProvider.objects.filter(pk=settings_.get("provider_id")).first()
    if provider is None:
        raise Invalid("The provider of this run was deleted; start a new run with another one.")
    options = settings_.get("options") or {}
    templates = _templates(FAMILY_TEMPLATES[family])
    ModelRun.objects.filter(pk=run.pk).update(
        status=ModelRun.Status.RUNNING,
        started_at=run.started_at or timezone.now(),
        finished_at=None,
        prompt_settings={**settings_, "templates": _template_record(templates)},
    )
    items = list(_kept_items(run.version, limit))
    complete = {
        item_pk
        for item_pk, scores in run.predictions.values_list("item_id", "scores")
        if not _failed_keys(scores)
    }
    pending = [item for item in items if item.pk not in complete]
    reuse = _reusable(run)
    total = len(pending) + 1
    _progress(job_id, 0, total, f"{len(pending)} of {len(items)} items to answer")

    outcomes: dict[int, dict[str, Outcome]] = {}
    waiting: dict[int, int] = {}
    counts = {"items": 0, "calls": 0, "failed_calls": 0, "reused": 0}
    by_pk = {item.pk: item for item in pending}
    calls: list[_Call] = []
    for item in pending:
        outcomes[item.pk] = {}
        specs = ITEM_CALLS[family](item, options)
        for spec in specs:
            previous = reuse.get((item.pk, spec.key))
            if previous is not None:
                outcomes[item.pk][spec.key] = _outcome(previous)
                counts["reused"] += 1
            else:
                calls.append(
                    _Call(item.pk, spec, f"evalrun{run.pk}|{item.pk}|{spec.key}", RUN_PURPOSE)
                )
        waiting[item.pk] = len(specs) - len(outcomes[item.pk])

    existing = dict(run.predictions.values_list("item_id", "pk"))
    progress = _Progress(job_id)

    def store(item_pk: int) -> None:
        item = by_pk[item_pk]
        raw, parsed, scores = item_prediction(family, item, outcomes.pop(item_pk))
        fields = {"raw_output": raw, "parsed_answer": parsed, "scores": scores}
        if item_pk in existing:
            Prediction.objects.filter(pk=existing[item_pk]).update(**fields)
        else:
            Prediction.objects.create(run=run, item=item, **fields)
        counts["items"] += 1
        progress(counts["items"])

    for item_pk, left in list(waiting.items()):
        if left == 0:
            store(item_pk)

    def on_result(call: _Call, generation: Generation) -> list:
        outcome = _outcome(generation)
        outcomes[call.tag][call.spec.key] = outcome
        counts["calls"] += 1
        counts["failed_calls"] += outcome.text is None
        waiting[call.tag] -= 1
        if waiting[call.tag] == 0:
            store(call.tag)
        return []

    pool = _Pool(
        provider=provider,
        templates=templates,
        job_id=job_id,
        project=run.version.benchmark.project,
        created_by=run.created_by,
        seed=run.seed,
        blind=provider_is_blind(provider),
    )
    if not pool.blind:
        pool.resolver.prefetch(ref for call in calls for ref in call.spec.images)
    pool.run(calls, on_result)
    return _finish_run(
        run,
        counts,
        job_id=job_id,
        total=total,
        rounds=rounds,
        text_metrics=text_metrics,
        compute_metrics=compute_metrics,
    )


def _finish_run(
    run: ModelRun,
    counts: dict,
    *,
    job_id: int | None,
    total: int,
    rounds: int,
    text_metrics: bool,
    compute_metrics: bool,
) -> dict:
    predictions = list(run.predictions.values_list("scores", flat=True))
    failures = [_failed_keys(s) for s in predictions]
    failed_items = sum(1 for f in failures if f)
    # A run fails only when no call anywhere got an answer (no key, endpoint down, no images).
    ok_anywhere = any(
        len(((s or {}).get("provenance") or {}).get("generations") or {}) > len(f)
        for s, f in zip(predictions, failures, strict=True)
    )
    settings_ = ModelRun.objects.get(pk=run.pk).prompt_settings or {}
    settings_.update(failed_items=failed_items, last_attempt=counts)
    status = ModelRun.Status.SUCCEEDED if ok_anywhere else ModelRun.Status.FAILED
    ModelRun.objects.filter(pk=run.pk).update(
        status=status,
        finished_at=timezone.now(),
        prediction_count=len(predictions),
        prompt_settings=settings_,
    )
    result = {"run_id": run.pk, **counts, "failed_items": failed_items}
    if status == ModelRun.Status.FAILED:
        first = next((e for f in failures for e in f.values()), "")
        raise Invalid(f"Every call failed; nothing was answered. First error: {first}")
    message = f"{counts['items']} items answered ({counts['failed_calls']} failed calls)"
    if compute_metrics:
        _progress(job_id, total - 1, message=message + "; computing metrics")
        run.refresh_from_db()
        result["metrics"] = services.metrics_compute(
            run=run, rounds=rounds, text_metrics=text_metrics
        )
    _progress(
        job_id,
        total,
        message=message
        + (
            f"; {failed_items} items with failures — run again to retry them"
            if failed_items
            else ""
        ),
    )
    return result


# --- Retrieval runs with a scorer (NaturalBench-Retrieval, App. B) --------------------------------


def score_model_start(
    *,
    version: BenchmarkVersion,
    scorer: Scorer,
    created_by,
    limit: int | None = None,
    label: str = "",
    model_name: str = "",
    rounds: int = 1000,
    enqueue: bool = True,
) -> Job:
    """Score every (image, caption) combination of the version's pairs with ``scorer`` in a
    job; Winoground text, image and group scores follow (naturalbench.txt App. B)."""
    if version.benchmark.family != Family.NATURALBENCH_RETRIEVAL:
        raise Invalid("A scorer run belongs to NaturalBench-Retrieval versions.")
    limit = _check_limit(limit)
    if not _kept_items(version, None).exists():
        raise Invalid("This version has no items that count; there is nothing to score.")
    from curation.scorers import scorer_signature

    settings_ = {
        "runner": "scorer",
        "scorer_id": scorer.pk,
        "scorer": scorer.label,
        "scorer_signature": scorer_signature(scorer),
        "random_weights": bool(scorer.random_weights),
        "options": {},
    }
    total = _kept_items(version, limit).count() + 1
    with transaction.atomic():
        run = _runner_run(
            version=version,
            model_name=model_name or f"{scorer.label} ({scorer.model_name})",
            label=label,
            settings_=settings_,
            seed=0,
            created_by=created_by,
        )
        params = {"limit": limit, "rounds": int(rounds)}
        return _enqueue_run(run, created_by=created_by, params=params, total=total, enqueue=enqueue)


SCORE_BATCH = 16


def _score_model(run: ModelRun, *, job_id: int | None, limit: int | None, rounds: int) -> dict:
    from curation.scorers import ScorerUnavailable, encode_images, encode_texts, scorer_load

    scorer = Scorer.objects.filter(pk=(run.prompt_settings or {}).get("scorer_id")).first()
    if scorer is None:
        raise Invalid("The scorer of this run was deleted; start a new run with another one.")
    try:
        loaded = scorer_load(scorer)
    except ScorerUnavailable as exc:
        raise Invalid(str(exc)) from exc
    ModelRun.objects.filter(pk=run.pk).update(
        status=ModelRun.Status.RUNNING,
        started_at=run.started_at or timezone.now(),
        finished_at=None,
    )
    done = set(run.predictions.values_list("item_id", flat=True))
    pending = [i for i in _kept_items(run.version, limit) if i.pk not in done]
    total = len(pending) + 1
    _progress(job_id, 0, total, f"{len(pending)} pairs to score with {scorer.label}")
    resolver = ImageResolver()
    failed: dict[str, str] = {}
    scored = 0
    for start in range(0, len(pending), SCORE_BATCH):
        batch = []
        for item in pending[start : start + SCORE_BATCH]:
            try:
                images = [resolver(item.data["image_0"]), resolver(item.data["image_1"])]
            except ImageMissing as exc:
                failed[item.item_id] = str(exc)
                continue
            batch.append((item, images))
        if batch:
            pil = [_open_pil(image) for _, images in batch for image in images]
            texts = [item.data[k] for item, _ in batch for k in ("caption_0", "caption_1")]
            image_emb = encode_images(loaded, pil)
            text_emb, _ = encode_texts(loaded, texts)
            for k, (item, _) in enumerate(batch):
                # s[caption][image] (App. B): rows are captions c0, c1; columns images i0, i1.
                matrix = text_emb[2 * k : 2 * k + 2] @ image_emb[2 * k : 2 * k + 2].T
                Prediction.objects.update_or_create(
                    run=run,
                    item=item,
                    defaults={"raw_output": "", "scores": [[float(v) for v in r] for r in matrix]},
                )
            scored += len(batch)
        _progress(job_id, min(start + SCORE_BATCH, len(pending)))
    settings_ = {**(run.prompt_settings or {}), "failed_items": len(failed)}
    settings_["failures"] = dict(list(failed.items())[:100])
    count = run.predictions.count()
    status = ModelRun.Status.SUCCEEDED if count else ModelRun.Status.FAILED
    ModelRun.objects.filter(pk=run.pk).update(
        status=status,
        finished_at=timezone.now(),
        prediction_count=count,
        prompt_settings=settings_,
    )
    result = {"run_id": run.pk, "items": scored, "failed_items": len(failed)}
    if status == ModelRun.Status.FAILED:
        first = next(iter(failed.values()), "no pairs")
        raise Invalid(f"No pair could be scored; nothing was stored. First error: {first}")
    run.refresh_from_db()
    result["metrics"] = services.metrics_compute(run=run, rounds=rounds)
    _progress(job_id, total, message=f"{scored} pairs scored, {len(failed)} without images")
    return result


# --- VisIT-Bench LLM judge (App. F) ---------------------------------------------------------------


def _player_of_run(version: BenchmarkVersion) -> dict[int, str]:
    """Run id → player name: the model's name, the first run (by id) of a model wins, as
    ``services.judgments_compute`` links players to runs."""
    names: dict[int, str] = {}
    taken: set[str] = set()
    for run_id, name in version.runs.order_by("id").values_list("id", "model__name"):
        if name not in taken:
            taken.add(name)
            names[run_id] = name
    return names


def judge_player_names(version: BenchmarkVersion) -> list[str]:
    """Models with responses on the version (two queries), for a "model to judge" choice."""
    names = _player_of_run(version)
    with_predictions = set(
        version.runs.filter(pk__in=names, prediction_count__gt=0).values_list("id", flat=True)
    )
    return sorted(names[r] for r in with_predictions)


def judge_players(version: BenchmarkVersion) -> dict[str, dict[int, str]]:
    """Responses per player and item pk: every run's predictions and the human-verified
    reference. Three queries, whatever the number of runs."""
    names = _player_of_run(version)
    players: dict[str, dict[int, str]] = {name: {} for name in names.values()}
    rows = Prediction.objects.filter(run_id__in=names).values_list(
        "run_id", "item_id", "raw_output", "scores"
    )
    for run_id, item_pk, raw, scores in rows:
        # A runner's failed call is no response to judge.
        if isinstance(raw, str) and not _failed_keys(scores):
            players[names[run_id]][item_pk] = raw
    players = {name: responses for name, responses in players.items() if responses}
    players[REFERENCE_PLAYER] = {
        pk: str(data.get("reference", ""))
        for pk, data in version.items.filter(kept=True).values_list("pk", "data")
    }
    return players


def judge_pairs_sample(
    *,
    version: BenchmarkVersion,
    model: str,
    n: int = DEFAULT_JUDGE_INSTANCES,
    seed: int = 0,
    opponents: bool = True,
    players: dict[str, dict[int, str]] | None = None,
) -> list[dict]:
    """Pairs for judging ``model``: ``n`` kept instances drawn with ``seed``, each judged against
    the human-verified reference and, with ``opponents``, against one other player drawn at
    random among those that answered it (App. F: a new model against a random existing one).
    The same version, players and seed give the same pairs."""
    services._require_visit(version)
    players = players if players is not None else judge_players(version)
    if model not in players or model == REFERENCE_PLAYER:
        raise Invalid(f"{model!r} is not a run on this version.")
    if n < 1:
        raise Invalid("Judge at least one instance.")
    answered = players[model]
    positions = dict(version.items.filter(kept=True).values_list("pk", "position"))
    eligible = sorted((pk for pk in answered if pk in positions), key=positions.__getitem__)
    if not eligible:
        raise Invalid(f"{model!r} has no responses on the instances that count.")
    rng = random.Random(seed)
    chosen = sorted(rng.sample(eligible, min(n, len(eligible))), key=positions.__getitem__)
    ids = dict(version.items.filter(pk__in=chosen).values_list("pk", "item_id"))
    pairs = []
    others = sorted(p for p in players if p not in (model, REFERENCE_PLAYER))
    for pk in chosen:
        pairs.append({"instance_id": ids[pk], "a_model": model, "b_model": REFERENCE_PLAYER})
        if opponents:
            candidates = [p for p in others if pk in players[p]]
            if candidates:
                opponent = rng.choice(candidates)
                pairs.append({"instance_id": ids[pk], "a_model": model, "b_model": opponent})
    return pairs


def judge_pairs_validate(
    *, version: BenchmarkVersion, pairs: Any, players: dict[str, dict[int, str]] | None = None
) -> list[tuple[BenchmarkItem, str, str]]:
    """Every pair names an instance of the version and two different players that answered it;
    line-numbered errors (1-based pair numbers) otherwise."""
    if not isinstance(pairs, list) or not pairs:
        raise Invalid("Give at least one pair to judge.", [{"line": 0, "error": "no pairs"}])
    if len(pairs) > MAX_PAIRS:
        raise Invalid(f"At most {MAX_PAIRS} pairs per judge run.")
    players = players if players is not None else judge_players(version)
    items = {i.item_id: i for i in version.items.only("id", "item_id", "data", "kept")}
    errors, out, seen = [], [], set()
    for n, pair in enumerate(pairs, start=1):
        if not isinstance(pair, dict):
            errors.append({"line": n, "error": "each pair must be an object"})
            continue
        item = items.get(str(pair.get("instance_id", "")))
        a, b = str(pair.get("a_model", "")), str(pair.get("b_model", ""))
        if item is None:
            errors.append({"line": n, "error": f"unknown instance {pair.get('instance_id')!r}"})
            continue
        if not a or not b or a == b:
            errors.append({"line": n, "error": "a_model and b_model must be two players"})
            continue
        missing = [p for p in (a, b) if item.pk not in players.get(p, {})]
        if missing:
            errors.append(
                {
                    "line": n,
                    "error": f"{', '.join(map(repr, missing))} did not answer this instance",
                }
            )
            continue
        key = (item.pk, importers.pair_key(a, b))
        if key in seen:
            errors.append({"line": n, "error": "this pair and instance are listed twice"})
            continue
        seen.add(key)
        out.append((item, a, b))
    if errors:
        raise Invalid("Some pairs cannot be judged; nothing was started.", errors[:200])
    return out


def judge_start(
    *,
    version: BenchmarkVersion,
    judgment_set_name: str,
    pairs: list[dict],
    provider: LLMProvider,
    created_by,
    seed: int = 0,
    with_reference: bool = False,
    rounds: int = 1000,
    text_metrics: bool = True,
    pairing: dict | None = None,
    enqueue: bool = True,
) -> Job:
    """Judge ``pairs`` ({instance_id, a_model, b_model}) in both orders with the App. F prompt
    in a job, feeding ``services.judgment_record``. A runner set with the same name resumes
    (judged pairs stay, missing ones are filled)."""
    services._require_visit(version)
    judge_pairs_validate(version=version, pairs=pairs)
    name = services._clean_name(judgment_set_name, "label of the judgment set", 120)
    offline = provider_is_blind(provider)
    provenance = {
        "runner": True,
        "provider_id": provider.pk,
        "provider": provider.name,
        "provider_kind": provider.kind,
        "model": provider.model,
        "offline": offline,
        "seed": int(seed),
        "pairs_requested": len(pairs),
        **(
            {"pairing": {**pairing, "drawn": len({p["instance_id"] for p in pairs})}}
            if pairing
            else {}
        ),
    }
    with transaction.atomic():
        existing = (
            JudgmentSet.objects.select_for_update(of=("self",))
            .select_related("job")
            .filter(version=version, label=name)
            .first()
        )
        if existing is None:
            judgment_set = services.judgment_set_create(
                version=version,
                label=name,
                judge=prompts.OFFLINE_JUDGE_LABEL if offline else (provider.model or provider.name),
                with_reference=with_reference,
                reference_player=REFERENCE_PLAYER,
                provenance=provenance,
                created_by=created_by,
            )
        else:
            if existing.source != JudgmentSet.Source.RUNNER:
                raise Conflict(f"This version already has imported judgments labelled {name!r}.")
            if existing.job is not None and not existing.job.is_finished:
                raise Conflict(f"The judge run {name!r} is still running.")
            if existing.with_reference != with_reference:
                raise Conflict(
                    f"{name!r} used the other judge prompt; give the new run another label."
                )
            judged_by = (existing.provenance or {}).get("provider_id")
            if judged_by not in (None, provider.pk):
                # One set, one judge: mixing judges would make its Elo meaningless.
                raise Conflict(
                    f"{name!r} was judged by another provider; give the new run another label."
                )
            judgment_set = existing
            judgment_set.provenance = {**(existing.provenance or {}), **provenance}
            JudgmentSet.objects.filter(pk=existing.pk).update(provenance=judgment_set.provenance)
        job = _job(
            enqueue=enqueue,
            kind=JUDGE_JOB,
            params={
                "judgment_set_id": judgment_set.pk,
                "pairs": pairs,
                "provider_id": provider.pk,
                "seed": int(seed),
                "with_reference": with_reference,
                "rounds": int(rounds),
                "text_metrics": bool(text_metrics),
            },
            created_by=created_by,
            project=version.benchmark.project,
            total=len(pairs) + 1,
        )
        JudgmentSet.objects.filter(pk=judgment_set.pk).update(
            job=job, status=JudgmentSet.Status.PENDING
        )
    return job


@dataclass
class _PairState:
    item: BenchmarkItem
    model_a: str
    model_b: str
    outputs: list = field(default_factory=lambda: [None, None])
    resolved: int = 0
    error: str = ""


def judge_run(
    *,
    judgment_set_id: int,
    pairs: list[dict],
    provider_id: int,
    seed: int = 0,
    with_reference: bool = False,
    job_id: int | None = None,
    rounds: int = 1000,
    text_metrics: bool = True,
) -> dict:
    """The body of a judge job: each pending pair in both orders (the App. F prompt; one
    extraction call when an order names no single winner, ``visit.needs_extraction``), then
    ``judgment_record``; failed calls leave the pair for a re-run. Rates the version at the end."""
    with _marks_failed(
        JudgmentSet, judgment_set_id, JudgmentSet.Status.RUNNING, JudgmentSet.Status.FAILED
    ):
        return _judge_run(
            judgment_set_id=judgment_set_id,
            pairs=pairs,
            provider_id=provider_id,
            seed=seed,
            with_reference=with_reference,
            job_id=job_id,
            rounds=rounds,
            text_metrics=text_metrics,
        )


def _judge_run(
    *,
    judgment_set_id: int,
    pairs: list[dict],
    provider_id: int,
    seed: int,
    with_reference: bool,
    job_id: int | None,
    rounds: int,
    text_metrics: bool,
) -> dict:
    judgment_set = JudgmentSet.objects.select_related("version__benchmark").get(pk=judgment_set_id)
    version = judgment_set.version
    provider = LLMProvider.objects.filter(pk=provider_id).first()
    if provider is None:
        raise Invalid("The judge's provider was deleted; start the judge with another one.")
    judge_name = prompts.JUDGE_REFERENCE if with_reference else prompts.JUDGE
    templates = _templates([judge_name, prompts.JUDGE_EXTRACTION])
    JudgmentSet.objects.filter(pk=judgment_set.pk).update(
        status=JudgmentSet.Status.RUNNING,
        provenance={**(judgment_set.provenance or {}), "templates": _template_record(templates)},
    )
    players = judge_players(version)
    checked = judge_pairs_validate(version=version, pairs=pairs, players=players)
    done = set(
        PairJudgment.objects.filter(judgment_set=judgment_set).values_list("item_id", "pair_key")
    )
    pending = [
        _PairState(item, a, b)
        for item, a, b in checked
        if (item.pk, importers.pair_key(a, b)) not in done
    ]
    total = len(pending) + 1
    _progress(job_id, 0, total, f"{len(pending)} of {len(checked)} pairs to judge, both orders")
    counts = {"judged": 0, "failed": 0, "extractions": 0, "ties": 0, "calls": 0}
    errors: list[str] = []
    progress = _Progress(job_id)

    def variables(state: _PairState, order: int) -> dict:
        shown = (state.model_a, state.model_b) if order == 0 else (state.model_b, state.model_a)
        data = state.item.data
        out = {
            "caption": data.get("caption", ""),
            "instruction": data.get("instruction", ""),
            "response_a": players[shown[0]][state.item.pk],
            "response_b": players[shown[1]][state.item.pk],
        }
        if with_reference:
            out["reference"] = data.get("reference", "")
        return out

    calls = (
        _Call(
            (k, order),
            CallSpec("judge", judge_name, variables(state, order)),
            f"evaljudge{judgment_set.pk}|{state.item.pk}|{k}|{order}",
            JUDGE_PURPOSE,
        )
        for k, state in enumerate(pending)
        for order in (0, 1)
    )

    def resolve(k: int, order: int, output: dict | None, error: str = "") -> None:
        state = pending[k]
        state.outputs[order] = output
        state.resolved += 1
        if error:
            state.error = state.error or error
        if state.resolved < 2:
            return
        if state.error:
            counts["failed"] += 1
            if len(errors) < 20:
                errors.append(state.error)
        else:
            judgment = services.judgment_record(
                judgment_set=judgment_set,
                item=state.item,
                model_a=state.model_a,
                model_b=state.model_b,
                response_a=players[state.model_a][state.item.pk],
                response_b=players[state.model_b][state.item.pk],
                outputs=state.outputs,
            )
            counts["judged"] += 1
            counts["ties"] += judgment.winner == visit.TIE
        progress(counts["judged"] + counts["failed"])

    def on_result(call: _Call, generation: Generation) -> list:
        k, order = call.tag
        state = pending[k]
        counts["calls"] += 1
        if generation.status != Generation.Status.OK:
            resolve(k, order, None, generation.error or "the judge call failed")
            return []
        if call.spec.key == "judge":
            shown = (state.model_a, state.model_b) if order == 0 else (state.model_b, state.model_a)
            output = {
                "shown_a": shown[0],
                "shown_b": shown[1],
                "judge_output": generation.raw_response,
                "extraction_output": None,
                "generation_id": generation.pk,
            }
            if not visit.needs_extraction(generation.raw_response):
                resolve(k, order, output)
                return []
            counts["extractions"] += 1
            state.outputs[order] = output
            return [
                _Call(
                    (k, order),
                    CallSpec(
                        "extraction",
                        prompts.JUDGE_EXTRACTION,
                        {"judge_output": generation.raw_response},
                    ),
                    f"evaljudge{judgment_set.pk}|{state.item.pk}|{k}|{order}|x",
                    EXTRACTION_PURPOSE,
                )
            ]
        output = dict(state.outputs[order])
        output["extraction_output"] = generation.raw_response
        output["extraction_generation_id"] = generation.pk
        resolve(k, order, output)
        return []

    pool = _Pool(
        provider=provider,
        templates=templates,
        job_id=job_id,
        project=version.benchmark.project,
        created_by=judgment_set.created_by,
        seed=seed,
        blind=True,  # the judge reads the instruction-conditioned caption, never the image
    )
    pool.run(calls, on_result)

    judgment_set.refresh_from_db()
    recorded = judgment_set.pair_count
    provenance = {
        **(judgment_set.provenance or {}),
        "last_attempt": counts,
        "failed_pairs": counts["failed"],
        **({"errors": errors} if errors else {}),
    }
    JudgmentSet.objects.filter(pk=judgment_set.pk).update(provenance=provenance)
    judgment_set.refresh_from_db()
    failed = recorded == 0
    services.judgment_set_finish(
        judgment_set=judgment_set,
        failed=failed,
        error=(errors[0] if failed and errors else ""),
    )
    result = {"judgment_set_id": judgment_set.pk, "pairs": recorded, **counts}
    if failed:
        raise Invalid("No pair could be judged. " + (f"First error: {errors[0]}" if errors else ""))
    _progress(job_id, total - 1, message=f"{counts['judged']} pairs judged; rating the version")
    services.judgments_compute(version=version, rounds=rounds, text_metrics=text_metrics)
    _progress(
        job_id,
        total,
        message=f"{counts['judged']} pairs judged, {counts['extractions']} extraction calls, "
        f"{counts['failed']} failed"
        + (" — run the judge again with the same label to retry them" if counts["failed"] else ""),
    )
    return result
