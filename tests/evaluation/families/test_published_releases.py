"""The official releases import as published (issue 21): NaturalBench's Hugging Face layout
(Parquet shards, images embedded as {"bytes", "path"} structs, the published columns) read with
``datasets`` from a local folder or file, and NaturalBench-Retrieval's metadata.json folder. Each
becomes a version whose images any model run can send.

The fixtures are written from the published format description (METRICS.md Sec. 1; the dataset
card of BaiqiL/NaturalBench; naturalbench_retrieval.py), not from Blindspot's own exporter.
"""

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.management.base import CommandError
from PIL import Image as PILImage

from curation.models import Image
from evaluation import importers, services
from evaluation.families.naturalbench import layout
from evaluation.models import BenchmarkItem, BenchmarkVersion
from evaluation.runners import ImageResolver, open_pil
from tests.evaluation.helpers import eval_project, evaluate

pytestmark = pytest.mark.django_db

COLUMNS = [
    "Index",
    "Image_0",
    "Image_1",
    "Question_0",
    "Image_0_Question_0",
    "Image_1_Question_0",
    "Question_1",
    "Image_0_Question_1",
    "Image_1_Question_1",
    "Question_Type",
    "Source",
]
COLOURS = [(200, 30, 30), (30, 200, 30), (30, 30, 200), (200, 200, 30), (30, 200, 200)]


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")


def png(colour, size=(12, 10)) -> bytes:
    buffer = io.BytesIO()
    PILImage.new("RGB", size, colour).save(buffer, "PNG")
    return buffer.getvalue()


def record(i: int, question_type: str = "yes_no") -> dict:
    if question_type == "yes_no":
        q0, q1, answers = (
            f"Is the ball red {i}?",
            f"Is the ball green {i}?",
            ["Yes", "No", "No", "Yes"],
        )
    else:
        q0 = f"What colour is the ball {i}?\nOption: A:red; B:green;"
        q1 = f"What colour is the ball {i}?\nOption: A:green; B:red;"
        answers = ["A", "B", "B", "A"]
    return {
        "Index": i,
        "Image_0": {"bytes": png(COLOURS[i % 5]), "path": f"{i}_0.png"},
        "Image_1": {"bytes": png(COLOURS[(i + 1) % 5], (10, 12)), "path": f"{i}_1.png"},
        "Question_0": q0,
        "Image_0_Question_0": answers[0],
        "Image_1_Question_0": answers[1],
        "Question_1": q1,
        "Image_0_Question_1": answers[2],
        "Image_1_Question_1": answers[3],
        "Question_Type": question_type,
        "Source": "DOCCI" if i % 2 else "XM3600",
    }


def hf_schema(columns=COLUMNS):
    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    types = {"Index": pa.int64(), "Image_0": image, "Image_1": image}
    features = {
        c: {"_type": "Image"}
        if c in ("Image_0", "Image_1")
        else {
            "dtype": "int64" if c == "Index" else "string",
            "_type": "Value",
        }
        for c in columns
    }
    metadata = {b"huggingface": json.dumps({"info": {"features": features}}).encode()}
    return pa.schema([(c, types.get(c, pa.string())) for c in columns], metadata=metadata)


def write_release(folder, records, *, shards=2, columns=COLUMNS):
    """The hub layout: data/train-0000k-of-0000n.parquet, rows split over the shards."""
    (folder / "data").mkdir(parents=True)
    per = -(-len(records) // shards)
    for k in range(shards):
        rows = [{c: r.get(c) for c in columns} for r in records[k * per : (k + 1) * per]]
        table = pa.Table.from_pylist(rows, schema=hf_schema(columns))
        pq.write_table(table, folder / "data" / f"train-{k:05d}-of-{shards:05d}.parquet")
    return folder


def import_version(path, label="v1", family="naturalbench"):
    return evaluate(
        "import-version",
        family,
        str(path),
        "--project",
        eval_project().slug,
        "--benchmark",
        "NaturalBench (official)",
        "--label",
        label,
    )


def test_the_hugging_face_layout_imports_as_a_scoreable_version(tmp_path):
    records = [record(i, "yes_no" if i < 3 else "multiple_choice") for i in range(5)]
    folder = write_release(tmp_path / "NaturalBench", records)

    out = import_version(folder)

    assert "10 images ingested" in out
    version = BenchmarkVersion.objects.get()
    assert (version.item_count, version.kept_count, version.frozen) == (5, 5, True)
    items = list(BenchmarkItem.objects.filter(version=version).order_by("position"))
    assert [i.item_id for i in items] == ["0", "1", "2", "3", "4"]
    assert items[3].data["question_type"] == "multiple_choice"
    assert items[1].data["source"] == "DOCCI"
    # every image is stored and found by the runners, pixel for pixel
    resolver = ImageResolver()
    for item, rec in zip(items, records, strict=True):
        for k in (0, 1):
            image = resolver(item.data[f"image_{k}"])
            expected = PILImage.open(io.BytesIO(rec[f"Image_{k}"]["bytes"])).convert("RGB")
            assert open_pil(image).tobytes() == expected.tobytes()
    # and a model is scored on it: the oracle's answers get every point
    lines = [
        json.dumps(
            {"Index": r["Index"], "outputs": list(layout.expected_answers(r["Question_Type"]))}
        )
        for r in records
    ]
    rows = importers.parse_predictions("naturalbench", "\n".join(lines), "p.jsonl")
    run = services.run_import(version=version, model_name="oracle", rows=rows)
    assert services.metrics_compute(run=run, rounds=10)["g_acc"] == 1.0


def test_one_parquet_file_and_the_older_question_type_spelling(tmp_path):
    columns = [c if c != "Question_Type" else "Question Type" for c in COLUMNS]
    rows = [
        {("Question Type" if k == "Question_Type" else k): v for k, v in record(i).items()}
        for i in range(2)
    ]
    folder = write_release(tmp_path / "old", rows, shards=1, columns=columns)
    import_version(folder / "data" / "train-00000-of-00001.parquet")
    assert BenchmarkVersion.objects.get().item_count == 2


def test_a_missing_column_is_named_and_nothing_is_stored(tmp_path):
    columns = [c for c in COLUMNS if c != "Image_1_Question_1"]
    folder = write_release(tmp_path / "bad", [record(0)], shards=1, columns=columns)
    with pytest.raises(CommandError, match="lacks the column Image_1_Question_1"):
        import_version(folder)
    assert BenchmarkVersion.objects.count() == 0 and Image.objects.count() == 0


def test_a_bad_row_is_named_before_any_image_is_stored(tmp_path):
    records = [record(i) for i in range(3)]
    records[2]["Image_1_Question_0"] = "Yes"
    folder = write_release(tmp_path / "bad", records, shards=2)
    with pytest.raises(CommandError) as exc:
        import_version(folder)
    assert "line 3: ground truth does not follow the NaturalBench layout" in str(exc.value)
    assert BenchmarkVersion.objects.count() == 0 and Image.objects.count() == 0


def test_a_file_that_is_not_parquet_is_refused_not_a_traceback(tmp_path):
    (tmp_path / "bad" / "data").mkdir(parents=True)
    (tmp_path / "bad" / "data" / "train-00000-of-00001.parquet").write_text("not parquet")
    with pytest.raises(CommandError) as exc:
        import_version(tmp_path / "bad")
    assert "A Parquet shard of the release cannot be read." in str(exc.value)
    assert "ArrowInvalid" in str(exc.value)


def test_an_empty_folder_and_a_family_without_a_release_say_what_to_give(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(CommandError, match="No Parquet file under"):
        import_version(tmp_path / "empty")
    with pytest.raises(CommandError, match="reads one file, not a folder"):
        import_version(tmp_path / "empty", family="vlind")


def write_retrieval(root, n=3, *, index_of=lambda i: i):
    folder = root / "NaturalBench-Retrieval"
    (folder / "images").mkdir(parents=True)
    metadata = []
    for i in range(n):
        for k in (0, 1):
            (folder / "images" / f"{i}_{k}.png").write_bytes(png(COLOURS[(i + k) % 5]))
        metadata.append(
            {
                "index": index_of(i),
                "image_0": f"{i}_0.png",
                "image_1": f"{i}_1.png",
                "caption_0": f"a red ball left of a cup {i}",
                "caption_1": f"a cup left of a red ball {i}",
            }
        )
    (folder / "metadata.json").write_text(json.dumps(metadata, indent=2))
    return root


def test_the_retrieval_folder_imports_with_its_images(tmp_path):
    root = write_retrieval(tmp_path / "datasets")
    import_version(root, family="naturalbench_retrieval")  # the loader's root_dir
    version = BenchmarkVersion.objects.get()
    items = list(BenchmarkItem.objects.filter(version=version).order_by("position"))
    assert [(i.item_id, i.data["caption_1"]) for i in items][0] == (
        "0",
        "a cup left of a red ball 0",
    )
    resolver = ImageResolver()
    assert open_pil(resolver(items[2].data["image_1"])).getpixel((0, 0)) == COLOURS[3]
    # the folder itself works too (the same images: deduplicated, 4 distinct colours)
    import_version(root / "NaturalBench-Retrieval", label="v2", family="naturalbench_retrieval")
    assert Image.objects.count() == 4
    # metadata.json alone is a plain file: its names are kept (resolved under
    # BLINDSPOT_EVAL_IMAGE_ROOT when a run needs them)
    import_version(
        root / "NaturalBench-Retrieval" / "metadata.json", "v3", "naturalbench_retrieval"
    )
    plain = BenchmarkItem.objects.filter(version__label="v3").order_by("position").first()
    assert plain.data["image_0"] == "0_0.png"


def test_retrieval_out_of_order_or_missing_image_is_refused(tmp_path):
    root = write_retrieval(tmp_path / "a", index_of=lambda i: 2 - i)
    with pytest.raises(CommandError, match="'index' must be 0"):
        import_version(root, family="naturalbench_retrieval")
    root = write_retrieval(tmp_path / "b")
    (root / "NaturalBench-Retrieval" / "images" / "1_1.png").unlink()
    with pytest.raises(CommandError, match="line 2: image_1 has no bytes and no file '1_1.png'"):
        import_version(root, family="naturalbench_retrieval")
    assert BenchmarkVersion.objects.count() == 0
