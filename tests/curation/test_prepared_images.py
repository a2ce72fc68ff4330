"""A stored image's data URL is made once per process (``gateway.images.prepare_image``): the
next call with the same image, in the same step or a later one, reads no file; each caller gets
a record of its own; the kept URLs stay within their byte budget, oldest out first."""

from __future__ import annotations

import pytest

from curation import assets
from curation.gateway import images
from curation.gateway.kept import Kept
from tests.curation.fixtures_assets import png

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def nothing_kept(monkeypatch):
    monkeypatch.setattr(images, "_kept", Kept(images.KEPT_BYTES, weight=images._kept.weight_of))


def test_a_stored_image_is_read_once_and_each_caller_gets_its_own_record(media):
    image, _ = assets.image_ingest(data=png(), name="a.png")
    first = images.prepare_image(image)
    # When its file is gone, the kept data URL is still the image's (the key is its content)
    (media / image.file.name).unlink()
    second = images.prepare_image(image)
    assert second.data_url == first.data_url and second.placeholder == first.placeholder
    assert (
        second.record
        == first.record
        == {
            "id": image.pk,
            "sha256": image.sha256,
            "mime": "image/png",
            "bytes": first.record["bytes"],
        }
    )
    second.record["id"] = None  # a caller's change reaches nobody else
    assert images.prepare_image(image).record["id"] == image.pk


def test_kept_urls_stay_within_the_budget_oldest_out_first(media, monkeypatch):
    made = [
        assets.image_ingest(data=png(colour=(10 + k, 0, 0)), name=f"{k}.png")[0] for k in range(5)
    ]
    one = len(images.prepare_image(made[0]).data_url)  # the PNGs are all of this length
    budget = 4 * one + 10  # room for four
    monkeypatch.setattr(images, "_kept", Kept(budget, weight=images._kept.weight_of))
    for image in (made[1], made[2], made[3], made[0]):  # made[0] used again: the newest
        images.prepare_image(image)
    images.prepare_image(made[4])  # over the budget: the oldest (made[1]) goes
    kept = [key[0] for key in images._kept.keys()]
    assert kept == [made[k].sha256 for k in (2, 3, 0, 4)]
    assert images._kept.weight == 4 * one <= budget


def test_raw_bytes_are_not_kept():
    images.prepare_image(png())
    assert len(images._kept) == 0
