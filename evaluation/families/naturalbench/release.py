"""The official NaturalBench release as published on Hugging Face (BaiqiL/NaturalBench), read
from a local folder or Parquet file: shards with the columns Index, Image_0, Image_1, Question_0,
Image_0_Question_0, Image_1_Question_0, Question_1, Image_0_Question_1, Image_1_Question_1,
Question_Type, Source (METRICS.md Sec. 1; older copies spell "Question Type"), the two images
embedded as ``{"bytes", "path"}`` structs. It becomes a version any model can be scored on."""

from __future__ import annotations

import json
from pathlib import Path

from evaluation import releases

from . import layout, parse

IMAGE_COLUMNS = ("Image_0", "Image_1")
# The Parquet file Blindspot writes (NaturalBench's recipe and the hunt): the published columns
# in order, then Language and Skills [[q0 tags], [q1 tags]]; images embedded.
PARQUET_FIELDS = (*layout.RECORD_FIELDS, "Language", "Skills")
# Every published column but Question_Type, whose spelling varies (checked per row by the parser).
REQUIRED = tuple(c for c in layout.RECORD_FIELDS if c != "Question_Type")


def parquet_features() -> dict:
    """The Hugging Face features of ``PARQUET_FIELDS``, in order, as ``datasets`` reads them
    from the schema's metadata (Index int64, the images as Image, Skills a list of lists)."""
    value = {"dtype": "string", "_type": "Value"}
    features: dict = dict.fromkeys(PARQUET_FIELDS, value)
    features["Index"] = {"dtype": "int64", "_type": "Value"}
    features.update(dict.fromkeys(IMAGE_COLUMNS, {"_type": "Image"}))
    # "Sequence" is what every datasets release reads (newer ones call it List).
    features["Skills"] = {"feature": {"feature": value, "_type": "Sequence"}, "_type": "Sequence"}
    return features


def _records(files: list[Path], *, with_images: bool):
    return releases.parquet_rows(
        files, required=REQUIRED, images=IMAGE_COLUMNS, with_images=with_images
    )


def read_release(path: Path) -> releases.ReleaseFile:
    """Published records as NaturalBench JSONL, images ingested. The records are checked first
    (without their images, through the same parser as any file; errors name the row, 1-based),
    so a bad release stores nothing."""
    files = releases.parquet_files(path)
    lines = []
    for row, record in enumerate(_records(files, with_images=False), start=1):
        lines.append(json.dumps({**record, "Image_0": f"row{row}-0", "Image_1": f"row{row}-1"}))
    parse.parse_items("\n".join(lines), "naturalbench.jsonl")  # Invalid names row and field
    base = files[0].parent
    out, images = [], 0
    for row, record in enumerate(_records(files, with_images=True), start=1):
        for column in IMAGE_COLUMNS:
            data, name = releases.image_bytes(record[column], base, row, column)
            record[column] = releases.image_ref(data, name, row, column)
            images += 1
        out.append(json.dumps(record, ensure_ascii=False))
    return releases.ReleaseFile("\n".join(out) + "\n", "naturalbench.jsonl", images)
