"""The VLind-Bench archive (vlind-bench.txt Sec. 3-4, App. B-C; METRICS.md §4): the published
``data.json`` rows (same fields, same order, image ids 0–3 photorealistic, 4–7 illustration, 8–11
cartoon) and the files laid out like the published data:

    data.json
    counterfactual/<concept>/<context_id>_<context>/<image id>.jpg
    factual/<concept>/<context_id>_<factual_context>/0.jpg
    tests.jsonl        the eight inputs per instance with the official prompts (CK, VP, CB, LP)
    appendix_b/        optional: the plain white image and the rendered CK / CB prompts
"""

from __future__ import annotations

import io
import json
import textwrap
import zipfile
from dataclasses import dataclass, field
from typing import IO

from curation.assets import open_stored
from curation.export_files import Progress
from curation.models import Image
from evaluation.families.vlind import layout

from .benches import MIN_ACCEPTS

DATA_NAME = "data.json"
TESTS_NAME = "tests.jsonl"


@dataclass
class Row:
    """One data.json entry and the images it names (id → SHA-256, and the factual one)."""

    data: dict
    images: dict[str, str] = field(default_factory=dict)
    factual: str = ""


def data_json(rows: list[Row]) -> str:
    """The published file: a JSON list, four-space indent like the official tools write it."""
    return json.dumps([r.data for r in rows], ensure_ascii=False, indent=4)


def good_ids(row: dict) -> list[str]:
    votes = row["aggregated_human_label_good_images"]
    return [k for k, v in votes.items() if v >= MIN_ACCEPTS]


README = """VLind-Bench test set built with Blindspot (vlind-bench.txt Sec. 3-4).

data.json            one object per instance, the published layout:
  concept, context_id, context (counterfactual), factual_context, true_statement (true in the
  context), false_statement (true by common sense), existent_noun, non-existent_noun,
  aggregated_human_label_good_images ({image id: accepts of 3 reviewers}; good with >= 2),
  best_img_id (the image VP and CB use).
counterfactual/<concept>/<context_id>_<context>/<id>.jpg   ids 0-3 photorealistic,
                     4-7 illustration, 8-11 cartoon; every reviewed image is here.
factual/<concept>/<context_id>_<factual_context>/0.jpg     the factual image (CK).
tests.jsonl          the eight inputs per instance with the official prompts (METRICS.md 4):
  a1/a2 CK on the factual image, b1/b2 VP and c1/c2 CB on the best image, d1/d2 LP on each
  good image; "expected" is the right answer.
appendix_b/          (when asked for) blank.png and the CK / CB prompts rendered as images
                     (App. B), one folder per instance.

Images that were not JPEG are re-encoded once as JPEG (quality 95) so every file is what its
.jpg name says. Import data.json on the evaluation app's page as family "VLind-Bench".
"""


def _safe_part(text: str) -> str:
    """The context as gpt4o_eval.py joins it into a path (``f"{context_id}_{context}"``): a "/"
    in it ("5 km/h") stays, a folder level as the official code reads it, unless a level would
    be empty, "." or ".." (then every "/" becomes "_", so nothing leaves its folder)."""
    text = " ".join(str(text).replace("\\", "_").replace("\0", "").split())
    levels = text.split("/")
    if any(level.strip() in ("", ".", "..") for level in levels[1:]):
        return text.replace("/", "_")
    return text


def counterfactual_dir(row: dict) -> str:
    return f"counterfactual/{row['concept']}/{row['context_id']}_{_safe_part(row['context'])}"


def factual_dir(row: dict) -> str:
    return f"factual/{row['concept']}/{row['context_id']}_{_safe_part(row['factual_context'])}"


def test_inputs(row: dict) -> list[dict]:
    """The eight inputs of one instance (Sec. 3; the official runner's keys and prompts)."""
    item = f"{row['concept']}/{row['context_id']}"
    cf = counterfactual_dir(row)
    best = f"{cf}/{row['best_img_id']}.jpg"
    factual = f"{factual_dir(row)}/0.jpg"
    t, f = row["true_statement"], row["false_statement"]
    out = [
        ("a1_image", "CK", factual, layout.ck_prompt(f), "True"),
        ("a2_image", "CK", factual, layout.ck_prompt(t), "False"),
        ("b1", "VP", best, layout.vp_prompt(layout.vp_statement(row["existent_noun"])), "True"),
        (
            "b2",
            "VP",
            best,
            layout.vp_prompt(layout.vp_statement(row["non-existent_noun"])),
            "False",
        ),
        ("c1_image", "CB", best, layout.cb_prompt(row["context"], t), "True"),
        ("c2_image", "CB", best, layout.cb_prompt(row["context"], f), "False"),
    ]
    for image_id in good_ids(row):
        path = f"{cf}/{image_id}.jpg"
        out.append((f"d1/{image_id}", "LP", path, layout.lp_prompt(t), "True"))
        out.append((f"d2/{image_id}", "LP", path, layout.lp_prompt(f), "False"))
    return [
        {"id": item, "key": k, "test": test, "image": image, "prompt": prompt, "expected": exp}
        for k, test, image, prompt, exp in out
    ]


def _jpeg(image: Image) -> bytes:
    if image.format != "JPEG":
        buf = io.BytesIO()
        with open_stored(image) as img:
            img.convert("RGB").save(buf, "JPEG", quality=95)
        return buf.getvalue()
    with image.file.storage.open(image.file.name, "rb") as handle:
        return handle.read()


def rendered_prompt(text: str) -> bytes:
    """App. B: the prompt in black on a 1024×1024 white image (80 characters a line)."""
    from PIL import Image as PILImage
    from PIL import ImageDraw, ImageFont

    img = PILImage.new("RGB", (1024, 1024), (255, 255, 255))
    draw = ImageDraw.Draw(img)
    wrapped = "\n".join(
        line for para in text.split("\n") for line in (textwrap.wrap(para, width=80) or [""])
    )
    draw.text((10, 10), wrapped, fill=(0, 0, 0), font=ImageFont.load_default(size=25))
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def image_count(rows: list[Row], *, appendix_b: bool = False) -> int:
    """Image files the archive holds: every reviewed counterfactual image and the factual one
    per row, plus (App. B) the white image and four rendered prompts per row."""
    n = sum(len(r.images) + 1 for r in rows)
    return n + (1 + 4 * len(rows) if appendix_b else 0)


def write_zip(
    fh: IO[bytes],
    rows: list[Row],
    *,
    by_sha: dict[str, Image],
    appendix_b: bool = False,
    progress: Progress | None = None,
) -> None:
    """Write the archive (layout in the module docstring) into ``fh``; ``progress(done,
    total)`` counts the image files. The one builder behind the export job."""
    total, done = image_count(rows, appendix_b=appendix_b), 0

    def image(zf: zipfile.ZipFile, path: str, data: bytes, **kwargs) -> None:
        nonlocal done
        zf.writestr(path, data, **kwargs)
        done += 1
        if progress:
            progress(done, total)

    if progress:
        progress(0, total)
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(DATA_NAME, data_json(rows))
        zf.writestr("README.txt", README)
        tests = [line for r in rows for line in test_inputs(r.data)]
        zf.writestr(TESTS_NAME, "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in tests))
        for r in rows:
            cf = counterfactual_dir(r.data)
            for image_id, sha in sorted(r.images.items(), key=lambda kv: int(kv[0])):
                data = _jpeg(by_sha[sha])
                image(zf, f"{cf}/{image_id}.jpg", data, compress_type=zipfile.ZIP_STORED)
            data = _jpeg(by_sha[r.factual])
            image(zf, f"{factual_dir(r.data)}/0.jpg", data, compress_type=zipfile.ZIP_STORED)
        if appendix_b:
            image(zf, "appendix_b/blank.png", rendered_prompt(""))  # the plain white image
            for r in rows:
                folder = f"appendix_b/rendered/{r.data['concept']}/{r.data['context_id']}"
                for t in test_inputs(r.data):
                    if t["key"] in ("a1_image", "a2_image", "c1_image", "c2_image"):
                        image(zf, f"{folder}/{t['key'][:2]}.png", rendered_prompt(t["prompt"]))
