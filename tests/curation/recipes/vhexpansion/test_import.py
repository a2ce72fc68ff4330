"""Test-case sets: JSONL/CSV with an image archive or stored images, all or nothing with
line-numbered errors; sets from (image, question, answer) triples and NaturalBench yes/no items."""

from __future__ import annotations

import pytest

from annotator.platform import roles
from annotator.platform.errors import Invalid
from curation import assets
from curation.corpora import MemorySource
from curation.models import Image
from curation.recipes.vhexpansion import case_import, case_sources
from curation.recipes.vhexpansion.models import VHCase, VHCaseSet
from tests.curation.recipes.vhexpansion import helpers
from tests.curation.recipes.vhexpansion.helpers import (
    archive_for,
    case_rows,
    jsonl,
    png_bytes,
)
from tests.factories import ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db
media = helpers.media


def _import(project, curator, content, files=None, filename="cases.jsonl", name="set"):
    return case_import.case_set_import(
        project=project,
        name=name,
        content=content,
        filename=filename,
        source=MemorySource(files) if files is not None else None,
        created_by=curator,
    )


def test_jsonl_with_an_archive_imports_cases_and_images(project, curator, media):
    rows = case_rows()
    rows[2]["category"] = "counting"
    rows[2]["triggers_vh"] = True
    case_set = _import(project, curator, jsonl(rows), archive_for(rows))
    cases = list(case_set.cases.select_related("image").order_by("position"))
    assert [
        (c.external_id, c.question, c.answer, c.source_dataset, c.category, c.triggers_vh)
        for c in cases
    ] == [
        ("c1", "Is there a cat in the image?", "yes", "MMVP", "", None),
        ("c2", "Is the cup on the table?", "no", "MMVP", "", None),
        ("c3", "Are the two dogs sleeping?", "yes", "MMVP", "counting", True),
    ]
    assert [c.image.original_name for c in cases] == ["c1.png", "c2.png", "c3.png"]
    assert all(c.negation_state == "pending" for c in cases)
    assert Image.objects.count() == 3
    assert all(c.image.thumbnail for c in cases)


def test_csv_referencing_stored_images_by_sha_and_id(project, curator, media):
    first, _ = assets.image_ingest(data=png_bytes(1), name="a.png", created_by=curator)
    second, _ = assets.image_ingest(data=png_bytes(2), name="b.png", created_by=curator)
    content = (
        "id,image,image_id,question,answer,source,category\n"
        f"k1,sha256:{first.sha256},,Is it red?,YES,POPE,color\n"
        f'k2,,{second.pk},"Is there a dog,\nor a cat?",no,POPE,existence\n'
    )
    case_set = _import(project, curator, content, filename="cases.csv")
    assert list(case_set.cases.values_list("external_id", "image_id", "question", "answer")) == [
        ("k1", first.pk, "Is it red?", "yes"),
        ("k2", second.pk, "Is there a dog, or a cat?", "no"),
    ]
    assert Image.objects.count() == 2


def test_bad_rows_are_reported_by_line_and_nothing_is_written(project, curator, media):
    content = (
        jsonl(
            [
                {"id": "a", "image": "img/a.png", "question": "Is it red?", "answer": "yes"},
                {"id": "b", "image": "img/b.png", "question": "", "answer": "maybe"},
                {"id": "a", "image": "../x.png", "question": "Q?", "answer": "no"},
            ]
        )
        + "not json\n"
        + jsonl([{"id": "d", "question": "Q?", "answer": "no"}])
    )
    with pytest.raises(Invalid) as exc:
        _import(project, curator, content, {"img/a.png": png_bytes(0)})
    assert exc.value.errors == [
        {"line": 4, "error": "not valid JSON: Expecting value (column 1)"},
        {"line": 2, "error": "missing field 'question'"},
        {"line": 2, "error": "'answer' must be yes or no, got 'maybe'"},
        {"line": 3, "error": "'image' '../x.png' is not a safe relative file name"},
        {"line": 3, "error": "duplicate id 'a' (first on line 1)"},
        {"line": 5, "error": "missing field 'image' (a file of the archive or sha256:<hex>)"},
    ]
    assert (VHCaseSet.objects.count(), VHCase.objects.count(), Image.objects.count()) == (0, 0, 0)


def test_more_unreadable_lines_than_listed_say_so(project, curator, media):
    with pytest.raises(Invalid) as exc:
        _import(project, curator, "not json\n" * 201)
    assert str(exc.value) == (
        "The test-case file has errors; nothing was imported. (the first 200 are listed)"
    )
    assert len(exc.value.errors) == 200


def test_missing_and_broken_images_refuse_the_whole_file(project, curator, media):
    rows = case_rows()
    files = archive_for(rows)
    files["img/c3.png"] = b"GIF89a not really"
    rows.append({"id": "c4", "image": "img/c4.png", "question": "Is it?", "answer": "no"})
    with pytest.raises(Invalid) as exc:
        _import(project, curator, jsonl(rows), files)
    assert exc.value.errors == [{"line": 4, "error": "'img/c4.png' is not in the archive"}]
    rows.pop()
    with pytest.raises(Invalid) as exc:
        _import(project, curator, jsonl(rows), files)
    assert [e["line"] for e in exc.value.errors] == [3]
    assert exc.value.errors[0]["error"].startswith("img/c3.png: ")
    # nothing stayed behind: no rows and no blobs of the two good images
    assert (VHCaseSet.objects.count(), Image.objects.count()) == (0, 0)
    assert list(media.rglob("*.png")) == []


def test_a_file_name_without_an_archive_says_what_to_do(project, curator, media):
    with pytest.raises(Invalid) as exc:
        _import(project, curator, jsonl(case_rows(1)))
    assert exc.value.errors == [
        {
            "line": 1,
            "error": "'img/c1.png' names a file but no archive was uploaded: upload the images "
            "as a .zip or .tar, or reference stored images by image_id or sha256:<hex>",
        }
    ]


def test_images_out_of_reach_are_not_found(project, curator, media):
    # given an image another project's curator uploaded

    stranger = UserFactory(role=roles.CURATOR)
    theirs, _ = assets.image_ingest(data=png_bytes(7), name="t.png", created_by=stranger)
    content = jsonl([{"image_id": theirs.pk, "question": "Is it?", "answer": "yes"}])
    with pytest.raises(Invalid) as exc:
        _import(project, curator, content)
    assert exc.value.errors == [{"line": 1, "error": f"no stored image has id {theirs.pk}"}]


def test_duplicate_set_name_is_refused(project, curator, media):
    rows = case_rows(1)
    _import(project, curator, jsonl(rows), archive_for(rows), name="MMVP")
    with pytest.raises(Invalid, match="already has a test-case set “MMVP”"):
        _import(project, curator, jsonl(rows), archive_for(rows), name="MMVP")
    other = ProjectFactory()
    _import(other, curator, jsonl(rows), archive_for(rows), name="MMVP")
    assert VHCaseSet.objects.filter(name="MMVP").count() == 2


def test_set_from_triples(project, curator, media):
    image, _ = assets.image_ingest(data=png_bytes(3), name="x.png")
    triples = [
        case_sources.Triple(image=image, question="Is it blue?", answer="Yes", source_dataset="NB"),
        case_sources.Triple(image=image, question="Is it  green ?", answer="no", external_id="t2"),
    ]
    case_set = case_sources.case_set_from_triples(
        project=project, name="triples", triples=triples, created_by=curator
    )
    assert list(
        case_set.cases.values_list("external_id", "question", "answer", "source_dataset")
    ) == [("case-1", "Is it blue?", "yes", "NB"), ("t2", "Is it green ?", "no", "")]
    with pytest.raises(Invalid) as exc:
        case_sources.case_set_from_triples(
            project=project,
            name="bad",
            triples=[case_sources.Triple(image=image, question="Q?", answer="perhaps")],
        )
    assert exc.value.errors == [{"line": 1, "error": "the answer must be yes or no, got 'perhaps'"}]


def test_set_from_naturalbench_yes_no_items(project, curator, media):
    from evaluation import importers
    from evaluation import services as evaluation_services

    a, _ = assets.image_ingest(data=png_bytes(10), name="nb_a.png", created_by=curator)
    b, _ = assets.image_ingest(data=png_bytes(11), name="nb_b.png", created_by=curator)
    content = jsonl(
        [
            {
                "Index": "7",
                "Image_0": f"sha256:{a.sha256}",
                "Image_1": "nb_b.png",
                "Question_0": "Is the door open?",
                "Image_0_Question_0": "Yes",
                "Image_1_Question_0": "No",
                "Question_1": "Is the door closed?",
                "Image_0_Question_1": "No",
                "Image_1_Question_1": "Yes",
                "Question_Type": "yes_no",
                "Source": "DOCCI",
            },
            {
                "Index": "8",
                "Image_0": "x.jpg",
                "Image_1": "y.jpg",
                "Question_0": "Which? Option: A:cat; B:dog;",
                "Image_0_Question_0": "A",
                "Image_1_Question_0": "B",
                "Question_1": "Which? Option: A:dog; B:cat;",
                "Image_0_Question_1": "B",
                "Image_1_Question_1": "A",
                "Question_Type": "multiple_choice",
            },
        ]
    )
    benchmark = evaluation_services.benchmark_get_or_create(
        family="naturalbench", name="NB", project=project
    )
    version = evaluation_services.version_create(
        benchmark=benchmark, label="v1", rows=importers.parse_items("naturalbench", content)
    )
    case_set = case_sources.case_set_from_naturalbench(
        project=project, name="nb", version=version, created_by=curator
    )
    assert list(
        case_set.cases.values_list(
            "external_id", "image_id", "question", "answer", "source_dataset"
        )
    ) == [
        ("7:0:0", a.pk, "Is the door open?", "yes", "DOCCI"),
        ("7:0:1", b.pk, "Is the door open?", "no", "DOCCI"),
        ("7:1:0", a.pk, "Is the door closed?", "no", "DOCCI"),
        ("7:1:1", b.pk, "Is the door closed?", "yes", "DOCCI"),
    ]
