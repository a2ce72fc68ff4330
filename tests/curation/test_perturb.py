"""Common perturbations (App. C, METRICS.md §3) against independent computations."""

import colorsys
import io

import numpy as np
import pytest
import scipy.ndimage
import scipy.signal
from PIL import Image

from curation import perturb

# Annex K luminance and chrominance tables (natural order), which libjpeg scales by quality.
ANNEX_K_LUMA = [
    [16, 11, 10, 16, 24, 40, 51, 61],
    [12, 12, 14, 19, 26, 58, 60, 55],
    [14, 13, 16, 24, 40, 57, 69, 56],
    [14, 17, 22, 29, 51, 87, 80, 62],
    [18, 22, 37, 56, 68, 109, 103, 77],
    [24, 35, 55, 64, 81, 104, 113, 92],
    [49, 64, 78, 87, 103, 121, 120, 101],
    [72, 92, 95, 98, 112, 100, 103, 99],
]
ANNEX_K_CHROMA = [
    [17, 18, 24, 47, 99, 99, 99, 99],
    [18, 21, 26, 66, 99, 99, 99, 99],
    [24, 26, 56, 99, 99, 99, 99, 99],
    [47, 66, 99, 99, 99, 99, 99, 99],
] + [[99] * 8] * 4


def random_image(h=20, w=23, seed=1, dtype=np.float64):
    return np.random.default_rng(seed).random((h, w, 3)).astype(dtype)


# --- Gaussian noise ---------------------------------------------------------------------------


def test_gaussian_noise_is_the_seeded_normal_draw_times_sigma_added_and_clipped():
    # given a small image and a seed
    image = random_image(4, 5)
    # when noise is added with the paper's σ
    out = perturb.gaussian_noise(image, seed=7)
    # then every pixel is x + 0.08·z for the seeded generator's standard normals, clipped
    z = np.random.default_rng(7).standard_normal((4, 5, 3))
    np.testing.assert_array_equal(out, np.clip(image + 0.08 * z, 0.0, 1.0))
    assert out.dtype == np.float64


def test_gaussian_noise_same_seed_same_pixels_other_seed_other_pixels():
    image = random_image()
    first = perturb.gaussian_noise(image, sigma=0.2, seed=3)
    np.testing.assert_array_equal(first, perturb.gaussian_noise(image, sigma=0.2, seed=3))
    assert not np.array_equal(first, perturb.gaussian_noise(image, sigma=0.2, seed=4))


def test_gaussian_noise_on_grey_has_sigma_spread_and_clips_at_both_ends():
    # given mid-grey, black and white images
    grey = np.full((64, 64, 3), 0.5)
    # when noised
    noised = perturb.gaussian_noise(grey, seed=0)
    # then the spread is σ (12 288 draws; no clipping is possible within 6σ of 0.5)
    assert abs(float(np.std(noised - 0.5)) - 0.08) < 0.002
    # and black / white images stay inside [0, 1], touching the bound they started at
    black = perturb.gaussian_noise(np.zeros((8, 8, 3)), seed=0)
    white = perturb.gaussian_noise(np.ones((8, 8, 3)), seed=0)
    assert black.min() == 0.0 and 0.0 < black.max() <= 1.0
    assert white.max() == 1.0 and 0.0 <= white.min() < 1.0


def test_gaussian_noise_keeps_float32_and_leaves_the_input_alone():
    image = random_image(dtype=np.float32)
    before = image.copy()
    out = perturb.gaussian_noise(image, seed=5)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(image, before)
    z = np.random.default_rng(5).standard_normal(image.shape) * 0.08
    np.testing.assert_array_equal(out, np.clip(z.astype(np.float32) + image, 0, 1))


# --- Brightness -------------------------------------------------------------------------------

PIXELS = [
    (0.0, 0.0, 0.0),  # black: V = 0, becomes grey V'
    (1.0, 1.0, 1.0),  # white
    (0.3, 0.3, 0.3),  # grey
    (0.2, 0.4, 0.1),  # V + 0.5 < 1
    (0.9, 0.2, 0.5),  # V + 0.5 clips at 1
    (0.1, 0.35, 0.6),
    (0.6, 0.1, 0.1),
]


@pytest.mark.parametrize("c", [0.5, 0.2, -0.3])
def test_brightness_matches_colorsys_round_trip_pixel_by_pixel(c):
    # given pixels covering black, grey, white, unclipped and clipped V
    image = np.array([PIXELS], dtype=np.float64)
    # when brightened
    out = perturb.brightness(image, c=c)
    # then each pixel equals colorsys: RGB → HSV, V ← clip(V + c, 0, 1), HSV → RGB
    for j, rgb in enumerate(PIXELS):
        h, s, v = colorsys.rgb_to_hsv(*rgb)
        expected = colorsys.hsv_to_rgb(h, s, min(max(v + c, 0.0), 1.0))
        np.testing.assert_allclose(out[0, j], expected, rtol=0, atol=1e-12)


def test_brightness_default_is_c_one_half_and_black_becomes_mid_grey():
    image = np.zeros((2, 2, 3))
    np.testing.assert_array_equal(perturb.brightness(image), np.full((2, 2, 3), 0.5))


def test_vectorised_hsv_conversions_match_colorsys_and_brightness_equals_the_round_trip():
    # given a random image
    image = random_image(6, 7, seed=4)
    # when converted with the vectorised helpers
    hsv = perturb.rgb_to_hsv(image)
    # then each pixel matches colorsys both ways
    for i in range(6):
        for j in range(7):
            np.testing.assert_allclose(hsv[i, j], colorsys.rgb_to_hsv(*image[i, j]), atol=1e-12)
            np.testing.assert_allclose(
                perturb.hsv_to_rgb(hsv[i, j]), colorsys.hsv_to_rgb(*hsv[i, j]), atol=1e-12
            )
    # and the fast brightness equals the explicit round trip
    moved = hsv.copy()
    moved[..., 2] = np.clip(moved[..., 2] + 0.5, 0, 1)
    np.testing.assert_allclose(perturb.brightness(image), perturb.hsv_to_rgb(moved), atol=1e-12)


# --- Defocus blur -----------------------------------------------------------------------------


def test_disk_kernel_radius_5_is_the_imagenet_c_disk_and_sums_to_one():
    # when the paper's kernel is built
    kernel = perturb.disk_kernel(5)
    # then it is ImageNet-C's 17×17 grid: a binary disk of 81 lattice points normalised to 1,
    # blurred by a 3×3 Gaussian with σ = 0.5, computed here independently
    assert kernel.shape == (17, 17)
    grid = np.arange(-8, 9)
    xx, yy = np.meshgrid(grid, grid)
    disk = (xx**2 + yy**2 <= 25).astype(float)
    assert disk.sum() == 81
    taps = np.exp(-np.array([1.0, 0.0, 1.0]) / (2 * 0.5**2))
    taps /= taps.sum()
    expected = scipy.signal.convolve2d(disk / 81, np.outer(taps, taps), mode="same")
    np.testing.assert_allclose(kernel, expected, rtol=0, atol=1e-15)
    assert abs(kernel.sum() - 1.0) < 1e-12
    # the centre's whole 3×3 neighbourhood lies in the disk, so it keeps exactly 1/81
    assert kernel[8, 8] == pytest.approx(1 / 81, abs=1e-17)
    # support: the disk dilated by one pixel (radius 6 on the axes, nothing at (6, 2))
    assert kernel[8, 8 + 6] > 0 and kernel[8, 8 + 7] == 0
    assert kernel[8 + 2, 8 + 6] == 0 and kernel[8 + 1, 8 + 6] > 0
    np.testing.assert_allclose(kernel, kernel.T, rtol=0, atol=1e-17)
    np.testing.assert_allclose(kernel, kernel[::-1, ::-1], rtol=0, atol=1e-17)


def test_defocus_blur_equals_direct_correlation_with_reflect_101_border():
    # given a small random image
    image = random_image(20, 23, seed=2)
    # when blurred
    out = perturb.defocus_blur(image)
    # then it equals per-channel direct correlation (scipy "mirror" = cv2 BORDER_REFLECT_101)
    kernel = perturb.disk_kernel(5)
    direct = np.stack(
        [scipy.ndimage.correlate(image[..., c], kernel, mode="mirror") for c in range(3)], axis=-1
    )
    np.testing.assert_allclose(out, np.clip(direct, 0, 1), rtol=0, atol=1e-12)
    # and the float32 path agrees to single precision
    out32 = perturb.defocus_blur(image.astype(np.float32))
    assert out32.dtype == np.float32
    np.testing.assert_allclose(out32, direct, rtol=0, atol=2e-6)


def test_defocus_blur_keeps_a_constant_image_and_other_radii_follow_the_reference():
    flat = np.full((16, 16, 3), 0.25)
    np.testing.assert_allclose(perturb.defocus_blur(flat), flat, atol=1e-12)
    image = random_image(30, 30, seed=9)
    for radius in (3, 8):
        kernel = perturb.disk_kernel(radius)
        direct = np.stack(
            [scipy.ndimage.correlate(image[..., c], kernel, mode="mirror") for c in range(3)], -1
        )
        np.testing.assert_allclose(
            perturb.defocus_blur(image, radius=radius), np.clip(direct, 0, 1), atol=1e-12
        )


# --- JPEG -------------------------------------------------------------------------------------


def textured_image():
    rng = np.random.default_rng(11)
    yy, xx = np.mgrid[0:48, 0:64] / 48.0
    smooth = np.stack([np.sin(6 * xx) * 0.4 + 0.5, yy, (xx + yy) / 2.4], axis=-1)
    return np.clip(smooth + rng.normal(0, 0.05, smooth.shape), 0, 1)


def test_jpeg_compression_equals_pillow_encode_decode_at_quality_30():
    # given an image
    image = textured_image()
    # when compressed with the default quality
    out = perturb.jpeg_compression(image)
    # then it equals Pillow's own round trip of the 8-bit image at quality 30
    buffer = io.BytesIO()
    Image.fromarray(np.rint(image * 255).astype(np.uint8)).save(buffer, "JPEG", quality=30)
    buffer.seek(0)
    expected = np.asarray(Image.open(buffer).convert("RGB")) / 255.0
    np.testing.assert_array_equal(out, expected)
    assert not np.allclose(out, image, atol=1 / 255)


def test_jpeg_file_carries_the_quality_30_tables_and_shrinks_with_quality():
    image = textured_image()
    # when encoded at the paper's quality
    data = perturb.jpeg_encode(image)
    # then its quantisation tables are libjpeg's Annex K tables scaled by 5000/30 = 166
    with Image.open(io.BytesIO(data)) as jpeg:
        tables = jpeg.quantization
    scale = 5000 // 30
    for index, annex in ((0, ANNEX_K_LUMA), (1, ANNEX_K_CHROMA)):
        expected = [min(max((v * scale + 50) // 100, 1), 255) for row in annex for v in row]
        assert list(tables[index]) == expected
    # and lower quality gives smaller files
    sizes = [len(perturb.jpeg_encode(image, quality=q)) for q in (10, 30, 60, 95)]
    assert sizes == sorted(sizes) and len(set(sizes)) == 4


# --- Registry and bad input ---------------------------------------------------------------------


def test_registry_defaults_are_the_papers_values():
    assert {name: dict(entry.defaults) for name, entry in perturb.PERTURBATIONS.items()} == {
        "gaussian_noise": {"sigma": 0.08, "seed": 0},
        "brightness": {"c": 0.5},
        "defocus_blur": {"radius": 5, "alias_blur": 0.5},
        "jpeg_compression": {"quality": 30},
    }
    function, defaults, description = perturb.PERTURBATIONS["brightness"]
    assert function is perturb.brightness and "HSV" in description


def test_perturbation_apply_returns_the_array_and_every_parameter_used():
    image = random_image()
    out, params = perturb.perturbation_apply("gaussian_noise", image, seed=12)
    assert params == {"sigma": 0.08, "seed": 12}
    np.testing.assert_array_equal(out, perturb.gaussian_noise(image, sigma=0.08, seed=12))
    out, params = perturb.perturbation_apply("jpeg_compression", image, quality=50)
    assert params == {"quality": 50}
    with pytest.raises(ValueError, match="unknown perturbation 'rain'"):
        perturb.perturbation_apply("rain", image)
    with pytest.raises(ValueError, match="brightness takes no parameter sigma"):
        perturb.perturbation_apply("brightness", image, sigma=0.1)


@pytest.mark.parametrize("name", sorted(perturb.PERTURBATIONS))
def test_every_perturbation_keeps_shape_dtype_range_and_input(name):
    image = random_image(24, 17, dtype=np.float32)
    before = image.copy()
    out, _ = perturb.perturbation_apply(name, image)
    assert out.shape == image.shape and out.dtype == np.float32
    assert out.min() >= 0.0 and out.max() <= 1.0
    np.testing.assert_array_equal(image, before)


@pytest.mark.parametrize(
    ("image", "message"),
    [
        (np.zeros((4, 4)), "shape H×W×3"),
        (np.zeros((4, 4, 4)), "shape H×W×3"),
        (np.zeros((4, 4, 3), dtype=np.uint8), "float32 or float64"),
        (np.full((4, 4, 3), 1.5), r"lie in \[0, 1\]"),
        (np.full((4, 4, 3), np.nan), r"lie in \[0, 1\]"),
    ],
)
def test_bad_images_are_refused_with_a_clear_message(image, message):
    for function, defaults, _ in perturb.PERTURBATIONS.values():
        with pytest.raises(ValueError, match=message):
            function(image, **defaults)


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("gaussian_noise", {"sigma": -0.1}),
        ("gaussian_noise", {"seed": -1}),
        ("gaussian_noise", {"seed": 1.5}),
        ("gaussian_noise", {"sigma": "0.1"}),
        ("brightness", {"c": float("nan")}),
        ("brightness", {"c": 2.0}),
        ("defocus_blur", {"radius": 0}),
        ("defocus_blur", {"alias_blur": 0.0}),
        ("jpeg_compression", {"quality": 0}),
        ("jpeg_compression", {"quality": 101}),
    ],
)
def test_bad_parameters_are_refused(name, params):
    with pytest.raises(ValueError):
        perturb.perturbation_apply(name, random_image(), **params)
