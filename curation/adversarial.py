"""Adversarial image perturbations of VHExpansion (Sec. 3.2, Eq. 1; METRICS.md §3), in torch.

Find δ with ‖δ‖∞ ≤ ε and x + δ in [0, 1] that moves the embedding of x + δ relative to the
embedding of x, as seen by a vision encoder (plus connector, for an MLLM):

* the case does not trigger visual hallucination (VH): start at δ = 0 and *minimise*
  cos(e(x), e(x + δ)) for 500 iterations, to push the model off its correct answer;
* the case already triggers VH: start at δ = ±5/255 per pixel (random sign) and *maximise* the
  cosine, stopping early after 100 iterations, so the new image keeps the hallucination without
  collapsing back onto x.

Eq. 1 as printed puts the minus sign on the other branch; the text around it, METRICS.md and the
authors' scripts (``adversarial_training/train_*.py``: ascend −cos for "non_h", ascend cos for
"h") all agree on the reading above, which is what this module does.

Update rules after the official scripts: I-FGSM δ ← δ + α_k·sign(∇), PGD δ ← δ + α_k·∇, with ∇ the
gradient of the objective (±cos), then the ℓ∞ projection and the [0, 1] clamp after every step.
α_k follows a cosine annealing from α to 1e-4 over ``schedule_steps`` (``CosineAnnealingLR``,
T_max = the script's ``num_steps`` = 500). Defaults: α = 0.5/255 for I-FGSM, α = 1.0 for PGD
(PGD's step is the raw gradient). ``steps`` counts cosine evaluations as the scripts do: the
trace has ``steps`` entries, entry k is the cosine after k updates, and the last evaluation ends
the run (so ``steps − 1`` updates). The scripts' early stop for a VH case is that the loop breaks
at iteration 100 of a 500-step schedule; ``AttackConfig.for_case`` sets exactly that. An optional
``stop_cosine`` threshold (off by default) also stops an image once its cosine crosses it.

One deliberate departure: δ = 0 is the maximum of the cosine, so its gradient vanishes there
(≈1e-9 in float32). I-FGSM still leaves, because it follows the gradient's sign; PGD, which steps
by the gradient itself, would stay at x for good. The official scripts never meet this (their
target embedding comes from a different preprocessing path, or, for BLIP, δ starts at +1/255), so
for PGD on a non-VH case ``for_case`` starts at δ = +1/255 everywhere, as the BLIP script does.

The encoder is anything with ``encode(pixels) -> embedding`` (``VisionEncoder``): pixels are a
float tensor [B, 3, H, W] in [0, 1] at the encoder's input resolution, so δ lives in pixel space
and any normalisation happens inside the encoder. ``OpenClipEncoder`` adapts an open_clip model;
for an MLLM, wrap its vision tower and connector the same way (see ``VisionEncoder``).

No Django import.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch
import torch.nn.functional as F

__all__ = [
    "AttackConfig",
    "AttackResult",
    "OpenClipEncoder",
    "VisionEncoder",
    "array_from_pixels",
    "attack",
    "embedding_cosine",
    "encoder_pixels",
    "ifgsm",
    "pgd",
    "step_size_at",
]

METHODS = ("ifgsm", "pgd")
INITS = ("zero", "random_sign", "uniform", "constant")
SCHEDULES = ("cosine", "constant")
REDUCTIONS = ("official", "flatten", "per_token")

# Official scripts' defaults (adversarial_training/train_*.py).
DEFAULT_STEP_SIZE = {"ifgsm": 0.5 / 255, "pgd": 1.0}
MIN_STEP_SIZE = 1e-4

STOP_COMPLETED = "completed"  # ran the whole schedule
STOP_EARLY = "early_stop"  # reached ``steps`` before the end of the schedule (VH cases)
STOP_COSINE = "cosine_reached"  # optional ``stop_cosine`` threshold crossed
STOP_CALLBACK = "stopped"  # ``on_step`` asked to stop (cancelled job, time budget)


@runtime_checkable
class VisionEncoder(Protocol):
    """What the attack needs from a model: a differentiable map from pixels to an embedding.

    ``encode(pixels)`` takes a float tensor [B, 3, H, W] in [0, 1] (not normalised) and returns
    [B, D] or, for an MLLM's projected visual tokens, [B, N, D]. It must be differentiable with
    respect to ``pixels``. An optional ``device`` attribute says where to put the pixels.

    Plugging in an MLLM (M_E ∘ M_C of Eq. 1), e.g. LLaVA-1.5::

        class LlavaEncoder:
            def __init__(self, vision_tower, projector, mean, std):
                ...
            def encode(self, pixels):
                normalised = (pixels - self.mean) / self.std
                return self.projector(self.vision_tower(normalised))  # [B, 576, 4096]
    """

    def encode(self, pixels: torch.Tensor) -> torch.Tensor: ...


class OpenClipEncoder:
    """``VisionEncoder`` for an open_clip model: normalises inside, returns ``encode_image``.

    Mean and std default to the model's own (``model.visual.image_mean``/``image_std``, which
    open_clip sets from the pretrained config). Puts the model in eval mode.
    """

    def __init__(
        self,
        model: torch.nn.Module,
        *,
        mean: Sequence[float] | None = None,
        std: Sequence[float] | None = None,
    ):
        visual = model.visual
        mean = mean if mean is not None else getattr(visual, "image_mean", None)
        std = std if std is not None else getattr(visual, "image_std", None)
        if mean is None or std is None:
            raise ValueError("the model's visual tower has no image_mean/image_std: pass them")
        self.model = model.eval()
        parameter = next(model.parameters())
        self.device = parameter.device
        self.dtype = parameter.dtype
        self.mean = torch.tensor(mean, dtype=torch.float32, device=self.device).view(1, 3, 1, 1)
        self.std = torch.tensor(std, dtype=torch.float32, device=self.device).view(1, 3, 1, 1)
        size = getattr(visual, "image_size", None)
        self.image_size: tuple[int, int] | None = (
            (size, size) if isinstance(size, int) else tuple(size) if size is not None else None
        )

    def encode(self, pixels: torch.Tensor) -> torch.Tensor:
        if self.image_size is not None and tuple(pixels.shape[-2:]) != self.image_size:
            raise ValueError(
                f"pixels are {tuple(pixels.shape[-2:])}, the model expects {self.image_size}: "
                "prepare them with encoder_pixels(image, size=...)"
            )
        normalised = (pixels.float() - self.mean) / self.std
        return self.model.encode_image(normalised.to(self.dtype)).float()


def encoder_pixels(
    image: np.ndarray,
    *,
    size: int,
    pad_fill: Sequence[float] | None = None,
) -> torch.Tensor:
    """H×W×3 float [0, 1] → [3, size, size] float tensor in [0, 1], ready for ``attack``.

    Resize the shortest side to ``size`` (bicubic, on the 8-bit image with Pillow) and centre-crop,
    as open_clip's preprocess and the official LLaVA script do. ``pad_fill`` (an RGB colour in
    [0, 1], LLaVA uses the normalisation mean) first pads the image to a square, LLaVA-1.5's
    ``expand2square``. The adversarial image lives at this resolution.
    """
    from PIL import Image
    from torchvision.transforms import CenterCrop, Compose, InterpolationMode, Resize, ToTensor

    if not isinstance(image, np.ndarray) or image.ndim != 3 or image.shape[2] != 3:
        raise ValueError("image must be an H×W×3 numpy array")
    if not (image.min() >= 0.0 and image.max() <= 1.0):
        raise ValueError("image values must lie in [0, 1]")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"size must be a positive integer, got {size!r}")
    pil = Image.fromarray(np.rint(image * 255.0).astype(np.uint8))
    if pad_fill is not None:
        side = max(pil.size)
        fill = tuple(int(c * 255) for c in pad_fill)  # int(), as expand2square's caller does
        square = Image.new("RGB", (side, side), fill)
        square.paste(pil, ((side - pil.width) // 2, (side - pil.height) // 2))
        pil = square
    transform = Compose(
        [Resize(size, interpolation=InterpolationMode.BICUBIC), CenterCrop(size), ToTensor()]
    )
    return transform(pil)


def array_from_pixels(pixels: torch.Tensor) -> np.ndarray:
    """[3, H, W] (or [1, 3, H, W]) tensor → H×W×3 float32 numpy array."""
    if pixels.ndim == 4 and pixels.shape[0] == 1:
        pixels = pixels[0]
    if pixels.ndim != 3 or pixels.shape[0] != 3:
        raise ValueError(f"pixels must be [3, H, W], got {tuple(pixels.shape)}")
    return pixels.detach().to("cpu", torch.float32).permute(1, 2, 0).contiguous().numpy()


@dataclass(frozen=True)
class AttackConfig:
    """Parameters of one attack; ``as_dict()`` is what a recipe records with the result."""

    method: str = "ifgsm"
    maximise: bool = False  # False: the case does not trigger VH (push away); True: it does
    epsilon: float = 8 / 255
    step_size: float | None = None  # α; None → the official default for the method
    steps: int = 500
    schedule_steps: int | None = None  # T_max of the cosine annealing; None → steps
    schedule: str = "cosine"
    min_step_size: float = MIN_STEP_SIZE
    init: str = "zero"
    init_radius: float = 5 / 255
    stop_cosine: float | None = None  # optional extra stop: cos ≥ it (maximise) or ≤ it
    reduce: str = "official"

    @classmethod
    def for_case(cls, *, triggers_vh: bool, method: str = "ifgsm", **overrides: Any):
        """The paper's settings for a case that does (True) or does not trigger VH."""
        if triggers_vh:
            base = {"maximise": True, "steps": 100, "schedule_steps": 500, "init": "random_sign"}
        elif method == "pgd":
            # δ = 0 is a stationary point that PGD cannot leave (module docstring): start at
            # +1/255 everywhere, as the official BLIP script does for non-VH cases.
            base = {"steps": 500, "schedule_steps": 500, "init": "constant", "init_radius": 1 / 255}
        else:
            # I-FGSM follows the gradient's sign, so rounding noise at δ = 0 is enough to leave.
            base = {"steps": 500, "schedule_steps": 500, "init": "zero"}
        return cls(method=method, **{**base, **overrides}).validated()

    def resolved_step_size(self) -> float:
        return DEFAULT_STEP_SIZE[self.method] if self.step_size is None else self.step_size

    def resolved_schedule_steps(self) -> int:
        return self.steps if self.schedule_steps is None else self.schedule_steps

    def validated(self) -> AttackConfig:
        def positive(name: str, value: float, upper: float | None = None) -> None:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{name} must be a number, got {value!r}")
            if not (math.isfinite(value) and value > 0 and (upper is None or value <= upper)):
                bound = f" and ≤ {upper}" if upper is not None else ""
                raise ValueError(f"{name} must be > 0{bound}, got {value}")

        if self.method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}, got {self.method!r}")
        if self.init not in INITS:
            raise ValueError(f"init must be one of {', '.join(INITS)}, got {self.init!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {', '.join(SCHEDULES)}")
        if self.reduce not in REDUCTIONS:
            raise ValueError(f"reduce must be one of {', '.join(REDUCTIONS)}")
        positive("epsilon", self.epsilon, 1.0)
        positive("step_size", self.resolved_step_size())
        positive("init_radius", self.init_radius, 1.0)
        if not (math.isfinite(self.min_step_size) and self.min_step_size >= 0):
            raise ValueError(f"min_step_size must be ≥ 0, got {self.min_step_size}")
        for name in ("steps", "schedule_steps"):
            value = getattr(self, name)
            if value is None and name == "schedule_steps":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer ≥ 1, got {value!r}")
        if self.steps > self.resolved_schedule_steps():
            raise ValueError(
                f"steps ({self.steps}) cannot exceed schedule_steps "
                f"({self.resolved_schedule_steps()})"
            )
        if self.stop_cosine is not None and not -1.0 <= self.stop_cosine <= 1.0:
            raise ValueError(f"stop_cosine must lie in [-1, 1], got {self.stop_cosine}")
        return self

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["step_size"] = self.resolved_step_size()
        data["schedule_steps"] = self.resolved_schedule_steps()
        return data


def step_size_at(config: AttackConfig, k: int) -> float:
    """α_k for the update after evaluation k (0-based): ``CosineAnnealingLR``'s closed form."""
    alpha = config.resolved_step_size()
    if config.schedule == "constant":
        return alpha
    total = config.resolved_schedule_steps()
    floor = config.min_step_size
    return floor + (alpha - floor) * (1.0 + math.cos(math.pi * k / total)) / 2.0


@dataclass
class AttackResult:
    """Outcome per image of a batch; tensors are on the CPU, detached.

    ``cosine_trace[i][k]`` is cos(e(x_i), e(x_i + δ_k)) after k updates and ``linf_trace[i][k]``
    is ‖δ_k‖∞ (≤ ε exactly); the loss the attack descends is −cos when ``maximise`` else cos
    (``loss_trace``). ``adversarial`` = clamp(x + δ, 0, 1) and ``linf`` is ‖adversarial − x‖∞ per
    image, the norm actually used (≤ ε up to one float32 rounding, ~6e-8).
    """

    adversarial: torch.Tensor
    delta: torch.Tensor
    cosine_trace: list[list[float]]
    linf_trace: list[list[float]]
    stop_reason: list[str]
    steps_run: list[int]
    final_cosine: list[float]
    linf: list[float]
    config: dict[str, Any]
    seed: int
    start_step: int = 0

    @property
    def loss_trace(self) -> list[list[float]]:
        sign = -1.0 if self.config["maximise"] else 1.0
        return [[sign * c for c in trace] for trace in self.cosine_trace]


def _as_batch(images: torch.Tensor) -> torch.Tensor:
    if not isinstance(images, torch.Tensor):
        raise TypeError(f"images must be a torch tensor, got {type(images).__name__}")
    if images.ndim == 3:
        images = images.unsqueeze(0)
    if images.ndim != 4 or images.shape[1] != 3:
        raise ValueError(f"images must be [B, 3, H, W] or [3, H, W], got {tuple(images.shape)}")
    if not images.is_floating_point():
        raise ValueError(f"images must be a float tensor in [0, 1], got {images.dtype}")
    if not (images.min() >= 0 and images.max() <= 1):
        raise ValueError("image values must lie in [0, 1]")
    return images


def _float32_at_most(value: float) -> float:
    # float32(8/255) rounds up; clamping to it would leave |δ| 2e-9 above ε.
    rounded = np.float32(value)
    if float(rounded) > value:
        rounded = np.nextafter(rounded, np.float32(0))
    return float(rounded)


def _project(delta: torch.Tensor, x: torch.Tensor, epsilon: float) -> torch.Tensor:
    # ℓ∞ ball, then the [0, 1] box of x + δ, then the ball again so that rounding in
    # (x + δ) − x can never leave |δ| a hair above ε.
    delta = delta.clamp(-epsilon, epsilon)
    delta = (x + delta).clamp(0.0, 1.0) - x
    return delta.clamp(-epsilon, epsilon)


def _cosine(embedding: torch.Tensor, target: torch.Tensor, reduce: str) -> torch.Tensor:
    if embedding.shape != target.shape:
        raise ValueError(f"embedding shape {tuple(embedding.shape)} ≠ {tuple(target.shape)}")
    if embedding.ndim == 2 or reduce == "flatten":
        return F.cosine_similarity(embedding.flatten(1), target.flatten(1), dim=1)
    if reduce == "official":
        # F.cosine_similarity's default dim=1 in the scripts: for [B, N, D] token outputs that
        # is a cosine across tokens per feature channel, then their mean.
        return F.cosine_similarity(embedding, target, dim=1).flatten(1).mean(dim=1)
    return F.cosine_similarity(embedding, target, dim=-1).flatten(1).mean(dim=1)


def embedding_cosine(
    encoder: VisionEncoder,
    original: torch.Tensor,
    perturbed: torch.Tensor,
    *,
    reduce: str = "official",
) -> torch.Tensor:
    """cos(e(original), e(perturbed)) per image, e.g. to re-measure after 8-bit quantisation."""
    device = getattr(encoder, "device", None)
    original = _as_batch(original)
    perturbed = _as_batch(perturbed)
    if device is not None:
        original, perturbed = original.to(device), perturbed.to(device)
    with torch.no_grad():
        return _cosine(encoder.encode(perturbed), encoder.encode(original), reduce).float().cpu()


def _initial_delta(
    config: AttackConfig, x: torch.Tensor, generator: torch.Generator
) -> torch.Tensor:
    shape = tuple(x.shape)
    if config.init == "zero":
        return torch.zeros_like(x)
    if config.init == "random_sign":
        # Each pixel +r or −r with probability ½ (Sec. 4 "Parameter settings").
        signs = torch.randint(0, 2, shape, generator=generator, dtype=torch.int64) * 2 - 1
        noise = signs.to(torch.float32) * config.init_radius
    elif config.init == "constant":
        noise = torch.full(shape, config.init_radius)
    else:
        noise = (torch.rand(shape, generator=generator) * 2 - 1) * config.init_radius
    return noise.to(device=x.device, dtype=x.dtype)


def attack(
    encoder: VisionEncoder,
    images: torch.Tensor,
    config: AttackConfig,
    *,
    seed: int = 0,
    target: torch.Tensor | None = None,
    start_delta: torch.Tensor | None = None,
    start_step: int = 0,
    on_step: Callable[[int, torch.Tensor, torch.Tensor], bool | None] | None = None,
) -> AttackResult:
    """Long because: one attack loop (Sec. 3.2 of VHExpansion) whose step schedule, projection,
    checkpoint resume and per-step evaluation share the same tensors; split, they would pass
    them all back and forth.

    Run I-FGSM or PGD on a batch of images [B, 3, H, W] (or one [3, H, W]) in [0, 1].

    ``target`` is the reference embedding (default: the encoder's embedding of ``images``).
    ``start_delta`` and ``start_step`` resume a run from a checkpoint: δ after ``start_step``
    updates (the step-size schedule continues from there; the random start is then skipped).
    ``on_step(k, cosines, delta)`` is called after every evaluation (k updates done); returning
    True stops the whole batch with reason ``"stopped"`` — progress reports and cancellation.
    Images of a batch are independent: each gets the gradient of its own cosine.
    """
    config = config.validated()
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an integer ≥ 0, got {seed!r}")
    if isinstance(start_step, bool) or not isinstance(start_step, int):
        raise ValueError(f"start_step must be an integer, got {start_step!r}")
    if not 0 <= start_step < config.steps:
        raise ValueError(f"start_step must lie in [0, {config.steps}), got {start_step}")
    x = _as_batch(images).detach()
    device = getattr(encoder, "device", None)
    if device is not None:
        x = x.to(device)
    x = x.float()
    batch = x.shape[0]
    epsilon = _float32_at_most(config.epsilon)

    if start_delta is not None:
        delta = _as_batch_delta(start_delta, x, epsilon)
    else:
        if start_step:
            raise ValueError("start_step needs the start_delta it resumes from")
        generator = torch.Generator().manual_seed(seed)
        delta = _initial_delta(config, x, generator)
    delta = _project(delta, x, epsilon)

    with torch.no_grad():
        reference = (encoder.encode(x) if target is None else target.to(x.device)).detach()
    reference = reference.float()

    cosine_trace: list[list[float]] = [[] for _ in range(batch)]
    linf_trace: list[list[float]] = [[] for _ in range(batch)]
    reasons: list[str | None] = [None] * batch
    active = torch.ones(batch, dtype=torch.bool, device=x.device)
    end_reason = STOP_COMPLETED if config.steps == config.resolved_schedule_steps() else STOP_EARLY
    use_sign = config.method == "ifgsm"

    with torch.enable_grad():
        for k in range(start_step, config.steps):
            adversarial = (x + delta).clamp(0.0, 1.0).requires_grad_(True)
            cosines = _cosine(encoder.encode(adversarial), reference, config.reduce)
            measured = cosines.detach().cpu().tolist()
            linfs = delta.abs().flatten(1).amax(dim=1).cpu().tolist()
            for i in range(batch):
                if reasons[i] is None:
                    cosine_trace[i].append(float(measured[i]))
                    linf_trace[i].append(float(linfs[i]))
            if on_step is not None and on_step(k, cosines.detach(), delta.detach()):
                _finish(reasons, STOP_CALLBACK)
                break
            if k == config.steps - 1:
                _finish(reasons, end_reason)
                break
            if config.stop_cosine is not None:
                crossed = (
                    cosines.detach() >= config.stop_cosine
                    if config.maximise
                    else cosines.detach() <= config.stop_cosine
                )
                for i in torch.nonzero(crossed & active).flatten().tolist():
                    reasons[i] = STOP_COSINE
                active &= ~crossed
                if not bool(active.any()):
                    break
            objective = cosines.sum() if config.maximise else -cosines.sum()
            (gradient,) = torch.autograd.grad(objective, adversarial)
            step = gradient.sign() if use_sign else gradient
            step = step * active.view(-1, 1, 1, 1).to(step.dtype)
            delta = _project(delta + step_size_at(config, k) * step, x, epsilon).detach()

    adversarial = (x + delta).clamp(0.0, 1.0).detach()
    final = [trace[-1] for trace in cosine_trace]
    return AttackResult(
        adversarial=adversarial.cpu(),
        delta=delta.detach().cpu(),
        cosine_trace=cosine_trace,
        linf_trace=linf_trace,
        stop_reason=[reason or STOP_COMPLETED for reason in reasons],
        steps_run=[start_step + len(trace) for trace in cosine_trace],
        final_cosine=final,
        linf=(adversarial - x).abs().flatten(1).amax(dim=1).cpu().tolist(),
        config=config.as_dict(),
        seed=seed,
        start_step=start_step,
    )


def _finish(reasons: list[str | None], reason: str) -> None:
    for i, current in enumerate(reasons):
        if current is None:
            reasons[i] = reason


def _as_batch_delta(start_delta: torch.Tensor, x: torch.Tensor, epsilon: float) -> torch.Tensor:
    if not isinstance(start_delta, torch.Tensor):
        raise TypeError("start_delta must be a torch tensor")
    delta = start_delta.unsqueeze(0) if start_delta.ndim == 3 else start_delta
    if tuple(delta.shape) != tuple(x.shape):
        raise ValueError(f"start_delta is {tuple(delta.shape)}, images are {tuple(x.shape)}")
    if not bool(torch.isfinite(delta).all()):
        raise ValueError("start_delta must be finite")
    if float(delta.abs().max()) > epsilon + 1e-6:
        raise ValueError("start_delta exceeds epsilon: it is not a checkpoint of this attack")
    return delta.to(device=x.device, dtype=x.dtype)


def attack_for_case(
    encoder: VisionEncoder,
    images: torch.Tensor,
    *,
    method: str,
    triggers_vh: bool,
    seed: int = 0,
    **overrides: Any,
) -> AttackResult:
    """``method`` (ifgsm or pgd) with the paper's settings for the case's branch; ``overrides``
    change any of them."""
    config = AttackConfig.for_case(triggers_vh=triggers_vh, method=method, **overrides)
    return attack(encoder, images, config, seed=seed)


ifgsm = partial(attack_for_case, method="ifgsm")
pgd = partial(attack_for_case, method="pgd")
