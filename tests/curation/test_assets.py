"""Image assets: validation at the edge, normalisation, dedup by SHA-256, storage, thumbnails."""

from __future__ import annotations

import base64
import hashlib
import io

import numpy as np
import pytest
from PIL import Image as PILImage

from annotator.platform.models import Job
from curation import assets
from curation.models import Image
from tests.curation.fixtures_assets import (
    gif_two_frames,
    jpeg,
    noisy_jpeg,
    png,
    png_header_only,
    stored,
)

pytestmark = pytest.mark.usefixtures("media")  # tests/conftest.py


def decoded(image: Image) -> PILImage.Image:
    with image.file.open("rb") as handle:
        img = PILImage.open(io.BytesIO(handle.read()))
        img.load()
    return img


# ---------------------------------------------------------------------------------------------
# good files
# ---------------------------------------------------------------------------------------------
def test_a_canonical_png_is_stored_byte_for_byte_under_its_hash(db, media):
    # Given an RGB PNG
    data = png((12, 7))
    sha = hashlib.sha256(data).hexdigest()

    # When it is ingested
    image, created = assets.image_ingest(data=data, name="dir/red.png", licence="CC0-1.0")

    # Then the row records it and the stored bytes are the uploaded ones
    assert created is True
    assert (image.sha256, image.width, image.height, image.format) == (sha, 12, 7, "PNG")
    assert (image.original_format, image.byte_size, image.original_name) == (
        "PNG",
        len(data),
        "red.png",
    )
    assert image.licence == "CC0-1.0"
    assert image.file.name == f"images/{sha[:2]}/{sha}.png"
    assert (media / image.file.name).read_bytes() == data


def test_the_same_bytes_again_dedupe_to_one_row_and_one_file(db, media):
    data = jpeg((9, 9))
    first, created_first = assets.image_ingest(data=data, name="a.jpg")

    second, created_second = assets.image_ingest(data=data, name="copy.jpeg", source="elsewhere")

    assert (created_first, created_second) == (True, False)
    assert second.pk == first.pk
    assert second.source == ""  # the first-seen provenance stays
    assert Image.objects.count() == 1
    assert stored(media) == [first.file.name]


def test_a_lost_blob_is_written_again_on_the_next_ingest(db, media):
    data = png()
    image, _ = assets.image_ingest(data=data, name="a.png")
    (media / image.file.name).unlink()

    again, created = assets.image_ingest(data=data, name="a.png")

    assert (again.pk, created) == (image.pk, False)
    assert (media / image.file.name).read_bytes() == data


def test_exif_orientation_is_applied(db):
    # Given a 40×20 JPEG, left half red and right half blue, whose EXIF says "rotate 90° CW"
    raw = PILImage.new("RGB", (40, 20), (0, 0, 255))
    raw.paste((255, 0, 0), (0, 0, 20, 20))
    exif = PILImage.Exif()
    exif[assets.EXIF_ORIENTATION] = 6
    buf = io.BytesIO()
    raw.save(buf, "JPEG", quality=95, exif=exif)

    # When it is ingested
    image, _ = assets.image_ingest(data=buf.getvalue(), name="phone.jpg")

    # Then it is stored upright (20×40, the left half now on top) with no orientation tag left
    assert (image.width, image.height, image.format) == (20, 40, "JPEG")
    arr = assets.image_as_array(image)
    assert arr.shape == (40, 20, 3)
    assert arr[5, 10].round(1).tolist() == [1.0, 0.0, 0.0]
    assert arr[35, 10].round(1).tolist() == [0.0, 0.0, 1.0]
    assert decoded(image).getexif().get(assets.EXIF_ORIENTATION) is None


def test_cmyk_jpeg_becomes_rgb_jpeg_and_dedupes_on_reupload(db):
    data = jpeg((8, 8), colour=(0, 255, 255, 0), mode="CMYK")  # pure red in CMYK

    image, created = assets.image_ingest(data=data, name="print.jpg")
    again, created_again = assets.image_ingest(data=data, name="print.jpg")

    assert (image.format, image.original_format) == ("JPEG", "JPEG CMYK")
    assert decoded(image).mode == "RGB"
    assert np.abs(assets.image_as_array(image)[4, 4] - [1, 0, 0]).max() < 0.05
    assert (created, created_again, again.pk) == (True, False, image.pk)
    assert image.sha256 == hashlib.sha256(image.file.open("rb").read()).hexdigest()


def test_palette_png_with_transparency_is_flattened_over_white(db):
    # Given a palette PNG: index 0 transparent, index 1 green
    img = PILImage.new("P", (4, 2), 0)
    img.putpalette([0, 0, 0, 0, 200, 0] + [0] * 762)
    img.putpixel((3, 1), 1)
    buf = io.BytesIO()
    img.save(buf, "PNG", transparency=0)

    image, _ = assets.image_ingest(data=buf.getvalue(), name="icon.png")

    assert (image.format, image.original_format) == ("PNG", "PNG P")
    stored = decoded(image)
    assert stored.mode == "RGB"
    assert stored.getpixel((0, 0)) == (255, 255, 255)
    assert stored.getpixel((3, 1)) == (0, 200, 0)


def test_la_and_rgba_pngs_are_flattened_over_white(db):
    la = png((2, 2), colour=(90, 0), mode="LA")
    rgba = png((2, 2), colour=(255, 0, 0, 128), mode="RGBA")

    la_image, _ = assets.image_ingest(data=la, name="la.png")
    rgba_image, _ = assets.image_ingest(data=rgba, name="rgba.png")

    assert la_image.original_format == "PNG LA"
    assert decoded(la_image).getpixel((0, 0)) == (255, 255, 255)  # alpha 0: only white shows
    assert rgba_image.original_format == "PNG RGBA"
    assert decoded(rgba_image).getpixel((0, 0)) == (255, 127, 127)


def test_a_gif_keeps_its_first_frame_as_png(db):
    image, _ = assets.image_ingest(data=gif_two_frames(), name="anim.gif")

    assert (image.format, image.width, image.height) == ("PNG", 6, 4)
    assert image.original_format == "GIF P 2f"
    assert decoded(image).getpixel((0, 0)) == (255, 0, 0)
    assert image.file.name.endswith(".png")


# ---------------------------------------------------------------------------------------------
# bad files: a clear message naming the file, nothing stored
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("empty.png", b"", "the file is empty (0 bytes)"),
        (
            "notes.png",
            b"just some text, not a picture",
            "not a JPEG, PNG, WEBP or GIF image (or its header is damaged)",
        ),
        ("photo.jpg", png(), "the name says .jpg but the content is PNG"),
        ("photo.png", jpeg(), "the name says .png but the content is JPEG"),
        ("scan.bmp", png(), "“.bmp” files are not accepted"),
        (
            "huge.png",
            png_header_only(100_000, 100_000),
            "more pixels than the limit of 40,000,000 (decompression-bomb guard)",
        ),
        ("cut.jpg", noisy_jpeg()[:3000], "the JPEG data is damaged or truncated"),
    ],
)
def test_bad_files_are_rejected_with_their_name(db, media, name, data, reason):
    with pytest.raises(assets.ImageRejected) as info:
        assets.image_ingest(data=data, name=name)

    assert info.value.name == name
    assert str(info.value).startswith(f"{name}: {reason}")
    assert Image.objects.count() == 0
    assert stored(media) == []


def test_a_bmp_named_png_says_what_it_is(db):
    buf = io.BytesIO()
    PILImage.new("RGB", (2, 2)).save(buf, "BMP")

    with pytest.raises(assets.ImageRejected) as info:
        assets.image_normalise(data=buf.getvalue(), name="a.png")

    assert info.value.reason == "not a JPEG, PNG, WEBP or GIF image (it looks like BMP)"


def test_decompression_bomb_guard_uses_the_setting(db, settings):
    settings.BLINDSPOT_MAX_IMAGE_PIXELS = 1000

    with pytest.raises(assets.ImageRejected) as info:
        assets.image_ingest(data=png((40, 40)), name="bomb.png")

    assert info.value.reason == (
        "40×40 = 1,600 pixels is more than the limit of 1,000 (decompression-bomb guard)"
    )
    assert Image.objects.count() == 0


def test_byte_limit_uses_the_setting(db, settings):
    settings.BLINDSPOT_MAX_IMAGE_BYTES = 50
    data = png((20, 20))

    with pytest.raises(assets.ImageRejected) as info:
        assets.image_ingest(data=data, name="big.png")

    assert info.value.reason == "the file is 0.0 MB; the limit is 0.0 MB"
    assert Image.objects.count() == 0


# ---------------------------------------------------------------------------------------------
# arrays, data URLs, derived images
# ---------------------------------------------------------------------------------------------
def test_image_from_array_stores_a_png_derivative_with_its_provenance(db):
    parent, _ = assets.image_ingest(
        data=png((4, 3)), name="p.png", source="coco:1", licence="CC BY 4.0", attribution="A. B."
    )
    arr = np.zeros((3, 4, 3), dtype=np.float32)
    arr[..., 1] = 0.5
    arr[0, 0] = [1.0, 1.2, -0.3]  # out of range values are clipped

    image, created = assets.image_from_array(
        array=arr, name="blur.jpg", derived_from=parent, derivation={"op": "tint", "params": {}}
    )

    assert created is True
    assert (image.format, image.original_name, image.width, image.height) == (
        "PNG",
        "blur.png",
        4,
        3,
    )
    assert (image.derived_from_id, image.derivation) == (parent.pk, {"op": "tint", "params": {}})
    assert (image.source, image.licence, image.attribution) == ("coco:1", "CC BY 4.0", "A. B.")
    back = assets.image_as_array(image)
    assert back.dtype == np.float32
    assert back[0, 0].tolist() == [1.0, 1.0, 0.0]
    assert back[2, 3].tolist() == pytest.approx([0.0, 128 / 255, 0.0])


@pytest.mark.parametrize("shape", [(4, 4), (4, 4, 4), (0, 3, 3)])
def test_image_from_array_refuses_other_shapes(db, shape):
    with pytest.raises(ValueError, match="expected an H×W×3 array"):
        assets.image_from_array(array=np.zeros(shape), name="x", derived_from=None, derivation={})


def test_image_from_array_refuses_nan(db):
    arr = np.full((2, 2, 3), np.nan)
    with pytest.raises(ValueError, match="NaN"):
        assets.image_from_array(array=arr, name="x", derived_from=None, derivation=None)


def test_data_url_is_the_stored_file_or_a_shrunk_copy(db):
    data = png((40, 20))
    image, _ = assets.image_ingest(data=data, name="a.png")

    small = assets.image_data_url(image)
    shrunk = assets.image_data_url(image, max_side=16)

    assert small == "data:image/png;base64," + base64.b64encode(data).decode()
    assert shrunk.startswith("data:image/png;base64,")
    img = PILImage.open(io.BytesIO(base64.b64decode(shrunk.split(",", 1)[1])))
    assert img.size == (16, 8)


# ---------------------------------------------------------------------------------------------
# thumbnails
# ---------------------------------------------------------------------------------------------
def test_thumbnail_is_a_256px_webp_made_once(db, media):
    image, _ = assets.image_ingest(data=png((512, 256)), name="wide.png")
    assert assets.thumb_url(image) == f"/media/{image.file.name}"  # falls back to the image

    made = assets.image_thumbnail(image)
    again = assets.image_thumbnail(image)

    image.refresh_from_db()
    assert (made, again) == (True, False)
    assert image.thumbnail.name == f"thumbs/{image.sha256[:2]}/{image.sha256}.webp"
    thumb = PILImage.open(media / image.thumbnail.name)
    assert (thumb.format, thumb.size) == ("WEBP", (256, 128))
    assert assets.thumb_url(image) == f"/media/{image.thumbnail.name}"
    assert assets.display_size(image) == (256, 128)


def test_thumbnail_job_runs_in_batches_and_is_idempotent(
    db, eager, django_capture_on_commit_callbacks
):
    # Given three images, one of which already has its thumbnail
    images = [assets.image_ingest(data=png((30 + i, 20)), name=f"{i}.png")[0] for i in range(3)]
    assets.image_thumbnail(images[0])

    # When the job is started for all three (and the transaction commits)
    with django_capture_on_commit_callbacks(execute=True):
        job = assets.thumbnails_start(image_ids=[i.pk for i in images])

    # Then only the two without a thumbnail were queued and made
    job.refresh_from_db()
    assert job.kind == "curation.make_thumbnails"
    assert job.params == {"image_ids": sorted(i.pk for i in images[1:])}
    assert (job.status, job.done, job.total) == (Job.Status.SUCCEEDED, 2, 2)
    assert job.result == {"made": 2, "skipped": 0, "failed": []}
    assert Image.objects.filter(thumbnail="").count() == 0
    # and a second run (a redelivered message) changes nothing
    assert assets.thumbnails_make(image_ids=[i.pk for i in images], batch=2) == {
        "made": 0,
        "skipped": 3,
        "failed": [],
    }
    assert assets.thumbnails_start(image_ids=[i.pk for i in images]) is None


def test_thumbnail_job_reports_an_unreadable_blob_and_goes_on(db, media):
    broken, _ = assets.image_ingest(data=png((10, 10)), name="a.png")
    fine, _ = assets.image_ingest(data=png((11, 10)), name="b.png")
    (media / broken.file.name).write_bytes(b"garbage")

    result = assets.thumbnails_make(image_ids=[broken.pk, fine.pk])

    assert result == {"made": 1, "skipped": 0, "failed": [broken.pk]}


def test_webp_is_kept_and_webp_with_alpha_becomes_png(db):
    plain, alpha = io.BytesIO(), io.BytesIO()
    PILImage.new("RGB", (8, 8), (10, 200, 10)).save(plain, "WEBP", lossless=True)
    PILImage.new("RGBA", (8, 8), (10, 200, 10, 0)).save(alpha, "WEBP", lossless=True)

    kept, _ = assets.image_ingest(data=plain.getvalue(), name="a.webp")
    flat, _ = assets.image_ingest(data=alpha.getvalue(), name="b.webp")

    assert (kept.format, kept.original_format) == ("WEBP", "WEBP")
    assert kept.sha256 == hashlib.sha256(plain.getvalue()).hexdigest()
    assert (flat.format, flat.original_format) == ("PNG", "WEBP RGBA")
    assert decoded(flat).getpixel((0, 0)) == (255, 255, 255)


def test_a_multi_picture_jpeg_keeps_its_first_picture(db):
    buf = io.BytesIO()
    first = PILImage.new("RGB", (8, 8), (250, 0, 0))
    first.save(buf, "MPO", save_all=True, append_images=[PILImage.new("RGB", (8, 8), (0, 0, 250))])

    image, _ = assets.image_ingest(data=buf.getvalue(), name="camera.jpg")

    assert (image.format, image.original_format) == ("JPEG", "MPO 2f")
    assert np.abs(assets.image_as_array(image)[4, 4] - [0.98, 0, 0]).max() < 0.05


def test_sixteen_bit_grayscale_keeps_its_top_eight_bits(db):
    image, _ = assets.image_ingest(data=png((3, 2), colour=40000, mode="I;16"), name="depth.png")

    stored = decoded(image)
    assert (image.format, stored.mode, stored.getpixel((0, 0))) == ("PNG", "L", 40000 >> 8)
