"""The demo corpus: real import path, idempotent, and captions that are true of the pictures."""

from __future__ import annotations

import numpy as np
import pytest
from django.db.models import Count
from scipy import ndimage

from curation import assets
from curation.corpora import demo
from curation.models import Caption, Corpus, Image


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def blobs(image: Image, colour: str) -> list[tuple[float, float]]:
    """Centres (x, y) of the regions painted in ``colour`` (its fill, not outline or shadow)."""
    arr = assets.image_as_array(image) * 255
    target = np.array(demo.COLOURS[colour], dtype=np.float32)
    mask = np.abs(arr - target).max(axis=2) < 30
    labels, n = ndimage.label(mask)
    sizes = ndimage.sum(mask, labels, range(1, n + 1))
    keep = [i + 1 for i, size in enumerate(sizes) if size > 150]
    centres = ndimage.center_of_mass(mask, labels, keep)
    return [(float(x), float(y)) for y, x in centres]


def test_demo_corpus_is_built_once_with_three_languages(project, curator):
    corpus = demo.demo_corpus(project=project, created_by=curator)
    again = demo.demo_corpus(project=project)

    assert again.pk == corpus.pk
    assert Corpus.objects.count() == 1
    assert (corpus.name, corpus.slug, corpus.licence) == ("Demo shapes", "demo-shapes", "CC0-1.0")
    assert (corpus.sample_count, corpus.caption_count) == (20, 40)
    languages = dict(
        Caption.objects.filter(sample__corpus=corpus)
        .values_list("language")
        .annotate(n=Count("id"))
    )
    assert languages == {"en": 32, "zh": 4, "hi": 4}
    assert Image.objects.count() == 20
    assert Image.objects.filter(thumbnail="").count() == 0
    assert set(Image.objects.values_list("width", "height")) == {(320, 240)}


def test_count_captions_match_the_shapes_drawn(project):
    corpus = demo.demo_corpus(project=project)
    words = {v: k for k, v in demo.NUMBERS.items()}
    checked = 0
    for sample in corpus.samples.select_related("image").prefetch_related("captions"):
        text = sample.captions.all()[0].text
        parts = text.split()
        if " and " in text or " of " in text or " above " in text:
            continue
        # "two red circles on a blue background"
        count, colour = words[parts[0]], parts[1]
        assert len(blobs(sample.image, colour)) == count, text
        checked += 1
    assert checked == 12


def test_relation_captions_match_the_layout(project):
    corpus = demo.demo_corpus(project=project)
    checked = 0
    for sample in corpus.samples.select_related("image").prefetch_related("captions"):
        text = sample.captions.all()[0].text
        if " to the left of " in text or " above " in text:
            relation = "left" if " to the left of " in text else "above"
            first, second = text.split(" to the left of " if relation == "left" else " above ")
            a_colour, b_colour = first.split()[1], second.split()[1]
            (ax, ay), (bx, by) = blobs(sample.image, a_colour)[0], blobs(sample.image, b_colour)[0]
            assert (ax < bx) if relation == "left" else (ay < by), text
            checked += 1
    assert checked == 6
