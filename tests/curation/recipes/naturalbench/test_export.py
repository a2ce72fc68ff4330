"""NaturalBench export: a frozen, content-hashed version whose JSONL re-imports through the
evaluation importers unchanged, whose Parquet reads back with ``datasets``, whose card follows
Table 3, and whose evaluation BenchmarkVersion is scoreable at once."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile

import numpy as np
import pytest
from django.core.files.storage import default_storage
from PIL import Image as PILImage

from annotator.platform.errors import Invalid
from curation.models import PromptTemplate
from curation.recipes.naturalbench import export
from curation.recipes.naturalbench.models import NaturalBenchVersion
from evaluation import parsed
from evaluation import services as evaluation_services
from evaluation.families.naturalbench import layout as nb
from evaluation.families.naturalbench import parse as nb_parse
from evaluation.families.retrieval import parse as retrieval_parse
from evaluation.models import BenchmarkItem, BenchmarkVersion
from tests.curation.recipes.naturalbench.helpers import (  # noqa: F401 - fixtures
    built_pipeline,
    make_corpus,
    make_pipeline,
    media,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("media")]


def read_zip(version):
    with version.archive.open("rb") as fh:
        data = fh.read()
    return data, zipfile.ZipFile(io.BytesIO(data))


def built(project):
    return built_pipeline(project)


def test_export_round_trips_through_the_evaluation_importers(project):
    # Given an assembled, tagged pipeline
    pipeline = built(project)
    samples = list(pipeline.samples.filter(state="assembled").order_by("index"))
    assert len(samples) == 4

    # When it is exported
    version = export.version_export(pipeline=pipeline)

    # Then the archive holds the records, the retrieval pairs, the images, the card and a README
    data, archive = read_zip(version)
    images = {s.image_0 for s in samples} | {s.image_1 for s in samples}
    pairs = list(pipeline.pairs.filter(state="verified").order_by("position"))
    pair_images = {p.sample_0.image for p in pairs} | {p.sample_1.image for p in pairs}
    assert sorted(archive.namelist()) == sorted(
        [
            "README.md",
            "card.json",
            "naturalbench.jsonl",
            "NaturalBench-Retrieval/metadata.json",
            *{export.image_path(i) for i in images},
            *{"NaturalBench-Retrieval/" + export.image_path(i) for i in pair_images},
        ]
    )
    for image in images:
        assert hashlib.sha256(archive.read(export.image_path(image))).hexdigest() == image.sha256
    jsonl = archive.read("naturalbench.jsonl")
    assert hashlib.sha256(jsonl).hexdigest() == version.sha256
    assert hashlib.sha256(data).hexdigest() == version.archive_sha256

    # the records are the published layout, one per sample, in Index order
    records = [json.loads(line) for line in jsonl.decode().splitlines()]
    assert [list(r) for r in records] == [list(export.FIELDS)] * 4
    for record, sample in zip(records, samples, strict=True):
        nb.sample_check(record)
        expected = dict(sample.record)
        expected["Image_0"] = export.image_path(sample.image_0)
        expected["Image_1"] = export.image_path(sample.image_1)
        expected["Skills"] = [["Others", "Shape", "Color"], ["Others", "Logic"]]
        assert record == expected

    # When the JSONL goes back through the evaluation importer
    rows = nb_parse.parse_items(jsonl.decode(), "naturalbench.jsonl")

    # Then it equals the original samples, and the BenchmarkVersion made at export holds them
    assert [(r.item_id, r.data) for r in rows] == [
        (
            str(s.index),
            {
                "question_type": s.question_type,
                "question_0": s.record["Question_0"],
                "question_1": s.record["Question_1"],
                "image_0": export.image_path(s.image_0),
                "image_1": export.image_path(s.image_1),
                "source": "Shapes",
                "language": "en",
                "skills": [["Others", "Shape", "Color"], ["Others", "Logic"]],
            },
        )
        for s in samples
    ]
    benchmark_version = BenchmarkVersion.objects.get(pk=version.benchmark_version_id)
    assert benchmark_version.frozen
    assert benchmark_version.benchmark.family == "naturalbench"
    assert [
        (i.item_id, i.data)
        for i in BenchmarkItem.objects.filter(version=benchmark_version).order_by("position")
    ] == [(r.item_id, r.data) for r in rows]

    # and NaturalBench-Retrieval is the folder the official loader reads: metadata.json, one JSON
    # array whose item i has integer index i, image file names under its images/, two captions
    metadata = json.loads(archive.read("NaturalBench-Retrieval/metadata.json"))
    assert isinstance(metadata, list) and len(metadata) == len(pairs) > 0
    assert metadata == [
        {
            "index": i,
            "image_0": export.image_path(p.sample_0.image).removeprefix("images/"),
            "image_1": export.image_path(p.sample_1.image).removeprefix("images/"),
            "caption_0": p.caption_0.text,
            "caption_1": p.caption_1.text,
        }
        for i, p in enumerate(pairs)
    ]
    for i, entry in enumerate(metadata):
        assert type(entry["index"]) is int and entry["index"] == i
        for key, pair_image in (
            ("image_0", pairs[i].sample_0.image),
            ("image_1", pairs[i].sample_1.image),
        ):
            member = archive.read("NaturalBench-Retrieval/images/" + entry[key])
            assert hashlib.sha256(member).hexdigest() == pair_image.sha256

    # and it imports back as a NaturalBench-Retrieval version, field for field
    retrieval = retrieval_parse.parse_items(
        archive.read("NaturalBench-Retrieval/metadata.json").decode(), "metadata.json"
    )
    assert [(r.item_id, r.data) for r in retrieval] == [
        (str(m["index"]), {k: m[k] for k in ("image_0", "image_1", "caption_0", "caption_1")})
        for m in metadata
    ]


def test_the_evaluation_version_is_scoreable(project):
    pipeline = built(project)
    version = export.version_export(pipeline=pipeline)
    benchmark_version = BenchmarkVersion.objects.get(pk=version.benchmark_version_id)
    items = BenchmarkItem.objects.filter(version=benchmark_version).order_by("position")

    def run(name, outputs):
        rows = [
            parsed.PredictionRow(
                item_id=i.item_id,
                raw_output=dict(zip(nb.SAMPLE_KEYS, outputs(i), strict=True)),
                line=k,
            )
            for k, i in enumerate(items, start=1)
        ]
        created = evaluation_services.run_import(
            version=benchmark_version, model_name=name, rows=rows
        )
        return evaluation_services.metrics_compute(run=created, rounds=10)

    def truth(item):
        return list(nb.expected_answers(item.data["question_type"]))

    def blind(item):
        return [nb.ANSWERS[item.data["question_type"]][0]] * 4

    assert run("oracle", truth)["g_acc"] == 1.0
    assert run("always a0", blind)["g_acc"] == 0.0


def test_the_same_content_is_the_same_version_and_a_new_one_gets_the_next_label(project):
    pipeline = built(project)
    first = export.version_export(pipeline=pipeline)
    again = export.version_export(pipeline=pipeline)
    assert again.pk == first.pk
    assert NaturalBenchVersion.objects.count() == 1
    assert BenchmarkVersion.objects.count() == 1
    # a tag decided differently changes the content: a new version, the next label
    sample = pipeline.samples.order_by("index").first()
    sample.skills = [["animal"], sample.skills[1]]
    sample.save(update_fields=["skills"])
    second = export.version_export(pipeline=pipeline)
    assert (first.label, second.label) == ("v1", "v2")
    assert second.sha256 != first.sha256
    with pytest.raises(Invalid, match="already has a version 'v2'"):
        export.version_export(pipeline=pipeline, label="v2")


def test_parquet_schema_carries_the_hugging_face_features_exactly():
    value = {"dtype": "string", "_type": "Value"}
    features = {field: value for field in export.FIELDS}
    features["Index"] = {"dtype": "int64", "_type": "Value"}
    features["Image_0"] = features["Image_1"] = {"_type": "Image"}
    features["Skills"] = {"feature": {"feature": value, "_type": "Sequence"}, "_type": "Sequence"}

    metadata = export.parquet_schema().metadata[b"huggingface"]

    assert metadata == json.dumps({"info": {"features": features}}).encode()
    assert list(json.loads(metadata)["info"]["features"]) == list(export.FIELDS)


def test_parquet_reads_back_with_datasets(project, tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    pipeline = built(project)
    version = export.version_export(pipeline=pipeline)
    path = tmp_path / "nb.parquet"
    with version.parquet.open("rb") as fh:
        path.write_bytes(fh.read())
    assert hashlib.sha256(path.read_bytes()).hexdigest() == version.parquet_sha256

    dataset = datasets.load_dataset(
        "parquet", data_files=str(path), split="train", cache_dir=str(tmp_path / "cache")
    )

    assert dataset.column_names == list(export.FIELDS)
    assert isinstance(dataset.features["Image_0"], datasets.Image)
    _data, archive = read_zip(version)
    records = [json.loads(line) for line in archive.read("naturalbench.jsonl").splitlines()]
    assert len(dataset) == len(records) == 4
    for row, record in zip(dataset, records, strict=True):
        for field in export.FIELDS:
            if field in ("Image_0", "Image_1"):
                stored = PILImage.open(io.BytesIO(archive.read(record[field])))
                assert np.array_equal(np.asarray(row[field]), np.asarray(stored))
            else:
                assert row[field] == record[field]


def test_the_card_follows_table_3_with_prompts_and_agreement(project):
    pipeline = built(project)
    version = export.version_export(pipeline=pipeline)
    card = version.card
    models = [
        "offline-drafter/naturalbench-multiple-choice (offline drafter)",
        "offline-drafter/naturalbench-yes-no (offline drafter)",
    ]
    assert card["table3"] == [
        {
            "source": "Shapes",
            "question_type": "Yes-or-No",
            "language": "English",
            "samples": 2,
            "models_used": models,
            "mismatched_pairs": 2,
            "verified_pairs": 2,
        },
        {
            "source": "Shapes",
            "question_type": "Multiple-Choice",
            "language": "English",
            "samples": 2,
            "models_used": models,
            "mismatched_pairs": 2,
            "verified_pairs": 2,
        },
        {
            "source": "All",
            "question_type": "Yes-or-No, Multiple-Choice",
            "language": "English",
            "samples": 4,
            "models_used": None,
            "mismatched_pairs": None,
            "verified_pairs": None,
        },
    ]
    current = {t.name: t for t in PromptTemplate.objects.filter(is_current=True)}
    assert [(p["name"], p["version"], p["sha256"]) for p in card["prompts"]] == [
        (name, current[name].version, current[name].sha256)
        for name in ("naturalbench-multiple-choice", "naturalbench-yes-no")
    ]
    pairs = card["agreement"]["pair_verification"]
    assert (pairs["n_items"], pairs["answers"], pairs["percent_agreement"]) == (2, 4, 1.0)
    answers = card["agreement"]["answer_verification"]
    assert (answers["n_items"], answers["percent_agreement"]) == (16, 1.0)
    tags = card["agreement"]["skill_tagging"]
    assert (tags["n_items"], tags["answers"], tags["percent_agreement"]) == (8, 24, 1.0)
    assert card["files"]["archive"]["sha256"] == version.archive_sha256
    assert card["files"]["parquet"]["sha256"] == version.parquet_sha256
    _data, archive = read_zip(version)
    inside = json.loads(archive.read("card.json"))
    assert inside["table3"] == card["table3"] and inside["sha256"] == version.sha256


def test_an_empty_export_is_refused_and_writes_nothing(project):
    pipeline = make_pipeline(project, make_corpus(project))
    with pytest.raises(Invalid, match="No assembled sample to export yet"):
        export.version_export(pipeline=pipeline)
    assert NaturalBenchVersion.objects.count() == 0
    assert BenchmarkVersion.objects.count() == 0
    assert not default_storage.exists(f"exports/naturalbench/{pipeline.pk}")
