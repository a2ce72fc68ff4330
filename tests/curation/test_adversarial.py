"""PGD and I-FGSM (Sec. 3.2, Eq. 1) on the tiny random-weights open_clip model."""

import logging
import math
from dataclasses import replace

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from curation import adversarial as adv
from curation.tiny_clip import register_tiny

EPS = 8 / 255


@pytest.fixture(scope="module")
def encoder():
    import open_clip

    torch.manual_seed(0)
    logging.getLogger().setLevel(logging.ERROR)  # "no pretrained weights" is expected here
    model, _, _ = open_clip.create_model_and_transforms(register_tiny(), pretrained=None)
    return adv.OpenClipEncoder(model)


def images(batch=2, seed=1):
    """32×32 images with saturated corners, so the [0, 1] clamp has work to do."""
    x = torch.rand(batch, 3, 32, 32, generator=torch.Generator().manual_seed(seed))
    x[:, :, :4, :4] = 0.0
    x[:, :, -4:, -4:] = 1.0
    return x


def short(triggers_vh, method, **overrides):
    """The paper's branch settings with a 40-step schedule, to keep the tests quick."""
    settings = {"steps": 40, "schedule_steps": 40, **overrides}
    return adv.AttackConfig.for_case(triggers_vh=triggers_vh, method=method, **settings)


def checked_attack(encoder, x, config, *, seed: int):
    """The attack's result, and the iterations at which it was checked."""
    seen = []

    def on_step(k, cosines, delta):
        # then at every iteration δ is inside the ε-ball and x + δ inside [0, 1]
        assert float(delta.abs().max()) <= EPS
        assert float((x + delta).min()) >= 0.0 and float((x + delta).max()) <= 1.0 + 1e-7
        seen.append(k)

    return adv.attack(encoder, x, config, seed=seed, on_step=on_step), seen


# --- Constraints and direction ------------------------------------------------------------------


@pytest.mark.parametrize("method", ["ifgsm", "pgd"])
def test_non_vh_case_pushes_the_embedding_away_within_the_epsilon_ball(encoder, method):
    # given images whose case does not trigger VH
    x = images()
    # when attacked with a step size large enough for the projection to bind
    config = short(False, method, step_size=2 / 255 if method == "ifgsm" else 50.0)
    result, seen = checked_attack(encoder, x, config, seed=0)
    # then every iteration was checked, δ reaches ε but never exceeds it, pixels stay in [0, 1]
    assert seen == list(range(40))
    assert float(result.delta.abs().max()) == pytest.approx(EPS, abs=1e-8)  # one float32 ulp
    assert float(result.delta.abs().max()) <= EPS
    assert all(value <= EPS for trace in result.linf_trace for value in trace)
    assert float(result.adversarial.min()) >= 0.0 and float(result.adversarial.max()) <= 1.0
    assert all(value <= EPS + 1e-7 for value in result.linf)
    torch.testing.assert_close(result.adversarial, (x + result.delta).clamp(0, 1))
    # and the cosine to the original embedding went down
    for trace in result.cosine_trace:
        assert len(trace) == 40
        assert trace[-1] < trace[0] - 1e-3
    assert result.final_cosine == [trace[-1] for trace in result.cosine_trace]
    assert result.stop_reason == ["completed", "completed"]
    assert result.loss_trace[0][-1] == result.cosine_trace[0][-1]


@pytest.mark.parametrize("method", ["ifgsm", "pgd"])
def test_vh_case_starts_at_plus_minus_5_over_255_and_pulls_the_cosine_back_up(encoder, method):
    # given images whose case already triggers VH
    x = images()
    # when attacked (maximise the cosine from a random-sign start)
    config = short(True, method, step_size=0.5 / 255 if method == "ifgsm" else 20.0)
    result, seen = checked_attack(encoder, x, config, seed=3)
    assert seen == list(range(40))  # every iteration was checked
    # then the start was ±5/255 on every pixel the [0, 1] box leaves free
    assert result.linf_trace[0][0] == pytest.approx(5 / 255, abs=1e-7)
    # and the cosine rose from where the random start put it
    for trace in result.cosine_trace:
        assert trace[0] < 1.0
        assert trace[-1] > trace[0]
    assert result.loss_trace[0][0] == -result.cosine_trace[0][0]


def test_random_sign_start_is_exactly_plus_or_minus_r_where_the_box_allows(encoder):
    x = torch.full((1, 3, 32, 32), 0.5)
    captured = {}

    def grab(k, cosines, delta):
        captured["delta"] = delta.clone()
        return True  # stop at the first evaluation

    result = adv.attack(encoder, x, short(True, "ifgsm"), seed=5, on_step=grab)
    values = captured["delta"].unique()
    torch.testing.assert_close(values, torch.tensor([-5 / 255, 5 / 255]), rtol=0, atol=1e-7)
    signs = captured["delta"] > 0
    assert 0.45 < float(signs.float().mean()) < 0.55
    assert result.stop_reason == ["stopped"] and result.steps_run == [1]


def test_pgd_from_exactly_zero_is_stuck_which_is_why_its_non_vh_default_starts_at_1_over_255(
    encoder,
):
    # given the exact target embedding, δ = 0 is the cosine's maximum: its gradient vanishes
    x = images(batch=1)
    stuck = adv.attack(encoder, x, short(False, "pgd", init="zero"), seed=0)
    assert stuck.final_cosine[0] > 0.99999
    # when PGD starts where the official BLIP script starts non-VH cases (+1/255)
    config = short(False, "pgd")
    assert (config.init, config.init_radius) == ("constant", 1 / 255)
    moved = adv.attack(encoder, x, replace(config, step_size=200.0), seed=0)
    # then it moves away
    assert moved.final_cosine[0] < stuck.final_cosine[0] - 1e-3


# --- Update rules ---------------------------------------------------------------------------------


def test_one_pgd_update_is_alpha_times_the_gradient_of_minus_cos_then_projected(encoder):
    # given a PGD config with a constant step and a +1/255 start
    x = images(batch=1)
    config = short(False, "pgd", schedule="constant", step_size=30.0, steps=2)
    captured = []
    adv.attack(encoder, x, config, on_step=lambda k, c, d: captured.append(d.clone()))
    # when the first update is recomputed independently with autograd
    delta0 = ((x + 1 / 255).clamp(0, 1) - x).clamp(-EPS, EPS)
    point = (x + delta0).requires_grad_(True)
    with torch.no_grad():
        reference = encoder.encode(x)
    loss = -F.cosine_similarity(encoder.encode(point), reference, dim=1).sum()
    (gradient,) = torch.autograd.grad(loss, point)
    expected = (x + (delta0 + 30.0 * gradient).clamp(-EPS, EPS)).clamp(0, 1) - x
    # then the attack's δ after one update matches
    torch.testing.assert_close(captured[0], delta0, rtol=0, atol=1e-7)
    torch.testing.assert_close(captured[1], expected, rtol=0, atol=1e-6)
    assert float((captured[1] - captured[0]).abs().max()) > 1e-4


def test_one_ifgsm_update_moves_every_free_pixel_by_exactly_alpha(encoder):
    # given a mid-grey image (no pixel near the [0, 1] box) and I-FGSM from δ = 0
    x = torch.full((1, 3, 32, 32), 0.5)
    config = short(False, "ifgsm", schedule="constant", step_size=1 / 255, steps=2)
    captured = []
    adv.attack(encoder, x, config, on_step=lambda k, c, d: captured.append(d.clone()))
    # then the first step is α·sign(∇) on every pixel
    assert float(captured[0].abs().max()) == 0.0
    torch.testing.assert_close(captured[1].abs(), torch.full_like(x, 1 / 255), rtol=0, atol=1e-7)


def test_step_size_follows_pytorchs_cosine_annealing_to_1e_minus_4():
    # given the official schedule: α = 0.5/255, T_max = 500, η_min = 1e-4
    config = adv.AttackConfig.for_case(triggers_vh=True)
    parameter = torch.zeros(1, requires_grad=True)
    optimiser = torch.optim.SGD([parameter], lr=0.5 / 255)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, T_max=500, eta_min=1e-4)
    # then α_k equals the scheduler's learning rate at every step k
    for k in range(120):
        assert adv.step_size_at(config, k) == pytest.approx(scheduler.get_last_lr()[0], rel=1e-9)
        optimiser.step()
        scheduler.step()
    assert adv.step_size_at(config, 250) == pytest.approx((0.5 / 255 + 1e-4) / 2, rel=1e-12)
    constant = adv.AttackConfig(schedule="constant", step_size=0.01)
    assert adv.step_size_at(constant, 77) == 0.01


# --- Paper settings, early stopping, reproducibility, resume -----------------------------------


def test_for_case_gives_the_papers_settings():
    non_vh = adv.AttackConfig.for_case(triggers_vh=False).as_dict()
    vh = adv.AttackConfig.for_case(triggers_vh=True, method="pgd").as_dict()
    assert non_vh == {
        "method": "ifgsm",
        "maximise": False,
        "epsilon": 8 / 255,
        "step_size": 0.5 / 255,
        "steps": 500,
        "schedule_steps": 500,
        "schedule": "cosine",
        "min_step_size": 1e-4,
        "init": "zero",
        "init_radius": 5 / 255,
        "stop_cosine": None,
        "reduce": "official",
    }
    assert (vh["maximise"], vh["steps"], vh["schedule_steps"]) == (True, 100, 500)
    assert (vh["init"], vh["init_radius"], vh["step_size"]) == ("random_sign", 5 / 255, 1.0)


def test_vh_case_stops_early_at_iteration_100_of_the_500_step_schedule(encoder):
    # given the paper's VH-case settings (100 of a 500-step schedule)
    x = images(batch=1)
    # when run
    result = adv.ifgsm(encoder, x, triggers_vh=True, seed=0)
    # then it stops early after 100 evaluations, with the schedule still above its floor
    assert result.stop_reason == ["early_stop"]
    assert result.steps_run == [100] and len(result.cosine_trace[0]) == 100
    config = adv.AttackConfig(**result.config)
    assert adv.step_size_at(config, 98) > 0.4 / 255


@pytest.mark.parametrize(("maximise", "threshold"), [(False, 0.995), (True, 0.99995)])
def test_optional_cosine_threshold_stops_each_image_when_crossed(encoder, maximise, threshold):
    x = images()
    config = short(maximise, "ifgsm", stop_cosine=threshold, step_size=1 / 255)
    result = adv.attack(encoder, x, config, seed=0)
    assert result.stop_reason == ["cosine_reached", "cosine_reached"]
    for trace in result.cosine_trace:
        last = trace[-1]
        assert (last >= threshold) if maximise else (last <= threshold)
        assert all((c < threshold) if maximise else (c > threshold) for c in trace[:-1])
        assert len(trace) < 40


def test_same_seed_same_result_other_seed_other_start(encoder):
    x = images()
    config = short(True, "ifgsm", steps=10, schedule_steps=10)
    first = adv.attack(encoder, x, config, seed=11)
    again = adv.attack(encoder, x, config, seed=11)
    other = adv.attack(encoder, x, config, seed=12)
    assert torch.equal(first.delta, again.delta)
    assert first.cosine_trace == again.cosine_trace
    assert not torch.equal(first.delta, other.delta)
    assert first.seed == 11


def test_resuming_from_a_checkpoint_gives_the_uninterrupted_result(encoder):
    # given an uninterrupted 20-step PGD run
    x = images()
    config = short(False, "pgd", steps=20, schedule_steps=20, step_size=20.0)
    full = adv.attack(encoder, x, config, seed=0)
    # when the same run is stopped at iteration 8 and resumed from its δ
    part = adv.attack(encoder, x, config, seed=0, on_step=lambda k, c, d: k == 8)
    assert part.stop_reason == ["stopped", "stopped"] and part.steps_run == [9, 9]
    rest = adv.attack(encoder, x, config, seed=0, start_delta=part.delta, start_step=8)
    # then δ and the cosine trace match
    torch.testing.assert_close(rest.delta, full.delta, rtol=0, atol=1e-6)
    assert rest.steps_run == [20, 20]
    for i in range(2):
        assert part.cosine_trace[i][:8] + rest.cosine_trace[i] == pytest.approx(
            full.cosine_trace[i], abs=1e-6
        )


def test_images_of_a_batch_are_attacked_independently(encoder):
    x = images(batch=3)
    config = short(False, "pgd", steps=6, schedule_steps=6, step_size=20.0)
    batch = adv.attack(encoder, x, config)
    alone = adv.attack(encoder, x[1:2], config)
    torch.testing.assert_close(batch.delta[1:2], alone.delta, rtol=0, atol=1e-6)


# --- Encoders -------------------------------------------------------------------------------------


def test_open_clip_encoder_normalises_inside_with_the_models_mean_and_std(encoder):
    x = images()
    mean = torch.tensor([0.48145466, 0.4578275, 0.40821073]).view(1, 3, 1, 1)
    std = torch.tensor([0.26862954, 0.26130258, 0.27577711]).view(1, 3, 1, 1)
    with torch.no_grad():
        expected = encoder.model.encode_image((x - mean) / std)
        torch.testing.assert_close(encoder.encode(x), expected, rtol=0, atol=1e-6)
    assert encoder.image_size == (32, 32)
    assert isinstance(encoder, adv.VisionEncoder)
    with pytest.raises(ValueError, match="expects"):
        encoder.encode(torch.rand(1, 3, 64, 64))


class TokenEncoder:
    """A stand-in MLLM encoder + connector returning [B, N, D] tokens (a fixed linear map)."""

    def __init__(self):
        self.weight = torch.randn(3 * 8 * 8, 4 * 6, generator=torch.Generator().manual_seed(0))

    def encode(self, pixels):
        return (pixels.flatten(1) @ self.weight).view(-1, 4, 6)


def test_token_encoders_plug_in_and_official_cosine_runs_across_tokens_per_channel():
    encoder = TokenEncoder()
    x = torch.rand(2, 3, 8, 8, generator=torch.Generator().manual_seed(2))
    y = (x + 0.05).clamp(0, 1)
    a, b = encoder.encode(x), encoder.encode(y)
    official = adv.embedding_cosine(encoder, x, y)
    torch.testing.assert_close(official, F.cosine_similarity(a, b).mean(dim=1))
    flat = adv.embedding_cosine(encoder, x, y, reduce="flatten")
    torch.testing.assert_close(flat, F.cosine_similarity(a.flatten(1), b.flatten(1)))
    per_token = adv.embedding_cosine(encoder, x, y, reduce="per_token")
    torch.testing.assert_close(per_token, F.cosine_similarity(a, b, dim=-1).mean(dim=1))
    # and the attack runs against it
    result = adv.attack(encoder, x, short(False, "ifgsm", steps=5, schedule_steps=5))
    assert result.final_cosine[0] < 1.0 and float(result.delta.abs().max()) <= EPS


def test_encoder_pixels_resizes_and_crops_like_the_preprocess():
    image = np.random.default_rng(0).random((48, 64, 3))
    pixels = adv.encoder_pixels(image, size=32)
    assert tuple(pixels.shape) == (3, 32, 32)
    assert float(pixels.min()) >= 0.0 and float(pixels.max()) <= 1.0
    padded = adv.encoder_pixels(image, size=32, pad_fill=(0.0, 0.0, 0.0))
    # 48×64 padded to 64×64 with 8 black rows on top: 4 black rows after resizing to 32
    assert float(padded[:, :3, :].max()) == 0.0
    assert adv.array_from_pixels(pixels).shape == (32, 32, 3)


# --- Bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides",
    [
        {"method": "fgsm"},
        {"epsilon": 0.0},
        {"epsilon": 2.0},
        {"steps": 0},
        {"steps": 600},
        {"init": "gaussian"},
        {"step_size": -1.0},
        {"stop_cosine": 1.5},
        {"schedule": "linear"},
        {"reduce": "max"},
    ],
)
def test_bad_settings_are_refused(overrides):
    with pytest.raises(ValueError):
        adv.AttackConfig.for_case(triggers_vh=False, **overrides)


def test_bad_images_and_checkpoints_are_refused(encoder):
    config = short(False, "ifgsm")
    with pytest.raises(ValueError, match=r"\[B, 3, H, W\]"):
        adv.attack(encoder, torch.rand(2, 4, 32, 32), config)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        adv.attack(encoder, torch.rand(1, 3, 32, 32) * 2, config)
    with pytest.raises(ValueError, match="exceeds epsilon"):
        adv.attack(encoder, images(1), config, start_delta=torch.full((1, 3, 32, 32), 0.1))
    with pytest.raises(ValueError, match="start_step needs"):
        adv.attack(encoder, images(1), config, start_step=3)
    with pytest.raises(ValueError, match="seed"):
        adv.attack(encoder, images(1), config, seed=-1)
    assert math.isclose(EPS, config.epsilon)
