"""Perturbation wiring: the jobs apply ``curation.perturb`` and ``curation.adversarial`` to the
set's stored images and record each result as a derived Image with its operation and parameters."""

from __future__ import annotations

import numpy as np
import pytest

from annotator.platform.errors import Invalid
from annotator.platform.models import Job
from curation import assets, perturb
from curation.adversarial import encoder_pixels
from curation.models import Image
from curation.recipes.framework.registry import recipe_of
from curation.recipes.framework.stages import stage_start
from curation.recipes.vhexpansion import negations, variants
from curation.recipes.vhexpansion.models import VHNegation, VHVariant
from curation.scorers import scorer_tiny
from evaluation import importers
from evaluation import services as evaluation_services
from tests.curation.recipes.vhexpansion import helpers

pytestmark = pytest.mark.django_db
case_set = helpers.case_set
media = helpers.media


def start(stage: str, case_set, created_by=None, **params):
    """A stage's job as the page's button starts it (its form's fields as Job.params)."""
    return stage_start(
        recipe_of("vhexpansion"), stage, case_set, created_by=created_by, params=params
    )


def test_perturbation_job_records_derivations(
    case_set,
    curator,
    eager,
    django_capture_on_commit_callbacks,
):
    # given a set of three cases
    # when a curator starts the job for noise (σ = 0.1) and JPEG at the paper's quality
    with django_capture_on_commit_callbacks(execute=True):
        job = start(
            "perturb",
            case_set,
            created_by=curator,
            perturbations=["gaussian_noise", "jpeg_compression"],
            params={"gaussian_noise": {"sigma": 0.1}},
            seed=5,
        )
    job.refresh_from_db()
    # then it succeeded with progress at its end, one variant per case and perturbation
    assert (job.status, job.done, job.total) == ("succeeded", 6, 6), job.error
    assert job.result == {
        "variants": 6,
        "images": 6,
        "perturbations": ["gaussian_noise", "jpeg_compression"],
        "skipped": [],
    }
    case = case_set.cases.get(external_id="c2")
    noise = VHVariant.objects.get(case=case, perturbation="gaussian_noise")
    seed = (5 + int(case.image.sha256[:8], 16)) % 2**32
    expected = {"op": "gaussian_noise", "params": {"sigma": 0.1, "seed": seed}}
    # and the derived image records where it came from and how, exactly as the pixels show
    assert (noise.kind, noise.params, noise.job_id) == ("common", expected, job.pk)
    assert noise.image.derived_from_id == case.image_id
    assert noise.image.derivation == expected
    want = perturb.gaussian_noise(assets.image_as_array(case.image), sigma=0.1, seed=seed)
    got = assets.image_as_array(noise.image)
    assert np.array_equal(got, np.rint(want * 255).astype(np.float32) / 255)
    jpeg = VHVariant.objects.get(case=case, perturbation="jpeg_compression")
    assert jpeg.image.derivation == {"op": "jpeg_compression", "params": {"quality": 30}}
    assert jpeg.image.thumbnail


def test_rerun_skips_done_work(case_set, media):
    variants.variants_perturb(case_set=case_set, perturbations=["brightness"])
    images = Image.objects.count()
    again = variants.variants_perturb(
        case_set=case_set, perturbations=["brightness", "defocus_blur"]
    )
    assert again["variants"] == 3
    assert VHVariant.objects.filter(perturbation="brightness").count() == 3
    assert Image.objects.count() == images + 3


def test_shared_images_are_perturbed_once(project, curator, media):
    image, _ = assets.image_ingest(data=helpers.png_bytes(1), name="x.png")
    s = helpers.two_cases(project, "shared", image, image)
    result = variants.variants_perturb(case_set=s, perturbations=["brightness"])
    assert (result["variants"], result["images"]) == (2, 1)
    assert len(set(VHVariant.objects.values_list("image_id", flat=True))) == 1


@pytest.mark.parametrize(
    ("names", "params", "message"),
    [
        ([], None, "Choose at least one perturbation."),
        (["sepia"], None, "Unknown perturbation(s): sepia."),
        (["brightness"], {"brightness": {"gamma": 2}}, "Brightness: brightness takes no parameter"),
        (["brightness"], {"jpeg_compression": {}}, "Parameters given for perturbations not chosen"),
    ],
)
def test_bad_perturbation_requests_are_refused(case_set, names, params, message):
    with pytest.raises(Invalid, match=message.replace("(", r"\(").replace(")", r"\)")):
        start("perturb", case_set, perturbations=names, params=params, seed=0)
    assert Job.objects.count() == 0


def test_adversarial_job_records_cosine_and_linf(
    case_set,
    curator,
    eager,
    django_capture_on_commit_callbacks,
):
    # given the tiny random-weights scorer and c3 marked as triggering VH at import

    scorer = scorer_tiny()
    case_set.cases.filter(external_id="c3").update(triggers_vh=True)
    # when I-FGSM runs for 4 steps (the paper's branches, shortened for the test)
    with django_capture_on_commit_callbacks(execute=True):
        job = start(
            "adversarial",
            case_set,
            created_by=curator,
            scorer_id=scorer.pk,
            method="ifgsm",
            steps=4,
        )
    job.refresh_from_db()
    # its progress counts attack steps: 3 images × 4 steps
    assert (job.status, job.done, job.total) == ("succeeded", 12, 12), job.error
    assert job.message == "3 adversarial variants"
    variants = {v.case.external_id: v for v in VHVariant.objects.select_related("case", "image")}
    assert sorted(variants) == ["c1", "c2", "c3"]
    for key, variant in variants.items():
        params = variant.params["params"]
        # then each records its branch, the final cosine and the ℓ∞ norm it used (≤ ε)
        assert variant.triggers_vh is (key == "c3")
        assert params["maximise"] is (key == "c3")
        assert params["init"] == ("random_sign" if key == "c3" else "zero")
        assert (params["steps"], params["steps_run"], params["size"]) == (4, 4, 32)
        assert variant.linf == params["linf"] and variant.linf <= 8 / 255 + 1e-6
        assert variant.final_cosine == params["final_cosine"] and -1 <= variant.final_cosine <= 1
        assert variant.image.derived_from_id == variant.case.image_id
        assert variant.image.derivation["op"] == "ifgsm"
        assert (variant.image.width, variant.image.height) == (32, 32)
    # and the perturbed pixels stay within ε of the encoder-sized original (8-bit rounding aside)

    v = variants["c1"]
    original = encoder_pixels(assets.image_as_array(v.case.image), size=32).permute(1, 2, 0)
    diff = np.abs(assets.image_as_array(v.image) - original.numpy()).max()
    assert diff <= 8 / 255 + 0.5 / 255 + 1e-6


def test_adversarial_branch_from_a_model_run(case_set, media):
    # given a published expanded set and a run that answers c1's original question wrong

    for case in case_set.cases.all():
        VHNegation.objects.create(
            case=case,
            attempt=1,
            question=f"not {case.question}",
            answer=negations.flip(case.answer),
            status="accepted",
        )
    version = helpers.publish(case_set, "v1")
    content = "\n".join(
        [
            '{"id": "c1:original:q", "output": "No."}',
            '{"id": "c2:original:q", "output": "No"}',
        ]
    )
    run = evaluation_services.run_import(
        version=version, model_name="m", rows=importers.parse_predictions("vhexpansion", content)
    )
    # when the branches are read from the run
    found = variants.branches_from_run(case_set=case_set, run=run)
    # then c1 (answered wrong) triggers VH, c2 does not, c3 (no answer) is not decided
    ids = dict(case_set.cases.values_list("external_id", "pk"))
    assert found == {ids["c1"]: True, ids["c2"]: False}


def test_adversarial_requests_are_checked_at_the_edge(case_set):

    with pytest.raises(Invalid, match="Choose a scorer"):
        start("adversarial", case_set, scorer_id=None, method="ifgsm")
    with pytest.raises(Invalid, match="Choose I-FGSM or PGD"):
        start("adversarial", case_set, scorer_id=scorer_tiny().pk, method="fgsm")
    with pytest.raises(Invalid, match="Choose a model run"):
        start(
            "adversarial",
            case_set,
            scorer_id=scorer_tiny().pk,
            method="pgd",
            branch="run",
            run_id=12345,
        )
    assert Job.objects.count() == 0


def test_an_image_too_small_for_the_blur_is_reported_and_the_rest_goes_on(project, media):
    tiny, _ = assets.image_ingest(data=helpers.png_bytes(1, size=6), name="tiny.png")
    fine, _ = assets.image_ingest(data=helpers.png_bytes(2, size=24), name="fine.png")
    s = helpers.two_cases(project, "sizes", tiny, fine)
    result = variants.variants_perturb(case_set=s, perturbations=["defocus_blur"])
    assert result["variants"] == 1
    assert result["skipped"] == [
        {
            "image": tiny.sha256,
            "perturbation": "defocus_blur",
            "error": "image 6×6 is too small for a defocus kernel of radius 5",
        }
    ]
    assert list(VHVariant.objects.values_list("case__image_id", flat=True)) == [fine.pk]
