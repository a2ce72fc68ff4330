"""Corpus import: every format, bad files and bad lines, archives that try to escape, atomicity."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from annotator.platform.errors import Invalid
from annotator.platform.models import Job
from curation import corpora as ci
from curation.models import Caption, Corpus, Image, Sample
from tests.curation.fixtures_assets import jpeg, noisy_jpeg, png, stored, tar_bytes, zip_bytes

pytestmark = pytest.mark.usefixtures("media")  # tests/conftest.py


def jsonl(*rows: dict) -> bytes:
    return "\n".join(json.dumps(r, ensure_ascii=False) for r in rows).encode()


RED, GREEN, BLUE = png(colour=(255, 0, 0)), png(colour=(0, 255, 0)), png(colour=(0, 0, 255))


def run(project, files: dict[str, bytes], manifest: bytes | None = None, name="m.jsonl", **kw):
    return ci.corpus_import(
        project=project,
        name=kw.pop("corpus", "Shapes"),
        source=kw.pop("source", None) or ci.MemorySource(files, label="shapes.zip"),
        manifest=manifest,
        manifest_name=name,
        thumbnails=kw.pop("thumbnails", "none"),
        **kw,
    )


def nothing_written(media) -> None:
    assert (Corpus.objects.count(), Sample.objects.count(), Caption.objects.count()) == (0, 0, 0)
    assert Image.objects.count() == 0
    assert stored(media, "images") == []


def captions_of(corpus: Corpus) -> list[tuple[str, int, str, str]]:
    return list(
        Caption.objects.filter(sample__corpus=corpus)
        .order_by("sample__position", "position")
        .values_list("sample__source_id", "position", "language", "text")
    )


# ---------------------------------------------------------------------------------------------
# good imports
# ---------------------------------------------------------------------------------------------
def test_jsonl_manifest_inside_a_zip(project, curator, media):
    # Given a zip with a top folder, three images (two identical) and a JSONL manifest
    manifest = jsonl(
        {"file": "red.png", "caption": "a red square", "licence": "CC0-1.0"},
        {
            "file": "img/green.png",
            "captions": ["a green square", {"text": "一个绿色正方形", "language": "zh_hans"}],
            "source_id": "g-1",
            "source": "https://example.org/g",
        },
        {"file": "copy-of-red.png", "caption": "रंग लाल", "language": "hi"},
    )
    archive = zip_bytes(
        {
            "shapes/red.png": RED,
            "shapes/img/green.png": GREEN,
            "shapes/copy-of-red.png": RED,
            "shapes/unused.png": BLUE,
            "shapes/manifest.jsonl": manifest,
            "__MACOSX/shapes/._red.png": b"junk",
        }
    )
    source = ci.open_source(io.BytesIO(archive), label="shapes.zip")

    # When it is imported
    result = run(project, {}, source=source, licence="CC BY 4.0", created_by=curator)

    # Then every sample, caption and language is there, and identical images are stored once
    corpus = Corpus.objects.get()
    assert result == {
        "corpus_id": corpus.pk,
        "format": "jsonl",
        "manifest": "shapes/manifest.jsonl",
        "samples": 3,
        "captions": 4,
        "images_new": 2,
        "images_reused": 0,
        "skipped_missing_images": 0,
        "skipped_uncaptioned": 0,
        "ignored_files": 1,
    }
    assert (corpus.name, corpus.slug, corpus.sample_count, corpus.caption_count) == (
        "Shapes",
        "shapes",
        3,
        4,
    )
    assert captions_of(corpus) == [
        ("red.png", 0, "en", "a red square"),
        ("g-1", 0, "en", "a green square"),
        ("g-1", 1, "zh-Hans", "一个绿色正方形"),
        ("copy-of-red.png", 0, "hi", "रंग लाल"),
    ]
    samples = list(corpus.samples.select_related("image").order_by("position"))
    assert samples[0].image_id == samples[2].image_id
    assert [s.licence for s in samples] == ["CC0-1.0", "CC BY 4.0", "CC BY 4.0"]
    assert samples[1].image.source == "https://example.org/g"
    assert samples[0].image.original_name == "red.png"
    assert Image.objects.count() == 2
    assert len(stored(media, "images")) == 2


def test_csv_manifest_in_a_tar_gz_groups_rows_of_one_file(project, media):
    manifest = (
        'image,caption,lang\na.png,a red square,en\na.png,"a square, red",en\nb.png,正方形,zh\n'
    ).encode()
    source = ci.open_source(
        io.BytesIO(tar_bytes({"a.png": RED, "b.png": GREEN, "captions.csv": manifest})),
        label="set.tgz",
    )

    result = run(project, {}, source=source)

    corpus = Corpus.objects.get()
    assert (result["format"], result["samples"], result["captions"]) == ("csv", 2, 3)
    assert captions_of(corpus) == [
        ("a.png", 0, "en", "a red square"),
        ("a.png", 1, "en", "a square, red"),
        ("b.png", 0, "zh", "正方形"),
    ]


def test_coco_captions_with_a_folder_skip_absent_and_uncaptioned_images(project, tmp_path):
    # Given a folder with two of the three images a COCO file lists
    folder = tmp_path / "val2014"
    folder.mkdir()
    (folder / "COCO_val2014_000000000001.jpg").write_bytes(jpeg(colour=(10, 20, 30)))
    (folder / "COCO_val2014_000000000002.jpg").write_bytes(jpeg(colour=(30, 20, 10)))
    coco = {
        "licenses": [{"id": 4, "name": "Attribution License", "url": "http://cc/by/2.0"}],
        "images": [
            {
                "id": 1,
                "file_name": "COCO_val2014_000000000001.jpg",
                "license": 4,
                "coco_url": "http://images.cocodataset.org/val2014/1.jpg",
            },
            {"id": 2, "file_name": "COCO_val2014_000000000002.jpg"},
            {"id": 3, "file_name": "COCO_val2014_000000000003.jpg"},
        ],
        "annotations": [
            {"id": 10, "image_id": 1, "caption": "A man riding a wave on a surfboard."},
            {"id": 11, "image_id": 1, "caption": "A surfer in the ocean."},
            {"id": 12, "image_id": 3, "caption": "A cat on a couch."},
        ],
    }

    # When imported with the caption file uploaded separately
    result = run(
        project,
        {},
        manifest=json.dumps(coco).encode(),
        name="captions_val2014.json",
        source=ci.open_source(folder),
    )

    # Then image 1 is imported with its licence and URL; 2 (no caption) and 3 (absent) are counted
    corpus = Corpus.objects.get()
    assert (result["format"], result["samples"], result["captions"]) == ("coco", 1, 2)
    assert (result["skipped_missing_images"], result["skipped_uncaptioned"]) == (1, 1)
    assert result["ignored_files"] == 1
    sample = corpus.samples.select_related("image").get()
    assert (sample.source_id, sample.licence) == ("1", "Attribution License")
    assert sample.image.source == "http://images.cocodataset.org/val2014/1.jpg"
    assert [c[3] for c in captions_of(corpus)] == [
        "A man riding a wave on a surfboard.",
        "A surfer in the ocean.",
    ]


@pytest.mark.parametrize(
    ("name", "content"),
    [
        (
            "results_20130124.token",
            "100.jpg#0\tTwo dogs play .\n100.jpg#1\tDogs in grass .\n200.jpg#0\tA man sings .\n",
        ),
        (
            "results.csv",
            "image_name| comment_number| comment\n100.jpg| 0| Two dogs play .\n"
            "100.jpg| 1| Dogs in grass .\n200.jpg| 0| A man sings .\n",
        ),
    ],
)
def test_flickr30k_caption_files(project, name, content):
    files = {"flickr30k_images/100.jpg": jpeg(), "flickr30k_images/200.jpg": noisy_jpeg()}

    result = run(project, files, manifest=content.encode(), name=name)

    corpus = Corpus.objects.get()
    assert (result["format"], result["samples"], result["captions"]) == ("flickr", 2, 3)
    assert captions_of(corpus) == [
        ("100", 0, "en", "Two dogs play ."),
        ("100", 1, "en", "Dogs in grass ."),
        ("200", 0, "en", "A man sings ."),
    ]


def test_reimporting_the_same_images_reuses_them(project, media):
    manifest = jsonl({"file": "a.png", "caption": "red"}, {"file": "b.png", "caption": "green"})
    run(project, {"a.png": RED, "b.png": GREEN}, manifest, corpus="First")
    files_before = stored(media, "images")

    result = run(project, {"x/a.png": RED, "x/b.png": GREEN}, manifest, corpus="Second")

    assert (result["images_new"], result["images_reused"]) == (0, 2)
    assert Image.objects.count() == 2
    assert stored(media, "images") == files_before
    assert set(Sample.objects.values_list("image_id", flat=True)) == set(
        Image.objects.values_list("pk", flat=True)
    )


# ---------------------------------------------------------------------------------------------
# bad manifests: every bad line at once, with its number; nothing written
# ---------------------------------------------------------------------------------------------
def test_bad_jsonl_lines_are_all_reported_with_line_numbers(project, media):
    manifest = (
        b'{"file": "a.png", "caption": "fine"}\n'
        b"{not json\n"
        b'{"file": "a2.png"}\n'
        b"\n"
        b'{"file": "a3.png", "caption": "x", "language": "english!"}\n'
        b'{"file": "../../etc/passwd", "caption": "x"}\n'
        b'{"file": "/abs.png", "caption": "x"}\n'
        b'["a list"]\n'
        b'{"file": "a.png", "caption": "again"}\n'
        b'{"file": "gone.png", "caption": "missing"}\n'
    )
    files = {"a.png": RED, "a2.png": RED, "a3.png": RED}

    with pytest.raises(Invalid) as info:
        run(project, files, manifest)

    assert info.value.message == "8 problem(s) in m.jsonl; nothing was imported."
    assert info.value.errors == [
        {
            "line": 2,
            "error": "not valid JSON: Expecting property name enclosed in double quotes (column 2)",
        },
        {"line": 3, "error": "no caption: give “caption” (text) or “captions” (a list)"},
        {
            "line": 5,
            "error": "“english!” is not a BCP 47 language tag (en, zh, zh-Hans, hi, pt-BR)",
        },
        {"line": 6, "error": "unsafe path “../../etc/passwd”: it must be relative, without “..”"},
        {"line": 7, "error": "unsafe path “/abs.png”: it must be relative, without “..”"},
        {"line": 8, "error": 'expected a JSON object such as {"file": "a.jpg", "caption": "…"}'},
        {"line": 9, "error": "source_id “a.png” is already used on line 1"},
        {"line": 10, "error": "“gone.png” is not in shapes.zip"},
    ]
    nothing_written(media)


def test_a_file_the_manifest_names_but_the_archive_lacks_is_a_line_error(project, media):
    manifest = jsonl({"file": "a.png", "caption": "red"}, {"file": "b.png", "caption": "green"})

    with pytest.raises(Invalid) as info:
        run(project, {"a.png": RED}, manifest)

    assert info.value.errors == [{"line": 2, "error": "“b.png” is not in shapes.zip"}]
    nothing_written(media)


def test_csv_problems_name_their_lines(project, media):
    manifest = (
        b"file,caption\n"
        b"a.png,fine\n"
        b"b.png,a caption, with an unquoted comma\n"
        b"c.png,\n"
        b'"d.png","multi\nline"\n'
        b"e.png,x,y\n"
    )

    with pytest.raises(Invalid) as info:
        run(project, {"a.png": RED}, manifest, name="m.csv")

    assert info.value.errors == [
        {
            "line": 3,
            "error": "3 fields where the header has 2 (a comma inside a caption that is "
            "not in quotes?)",
        },
        {"line": 4, "error": "no caption: give “caption” (text) or “captions” (a list)"},
        {"line": 5, "error": "“d.png” is not in shapes.zip"},
        {
            "line": 7,
            "error": "3 fields where the header has 2 (a comma inside a caption that is "
            "not in quotes?)",
        },
    ]
    nothing_written(media)


def test_csv_without_the_needed_columns(project):
    with pytest.raises(Invalid) as info:
        run(project, {"a.png": RED}, b"name,description\na.png,x\n", name="m.csv")

    assert info.value.errors == [
        {
            "line": 1,
            "error": "the header needs a file column (file, image, image_name, filename, "
            "file_name, path) and a caption column (caption, comment, text); found: name, "
            "description",
        }
    ]


def test_non_utf8_csv_gets_a_clear_error(project, media):
    manifest = "file,caption\na.png,un café au lait\n".encode("latin-1")

    with pytest.raises(Invalid) as info:
        run(project, {"a.png": RED}, manifest, name="captions.csv")

    assert info.value.message.startswith("captions.csv is not UTF-8 text; save it as UTF-8")
    assert info.value.errors == [
        {
            "line": 2,
            "error": "byte 0xE9 at column 13 is not UTF-8 (Latin-1 or Windows-1252 text?)",
        }
    ]
    nothing_written(media)


def test_bad_flickr_and_coco_lines(project):
    token = b"100.jpg#0\tfine\nno tab here\n100.jpg#x\tbad number\n"
    coco = json.dumps(
        {
            "images": [{"id": 1, "file_name": "1.jpg"}, {"file_name": "2.jpg"}],
            "annotations": [{"image_id": 9, "caption": "x"}, {"image_id": 1, "caption": " "}],
        }
    ).encode()

    with pytest.raises(Invalid) as flickr:
        run(project, {"100.jpg": jpeg()}, token, name="results.token")
    with pytest.raises(Invalid) as coco_info:
        run(project, {"1.jpg": jpeg()}, coco, name="captions_val.json")

    assert flickr.value.errors == [
        {"line": 2, "error": "expected “image.jpg#0<TAB>caption”"},
        {"line": 3, "error": "expected “image.jpg#0<TAB>caption”"},
    ]
    assert coco_info.value.errors == [
        {"line": "annotations[0]", "error": "image_id 9 is not in “images”"},
        {"line": "annotations[1]", "error": "the caption is empty"},
        {"line": "images[1]", "error": "each image needs an “id” and a “file_name”"},
    ]


# ---------------------------------------------------------------------------------------------
# bad images: the import fails whole, and the blobs it wrote are removed
# ---------------------------------------------------------------------------------------------
def test_bad_images_fail_the_whole_import_and_leave_nothing(project, media, settings):
    settings.BLINDSPOT_MAX_IMAGE_PIXELS = 5000
    manifest = jsonl(
        {"file": "a_good.png", "caption": "ok"},
        {"file": "b_truncated.jpg", "caption": "cut"},
        {"file": "c_empty.png", "caption": "zero bytes"},
        {"file": "d_liar.jpg", "caption": "a png named jpg"},
        {"file": "e_bomb.png", "caption": "too many pixels"},
        {"file": "f_good.png", "caption": "ok too"},
    )
    files = {
        "a_good.png": RED,
        "b_truncated.jpg": noisy_jpeg()[:3000],
        "c_empty.png": b"",
        "d_liar.jpg": GREEN,
        "e_bomb.png": png((100, 100)),
        "f_good.png": BLUE,
    }

    with pytest.raises(Invalid) as info:
        run(project, files, manifest)

    assert info.value.message == "4 problem(s) in the images of shapes.zip; nothing was imported."
    assert [(e["line"], e["error"].split(":")[0]) for e in info.value.errors] == [
        (2, "b_truncated.jpg"),
        (3, "c_empty.png"),
        (4, "d_liar.jpg"),
        (5, "e_bomb.png"),
    ]
    assert info.value.errors[1]["error"] == "c_empty.png: the file is empty (0 bytes)"
    assert info.value.errors[2]["error"] == "d_liar.jpg: the name says .jpg but the content is PNG"
    assert "10,000 pixels is more than the limit of 5,000" in info.value.errors[3]["error"]
    nothing_written(media)
    assert stored(media) == []  # a_good.png was stored before the first error, then removed


def test_a_failed_import_keeps_blobs_other_images_use(project, media):
    run(project, {"a.png": RED}, jsonl({"file": "a.png", "caption": "red"}), corpus="Kept")
    kept = stored(media, "images")

    with pytest.raises(Invalid):
        run(
            project,
            {"a.png": RED, "b.png": b""},
            jsonl({"file": "a.png", "caption": "red"}, {"file": "b.png", "caption": "empty"}),
            corpus="Broken",
        )

    assert stored(media, "images") == kept
    assert list(Corpus.objects.values_list("name", flat=True)) == ["Kept"]
    assert (Image.objects.count(), Sample.objects.count(), Caption.objects.count()) == (1, 1, 1)


def test_an_image_over_the_byte_limit_in_an_archive(project, settings, media):
    settings.BLINDSPOT_MAX_IMAGE_BYTES = 100
    source = ci.open_source(io.BytesIO(zip_bytes({"big.jpg": noisy_jpeg()})), label="a.zip")

    with pytest.raises(Invalid) as info:
        run(project, {}, jsonl({"file": "big.jpg", "caption": "big"}), source=source)

    assert info.value.errors == [
        {"line": 1, "error": "big.jpg: the file is 0.0 MB; the limit is 0.0 MB"}
    ]
    nothing_written(media)


# ---------------------------------------------------------------------------------------------
# archives that try to escape or explode
# ---------------------------------------------------------------------------------------------
def test_zip_with_path_traversal_is_refused(project, media):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("ok.png", RED)
        zf.writestr("../../evil.png", RED)

    with pytest.raises(Invalid) as info:
        ci.open_source(io.BytesIO(buf.getvalue()), label="evil.zip")

    assert info.value.message == (
        "evil.zip: member “../../evil.png” has an unsafe path (absolute or with “..”); "
        "nothing was imported."
    )
    nothing_written(media)


@pytest.mark.parametrize(
    ("files", "links", "message"),
    [
        ({"/etc/x.png": RED}, {}, "t.tgz: member “/etc/x.png” has an unsafe path"),
        ({"a/../../x.png": RED}, {}, "t.tgz: member “a/../../x.png” has an unsafe path"),
        ({"a.png": RED}, {"b.png": "/etc/passwd"}, "t.tgz: member “b.png” is a link"),
    ],
)
def test_tar_with_traversal_or_links_is_refused(files, links, message):
    with pytest.raises(Invalid) as info:
        ci.open_source(io.BytesIO(tar_bytes(files, links=links)), label="t.tgz")

    assert info.value.message.startswith(message)


def test_folder_links_leading_outside_are_not_followed(project, tmp_path, media):
    secret = tmp_path / "secret.png"
    secret.write_bytes(RED)
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "in.png").write_bytes(GREEN)
    (folder / "out.png").symlink_to(secret)

    with pytest.raises(Invalid) as info:
        run(
            project,
            {},
            jsonl({"file": "in.png", "caption": "in"}, {"file": "out.png", "caption": "out"}),
            source=ci.open_source(folder),
        )

    assert info.value.errors == [{"line": 2, "error": "“out.png” is not in corpus"}]
    nothing_written(media)


def test_zip_bomb_is_refused_before_anything_is_unpacked(settings):
    settings.BLINDSPOT_MAX_ARCHIVE_UNPACKED_BYTES = 50_000
    bomb = zip_bytes({"zeros.png": b"\0" * 200_000})

    with pytest.raises(Invalid) as info:
        ci.open_source(io.BytesIO(bomb), label="bomb.zip")

    assert info.value.message == (
        "bomb.zip unpacks to more than allowed (a zip bomb?); nothing was imported."
    )


def test_highly_compressed_member_is_refused_as_a_bomb():
    bomb = zip_bytes({"zeros.png": b"\0" * (2 * 2**20)})

    with pytest.raises(Invalid, match="a zip bomb"):
        ci.open_source(io.BytesIO(bomb), label="bomb.zip")


def test_tar_gz_bomb_is_refused(settings):
    settings.BLINDSPOT_MAX_ARCHIVE_UNPACKED_BYTES = 50_000
    bomb = tar_bytes({"a.png": b"\0" * 40_000, "b.png": b"\0" * 40_000})

    with pytest.raises(Invalid, match="a tar bomb"):
        ci.open_source(io.BytesIO(bomb), label="bomb.tgz")


def test_not_an_archive():
    with pytest.raises(Invalid) as info:
        ci.open_source(io.BytesIO(b"hello"), label="notes.txt")

    assert (
        info.value.message == "notes.txt is not a zip or tar archive (.zip, .tar, .tar.gz, .tgz)."
    )


def test_archive_without_a_manifest_says_what_to_add(project):
    with pytest.raises(Invalid) as info:
        run(project, {"a.png": RED}, None)

    assert info.value.message.startswith("No manifest in shapes.zip: add manifest.jsonl")


def test_archive_with_two_caption_files_asks_which(project):
    files = {"a.png": RED, "captions_train.json": b"{}", "captions_val.json": b"{}"}

    with pytest.raises(Invalid) as info:
        run(project, files, None)

    assert info.value.message == (
        "Several caption files in shapes.zip (captions_train.json, captions_val.json); upload "
        "the one to use as the manifest."
    )


def test_a_corpus_name_is_unique_per_project(project):
    run(project, {"a.png": RED}, jsonl({"file": "a.png", "caption": "red"}), corpus="Shapes")

    with pytest.raises(Invalid) as info:
        run(project, {"a.png": RED}, jsonl({"file": "a.png", "caption": "red"}), corpus="shapes")

    assert info.value.message == (
        "This project already has a corpus “Shapes” (shapes); choose another name."
    )
    assert Corpus.objects.count() == 1


# ---------------------------------------------------------------------------------------------
# the web path: edge validation, the job, the stored upload
# ---------------------------------------------------------------------------------------------
def upload(name: str, data: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data)


def test_import_start_checks_at_the_edge_then_the_job_imports(
    project, curator, media, eager, django_capture_on_commit_callbacks
):
    archive = zip_bytes({"a.png": RED, "b.png": GREEN})
    manifest = jsonl({"file": "a.png", "caption": "red"}, {"file": "b.png", "caption": "green"})

    with django_capture_on_commit_callbacks(execute=True):
        job, n = ci.corpus_import_start(
            project=project,
            name="Two squares",
            archive=upload("sq.zip", archive),
            manifest=upload("m.jsonl", manifest),
            language="en",
            licence="CC0-1.0",
            created_by=curator,
        )

    job.refresh_from_db()
    corpus = Corpus.objects.get()
    assert n == 2
    assert (job.kind, job.status, job.error) == ("curation.import_corpus", "succeeded", "")
    assert (job.done, job.total) == (3, 3)
    assert job.result["corpus_id"] == corpus.pk
    assert (corpus.sample_count, corpus.licence) == (2, "CC0-1.0")
    # the stored upload is gone, and the thumbnail job ran after the import committed
    assert stored(media, "curation") == []
    thumbs = Job.objects.get(kind="curation.make_thumbnails")
    assert (thumbs.status, thumbs.result["made"]) == ("succeeded", 2)
    assert Image.objects.filter(thumbnail="").count() == 0


def test_import_start_refuses_a_bad_manifest_before_any_job(project, curator, media):
    with pytest.raises(Invalid) as info:
        ci.corpus_import_start(
            project=project,
            name="Bad",
            archive=upload("sq.zip", zip_bytes({"a.png": RED})),
            manifest=upload("m.jsonl", b'{"file": "a.png"}\n'),
            created_by=curator,
        )

    assert info.value.errors == [
        {"line": 1, "error": "no caption: give “caption” (text) or “captions” (a list)"}
    ]
    assert Job.objects.count() == 0
    assert stored(media) == []


def test_an_image_problem_fails_the_job_with_its_line(
    project, curator, media, eager, django_capture_on_commit_callbacks
):
    archive = zip_bytes({"a.png": RED, "b.jpg": noisy_jpeg()[:2500]})
    manifest = jsonl({"file": "a.png", "caption": "red"}, {"file": "b.jpg", "caption": "cut"})

    with django_capture_on_commit_callbacks(execute=True):
        job, _n = ci.corpus_import_start(
            project=project,
            name="Cut",
            archive=upload("cut.zip", archive),
            manifest=upload("m.jsonl", manifest),
            created_by=curator,
        )

    job.refresh_from_db()
    assert job.status == "failed"
    assert job.error.startswith(
        "1 problem(s) in the images of cut.zip; nothing was imported.\n"
        "line 2: b.jpg: the JPEG data is damaged or truncated"
    )
    assert (Corpus.objects.count(), Image.objects.count()) == (0, 0)
    assert stored(media, "images") == []
    # A refused import deletes its upload: a retry would refuse the same files.
    assert stored(media, "curation/uploads") == []


# ---------------------------------------------------------------------------------------------
# the command and small helpers
# ---------------------------------------------------------------------------------------------
def test_import_corpus_command_from_a_folder(project, tmp_path, media, terminal):
    folder = tmp_path / "pics"
    folder.mkdir()
    (folder / "a.png").write_bytes(RED)
    (folder / "manifest.csv").write_bytes("file,caption,language\na.png,रंग लाल,hi\n".encode())
    out = io.StringIO()

    call_command(
        "import_corpus",
        "--project",
        project.slug,
        "--name",
        "Pics",
        "--folder",
        str(folder),
        stdout=out,
        stderr=terminal,
    )

    corpus = Corpus.objects.get()
    assert out.getvalue().startswith(
        f"Corpus #{corpus.pk}: 1 samples, 1 captions, 1 new images (0 already stored), format csv"
    )
    assert Image.objects.get().thumbnail.name.endswith(".webp")
    # the terminal's bar followed the import to its end
    bar = terminal.getvalue()
    assert "import Pics" in bar and "Reading 1 images" in bar
    assert "2/2" in bar and "Imported 1 samples" in bar


def test_import_corpus_command_prints_line_errors(project, tmp_path):
    folder = tmp_path / "pics"
    folder.mkdir()
    (folder / "manifest.jsonl").write_text('{"file": "nope.png", "caption": "x"}\n')

    with pytest.raises(CommandError) as info:
        call_command(
            "import_corpus", "--project", project.slug, "--name", "P", "--folder", str(folder)
        )

    assert str(info.value) == (
        "1 problem(s) in manifest.jsonl; nothing was imported.\n  line 1: “nope.png” is not in pics"
    )


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        ("en", "en"),
        ("EN", "en"),
        ("zh_hans", "zh-Hans"),
        ("pt-br", "pt-BR"),
        ("es-419", "es-419"),
        ("sr-Latn-RS", "sr-Latn-RS"),
        ("x-klingon", "x-klingon"),
    ],
)
def test_language_tags_are_normalised(tag, expected):
    assert ci.language_normalise(tag) == expected


@pytest.mark.parametrize("tag", ["", "e", "english!", "zh--cn", "12", "en-" + "x" * 9])
def test_bad_language_tags(tag):
    with pytest.raises(ValueError, match="is not a BCP 47 language tag"):
        ci.language_normalise(tag)


@pytest.mark.parametrize(
    ("filename", "first_line", "fmt"),
    [
        ("m.jsonl", '{"file": "a"}', "jsonl"),
        ("m.json", '{"file": "a", "caption": "b"}', "jsonl"),
        ("captions_val2014.json", '{"info": {}, "images": [], "annotations": []}', "coco"),
        ("captions.json", "{", "coco"),
        ("results.csv", "image_name| comment_number| comment", "flickr"),
        ("results_20130124.token", "1.jpg#0\tA dog .", "flickr"),
        ("captions.txt", "image,caption", "csv"),
        ("m.csv", "file,caption", "csv"),
    ],
)
def test_format_detection(filename, first_line, fmt):
    assert ci.detect_format(first_line + "\n", filename) == fmt
