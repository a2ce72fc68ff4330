"""A small demo corpus drawn with Pillow: shapes whose captions are true of the pictures.

Twenty scenes (counts, colours, and left/right or above/below pairs that swap their objects, the
kind of minimal pair NaturalBench is built from), captioned in English with a few Chinese and
Hindi captions. It goes through the real import path (manifest + validation + storage +
thumbnails), so the demo exercises the same code as a user's upload. Licence: CC0-1.0.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field

import numpy as np
from PIL import Image as PILImage
from PIL import ImageDraw

from annotator.platform.models import Project

from ..models import Corpus
from .importing import corpus_import
from .sources import MemorySource

SLUG = "demo-shapes"
NAME = "Demo shapes"
SIZE = (320, 240)
COLOURS = {
    "red": (214, 48, 49),
    "blue": (42, 92, 196),
    "green": (46, 160, 87),
    "yellow": (242, 201, 46),
    "white": (244, 244, 240),
    "black": (30, 30, 34),
    "orange": (240, 136, 34),
    "purple": (128, 64, 168),
}
NUMBERS = {1: "a", 2: "two", 3: "three", 4: "four", 5: "five"}
PLURAL = {"circle": "circles", "square": "squares", "triangle": "triangles"}


@dataclass
class Thing:
    shape: str
    colour: str
    xy: tuple[int, int] | None = None  # centre; None: placed at random without overlap
    r: int = 26


@dataclass
class Scene:
    background: str
    things: list[Thing]
    captions: list[tuple[str, str]] = field(default_factory=list)  # (language, text)


def _a(word: str) -> str:
    return f"an {word}" if word[0] in "aeiou" else f"a {word}"


def _count_caption(n: int, colour: str, shape: str, background: str) -> str:
    if n == 1:
        return f"{_a(colour)} {shape} on {_a(background)} background"
    return f"{NUMBERS[n]} {colour} {PLURAL[shape]} on {_a(background)} background"


def _count_scene(n: int, colour: str, shape: str, background: str, *extra) -> Scene:
    en = _count_caption(n, colour, shape, background)
    count = "One" if n == 1 else NUMBERS[n].capitalize()
    noun = shape if n == 1 else PLURAL[shape]
    verb = "sits" if n == 1 else "sit"
    para = f"{count} {colour} {noun} {verb} on a plain {background} background."
    return Scene(
        background,
        [Thing(shape, colour) for _ in range(n)],
        [("en", en), ("en", para), *extra],
    )


def _pair_scene(a: Thing, b: Thing, relation: str, background: str, *extra) -> Scene:
    where = {"left": "to the left of", "above": "above"}[relation]
    en = f"{_a(a.colour)} {a.shape} {where} {_a(b.colour)} {b.shape} on {_a(background)} background"
    return Scene(background, [a, b], [("en", en), *extra])


def scenes() -> list[Scene]:
    """The demo's scenes; the first caption of each is the one its picture was drawn from."""
    left, right, top, bottom = (100, 120), (220, 120), (160, 70), (160, 170)
    return [
        _count_scene(1, "red", "circle", "blue", ("zh", "蓝色背景上的一个红色圆形")),
        _count_scene(
            2,
            "red",
            "circle",
            "blue",
            ("zh", "蓝色背景上的两个红色圆形"),
            ("hi", "नीली पृष्ठभूमि पर दो लाल वृत्त"),
        ),
        _count_scene(3, "yellow", "triangle", "green", ("zh", "绿色背景上的三个黄色三角形")),
        _count_scene(1, "white", "square", "black", ("hi", "काली पृष्ठभूमि पर एक सफ़ेद वर्ग")),
        _count_scene(2, "green", "square", "white"),
        _count_scene(4, "blue", "circle", "yellow", ("hi", "पीली पृष्ठभूमि पर चार नीले वृत्त")),
        _count_scene(1, "yellow", "triangle", "purple"),
        _count_scene(3, "red", "square", "white"),
        _count_scene(2, "blue", "triangle", "orange"),
        _count_scene(1, "black", "circle", "white"),
        _count_scene(5, "orange", "circle", "blue"),
        _count_scene(3, "white", "circle", "red"),
        _pair_scene(
            Thing("circle", "red", left),
            Thing("square", "green", right),
            "left",
            "white",
            ("zh", "白色背景上，一个红色圆形在一个绿色正方形的左边"),
        ),
        _pair_scene(
            Thing("square", "green", left),
            Thing("circle", "red", right),
            "left",
            "white",
            ("hi", "सफ़ेद पृष्ठभूमि पर एक हरा वर्ग एक लाल वृत्त के बाईं ओर है"),
        ),
        _pair_scene(
            Thing("triangle", "blue", top), Thing("circle", "yellow", bottom), "above", "black"
        ),
        _pair_scene(
            Thing("circle", "yellow", top), Thing("triangle", "blue", bottom), "above", "black"
        ),
        _pair_scene(
            Thing("square", "purple", left), Thing("triangle", "orange", right), "left", "white"
        ),
        _pair_scene(
            Thing("triangle", "orange", left), Thing("square", "purple", right), "left", "white"
        ),
        Scene(
            "white",
            [Thing("circle", "red"), Thing("circle", "red"), Thing("square", "blue")],
            [("en", "two red circles and a blue square on a white background")],
        ),
        Scene(
            "white",
            [Thing("circle", "red"), Thing("square", "blue"), Thing("square", "blue")],
            [("en", "a red circle and two blue squares on a white background")],
        ),
    ]


def _shade(rgb: tuple[int, int, int], factor: float) -> tuple[int, int, int]:
    return tuple(int(max(0, min(255, c * factor))) for c in rgb)  # type: ignore[return-value]


def _outline(shape: str, x: int, y: int, r: int) -> list[tuple[float, float]] | tuple:
    if shape == "circle":
        return (x - r, y - r, x + r, y + r)
    if shape == "square":
        return (x - r, y - r, x + r, y + r)
    h = r * 1.1
    return [(x, y - h), (x - r * 1.15, y + h * 0.8), (x + r * 1.15, y + h * 0.8)]


def _draw(draw: ImageDraw.ImageDraw, shape: str, box, fill, outline=None, width=0) -> None:
    if shape == "circle":
        draw.ellipse(box, fill=fill, outline=outline, width=width)
    elif shape == "square":
        draw.rectangle(box, fill=fill, outline=outline, width=width)
    else:
        draw.polygon(box, fill=fill, outline=outline, width=width)


def _place(things: list[Thing], rng: np.random.Generator) -> list[tuple[int, int]]:
    """Centres for the things without one, apart from each other and the edges."""
    placed: list[tuple[int, int]] = [t.xy for t in things if t.xy is not None]
    out = []
    for t in things:
        if t.xy is not None:
            out.append(t.xy)
            continue
        for _ in range(500):
            x = int(rng.integers(t.r + 14, SIZE[0] - t.r - 14))
            y = int(rng.integers(t.r + 14, SIZE[1] - t.r - 14))
            if all((x - px) ** 2 + (y - py) ** 2 > (2.6 * t.r) ** 2 for px, py in placed):
                break
        placed.append((x, y))
        out.append((x, y))
    return out


def render(scene: Scene, seed: int) -> bytes:
    """The scene as a PNG: a soft gradient with grain, shapes with an outline and a shadow."""
    rng = np.random.default_rng(seed)
    base = np.array(COLOURS[scene.background], dtype=np.float64)
    ramp = np.linspace(1.06, 0.9, SIZE[1])[:, None, None]
    pixels = base[None, None, :] * ramp + rng.normal(0, 3.0, (SIZE[1], SIZE[0], 3))
    canvas = PILImage.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).convert("RGBA")
    shadow = PILImage.new("RGBA", SIZE, (0, 0, 0, 0))
    shapes = PILImage.new("RGBA", SIZE, (0, 0, 0, 0))
    sd, dd = ImageDraw.Draw(shadow), ImageDraw.Draw(shapes)
    for thing, (x, y) in zip(scene.things, _place(scene.things, rng), strict=True):
        r = thing.r + int(rng.integers(-3, 4))
        _draw(sd, thing.shape, _outline(thing.shape, x + 4, y + 5, r), fill=(0, 0, 0, 70))
        colour = COLOURS[thing.colour]
        _draw(
            dd,
            thing.shape,
            _outline(thing.shape, x, y, r),
            fill=(*colour, 255),
            outline=(*_shade(colour, 0.7), 255),
            width=3,
        )
    canvas = PILImage.alpha_composite(canvas, shadow)
    canvas = PILImage.alpha_composite(canvas, shapes).convert("RGB")
    buf = io.BytesIO()
    canvas.save(buf, "PNG")
    return buf.getvalue()


def demo_corpus(*, project: Project, created_by=None) -> Corpus:
    """The demo corpus of ``project`` (made once; later calls return it)."""
    existing = Corpus.objects.filter(project=project, slug=SLUG).first()
    if existing is not None:
        return existing
    files: dict[str, bytes] = {}
    lines = []
    for i, scene in enumerate(scenes(), start=1):
        name = f"images/shapes-{i:03d}.png"
        files[name] = render(scene, seed=i)
        lines.append(
            json.dumps(
                {
                    "file": name,
                    "source_id": f"shapes-{i:03d}",
                    "captions": [{"text": text, "language": lang} for lang, text in scene.captions],
                },
                ensure_ascii=False,
            )
        )
    result = corpus_import(
        project=project,
        name=NAME,
        slug=SLUG,
        source=MemorySource(files, label="demo shapes"),
        manifest="\n".join(lines).encode("utf-8"),
        manifest_name="manifest.jsonl",
        licence="CC0-1.0",
        source_url="generated by curation.demo_corpus",
        description="Coloured shapes drawn with Pillow; every caption is true of its picture.",
        created_by=created_by,
        thumbnails="inline",
    )
    return Corpus.objects.get(pk=result["corpus_id"])
