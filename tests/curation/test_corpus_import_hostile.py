"""Corpus and recipe imports with hostile text (issue 13, item 5): NUL characters (PostgreSQL
refuses them in text), lone surrogates (not UTF-8 at all), bytes that are not UTF-8 and
over-long lines give a line-numbered message naming the field; never raw exception text; a
refused import deletes what it uploaded."""

from __future__ import annotations

import json

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotator.platform import edge
from annotator.platform.errors import Invalid, LineErrors
from annotator.platform.jobs import job_enqueue
from annotator.platform.models import Job
from curation import corpora as ci
from curation.models import Caption, Corpus, Image, Sample
from curation.recipes.vhexpansion.case_import import parse_case_rows
from evaluation import importers
from tests.curation.fixtures_assets import png, zip_bytes

NUL, SURROGATE = edge.NUL, edge.SURROGATE
ARCHIVE = {"a.png": png(colour=(255, 0, 0)), "b.png": png(colour=(0, 0, 255))}


pytestmark = pytest.mark.usefixtures("media")  # tests/conftest.py


def files_under(media, under: str = "") -> list[str]:
    root = media / under
    return sorted(p.relative_to(media).as_posix() for p in root.rglob("*")) if root.exists() else []


def nothing_written(media) -> None:
    counts = (Corpus.objects.count(), Sample.objects.count(), Caption.objects.count())
    assert counts == (0, 0, 0)
    assert (Image.objects.count(), Job.objects.count()) == (0, 0)
    assert files_under(media) == []


def good_line(name: str) -> str:
    return json.dumps({"file": name, "caption": f"the picture {name}"})


# Manifest text as a person's file holds it: JSON escapes are written out (\\u0000 is the six
# characters of the escape, which json.loads turns into a NUL character).
HOSTILE_MANIFESTS = [
    pytest.param(
        "m.jsonl",
        good_line("a.png") + '\n{"file": "b.png", "caption": "blue\\u0000square"}\n',
        [{"line": 2, "error": f"field “caption”: {NUL}"}],
        id="jsonl-nul-in-caption",
    ),
    pytest.param(
        "m.jsonl",
        '{"file": "a.png", "captions": [{"text": "\\udc80"}]}\n' + good_line("b.png"),
        [{"line": 1, "error": f"field “captions.0.text”: {SURROGATE}"}],
        id="jsonl-lone-surrogate-in-captions",
    ),
    pytest.param(
        "m.jsonl",
        good_line("a.png") + '\n{"file": "b.png", "caption": "blue", "licence": "CC\\u0000"}',
        [{"line": 2, "error": f"field “licence”: {NUL}"}],
        id="jsonl-nul-in-licence",
    ),
    pytest.param(
        "m.jsonl",
        '{"file": "b\\u0000.png", "caption": "blue"}',
        [{"line": 1, "error": f"field “file”: {NUL}"}],
        id="jsonl-nul-in-file-name",
    ),
    pytest.param(
        "m.csv",
        "file,caption\na.png,red\nb.png,bl\x00ue\n",
        [{"line": 3, "error": f"field “caption”: {NUL}"}],
        id="csv-raw-nul-byte",
    ),
    pytest.param(
        "m.csv",
        "file,cap\x00tion\na.png,red\n",
        [{"line": 1, "error": f"the header {NUL}"}],
        id="csv-nul-in-header",
    ),
    pytest.param(
        "results_20130124.token",
        "a.png#0\tred\nb.png#0\tbl\x00ue\n",
        [{"line": 2, "error": f"the line {NUL}"}],
        id="flickr-raw-nul-byte",
    ),
    pytest.param(
        "captions_train2017.json",
        json.dumps(
            {
                "images": [{"id": 1, "file_name": "a.png"}, {"id": 2, "file_name": "b.png"}],
                "annotations": [
                    {"image_id": 1, "caption": "red"},
                    {"image_id": 2, "caption": "PLACEHOLDER"},
                ],
            }
        ).replace("PLACEHOLDER", "\\ud83d"),
        [{"line": "annotations[1]", "error": f"field “caption”: {SURROGATE}"}],
        id="coco-lone-surrogate",
    ),
]


@pytest.mark.parametrize("name, manifest, errors", HOSTILE_MANIFESTS)
def test_hostile_manifest_is_refused_at_the_edge_with_its_line(
    project, curator, media, name, manifest, errors
):
    with pytest.raises(Invalid) as caught:
        ci.corpus_import_start(
            project=project,
            name="Hostile",
            archive=SimpleUploadedFile("images.zip", zip_bytes(ARCHIVE)),
            manifest=SimpleUploadedFile(name, manifest.encode("utf-8", "surrogatepass")),
            created_by=curator,
        )

    assert caught.value.errors == errors
    assert caught.value.message.startswith("1 problem(s) in ")
    assert "Error" not in caught.value.message
    nothing_written(media)


def test_manifest_that_is_not_utf8_names_line_and_byte(project, curator, media):
    manifest = (good_line("a.png") + '\n{"file": "b.png", "caption": "café"}').encode("cp1252")

    with pytest.raises(Invalid) as caught:
        ci.corpus_import_start(
            project=project,
            name="Latin",
            archive=SimpleUploadedFile("images.zip", zip_bytes(ARCHIVE)),
            manifest=SimpleUploadedFile("m.jsonl", manifest),
            created_by=curator,
        )

    assert caught.value.errors == [
        {
            "line": 2,
            "error": "byte 0xE9 at column 34 is not UTF-8 (Latin-1 or Windows-1252 text?)",
        }
    ]
    nothing_written(media)


def test_a_10_mb_caption_line_is_too_long_not_a_zip_bomb(project, curator, media):
    # One letter ten million times compresses a thousand-fold, like a zip bomb's member.
    manifest = good_line("a.png") + "\n" + json.dumps({"file": "b.png", "caption": "a" * 10**7})
    archive = zip_bytes({**ARCHIVE, "manifest.jsonl": manifest.encode()})

    with pytest.raises(Invalid) as caught:
        ci.corpus_import_start(
            project=project,
            name="Long",
            archive=SimpleUploadedFile("images.zip", archive),
            created_by=curator,
        )

    assert caught.value.errors == [{"line": 2, "error": "line 2 is longer than 4 MB"}]
    assert "bomb" not in caught.value.message
    nothing_written(media)


def test_upload_page_lists_hostile_lines_and_keeps_nothing(client, project, curator, media):
    client.force_login(curator)
    manifest = good_line("a.png") + '\n{"file": "b.png", "caption": "x\\u0000y"}'

    response = client.post(
        reverse("curator-project-corpora", args=[project.pk]),
        {
            "name": "Hostile",
            "format": "auto",
            "language": "en",
            "archive": SimpleUploadedFile("images.zip", zip_bytes(ARCHIVE)),
            "manifest": SimpleUploadedFile("m.jsonl", manifest.encode()),
        },
    )

    assert response.status_code == 400
    assert response.context["error"]["errors"] == [{"line": 2, "error": f"field “caption”: {NUL}"}]
    assert f"field “caption”: {NUL}" in response.content.decode()
    nothing_written(media)


def stored_import(project, manifest: bytes) -> dict:
    """An upload as the edge stores it, for a job to import (bypassing the edge's check)."""
    folder = "curation/uploads/0123abcd"
    return {
        "project_id": project.pk,
        "name": "Stored",
        "slug": "stored",
        "archive": default_storage.save(f"{folder}/images.zip", _file(zip_bytes(ARCHIVE))),
        "archive_name": "images.zip",
        "manifest": default_storage.save(f"{folder}/m.jsonl", _file(manifest)),
        "manifest_name": "m.jsonl",
        "format": "jsonl",
        "language": "en",
        "licence": "",
        "source": "",
        "description": "",
    }


def _file(data: bytes):
    from django.core.files.base import ContentFile

    return ContentFile(data)


def test_a_refused_import_job_fails_with_the_line_and_deletes_its_upload(
    project, curator, media, eager, django_capture_on_commit_callbacks
):
    # Given an upload stored for the job whose manifest holds a NUL (PostgreSQL refuses it)
    manifest = (good_line("a.png") + '\n{"file": "b.png", "caption": "x\\u0000y"}').encode()
    params = stored_import(project, manifest)
    assert len(files_under(media, "curation/uploads")) == 3  # the folder and its two files

    # When the import job runs
    with django_capture_on_commit_callbacks(execute=True):
        job = job_enqueue(kind=ci.IMPORT_JOB, params=params, created_by=curator, project=project)

    # Then it fails with the line and field, no raw exception text, and the upload is gone
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED
    assert job.error == (
        f"1 problem(s) in m.jsonl; nothing was imported.\nline 2: field “caption”: {NUL}"
    )
    assert files_under(media, "curation/uploads") == []
    assert (Corpus.objects.count(), Image.objects.count()) == (0, 0)


def test_retrying_a_refused_import_says_the_upload_is_gone(project, curator, media):
    params = stored_import(project, b'{"file": "a.png", "caption": "x\\u0000y"}')
    with pytest.raises(Invalid):
        ci.corpus_import_run(params=params, created_by=curator)

    with pytest.raises(Invalid) as caught:
        ci.corpus_import_run(params=params, created_by=curator)

    assert caught.value.message == (
        "The uploaded file images.zip is no longer stored (a refused import deletes its "
        "upload); upload it again."
    )


def test_a_failure_a_retry_can_fix_keeps_the_upload(project, media):
    params = stored_import(project, good_line("a.png").encode())

    with pytest.raises(ConnectionError):
        with ci.uploads_kept_for_retry([params["archive"], params["manifest"]]):
            raise ConnectionError("the database went away")

    assert files_under(media, "curation/uploads") == [
        "curation/uploads/0123abcd",
        "curation/uploads/0123abcd/images.zip",
        "curation/uploads/0123abcd/m.jsonl",
    ]


# --------------------------------------------------------------------------------------------
# recipe tables (VHExpansion case sets, VisIT CSV and submissions, evaluation imports) share
# evaluation.importers' readers
# --------------------------------------------------------------------------------------------
def test_vhexpansion_case_rows_with_hostile_text_name_line_and_field():
    content = (
        '{"id": "c1", "image": "a.png", "question": "Is it red?", "answer": "yes"}\n'
        '{"id": "c2", "image": "b.png", "question": "Is it \\u0000 blue?", "answer": "no"}\n'
        '{"id": "c3", "image": "b.png", "question": "Is it \\udfff?", "answer": "no"}\n'
    )

    with pytest.raises(Invalid) as caught:
        parse_case_rows(content, "cases.jsonl")

    assert caught.value.errors == [
        {"line": 2, "error": f"field “question”: {NUL}"},
        {"line": 3, "error": f"field “question”: {SURROGATE}"},
    ]


@pytest.mark.parametrize(
    "content, errors",
    [
        pytest.param(
            "id,question\n1,fine\n2,bad\x00\n",
            [{"line": 3, "error": f"field “question”: {NUL}"}],
            id="csv-row",
        ),
        pytest.param(
            "id,quest\x00ion\n1,fine\n",
            [{"line": 1, "error": f"the header {NUL}"}],
            id="csv-header",
        ),
    ],
)
def test_recipe_csv_reader_refuses_hostile_text(content, errors):
    found = LineErrors()

    importers.read_csv(content, found)

    assert found.rows == errors


def test_recipe_jsonl_reader_refuses_hostile_text():
    found = LineErrors()

    rows = importers.read_jsonl('{"a": "ok"}\n{"a": "\\ud800"}\n[{"b": 1}]', found)

    assert rows == [(1, {"a": "ok"})]
    assert found.rows == [
        {"line": 2, "error": f"field “a”: {SURROGATE}"},
        {"line": 3, "error": "each line must be a JSON object"},
    ]


def test_a_refused_visit_dataset_job_deletes_its_stored_csv(project, curator, media):
    from curation.recipes.visit import dataset, pipelines

    pipeline = pipelines.pipeline_create(project=project, name="VisIT", created_by=curator)
    content = (
        "instruction_category,image,instruction,gpt4_prediction,image_dense_captions,"
        "human_ratings_gpt4_correct,human_ratings_problem_in_caption\n"
        "A,https://x.org/a.png,Count \x00them,Five.,Five apples,TRUE,FALSE\n"
    )
    name = default_storage.save("curation/uploads/visit-1-20261124.csv", _file(content.encode()))

    with pytest.raises(Invalid) as caught:
        dataset.dataset_import_run(pipeline, upload=name)

    assert caught.value.errors == [{"line": 2, "error": f"field “instruction”: {NUL}"}]
    assert files_under(media, "curation/uploads") == []
