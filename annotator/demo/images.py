"""Pillow scenes for the demo: simple, recognisable, deterministic from the scene's name.

Every scene is drawn at twice its size and scaled down (cheap anti-aliasing). The scenes are the
kind of minimal pairs NaturalBench is made of: the same objects with one thing changed (left and
right swapped, a count, a colour, a time, a word on a sign), so the demo's questions have answers
that differ between the two images of a pair.
"""

from __future__ import annotations

import math
import random
import zlib
from collections.abc import Callable
from pathlib import Path

from PIL import Image, ImageDraw, ImageFilter, ImageFont

WIDTH, HEIGHT = 640, 480
SCALE = 2

RED = (214, 48, 49)
GREEN = (46, 160, 67)
BLUE = (41, 98, 255)
YELLOW = (250, 204, 21)
PURPLE = (142, 68, 173)
ORANGE = (245, 130, 32)
BROWN = (150, 100, 60)
WHITE = (250, 250, 250)
BLACK = (30, 30, 30)
GREY = (140, 140, 140)


class Canvas:
    """An ImageDraw wrapper that takes coordinates in output pixels and draws at SCALE×."""

    def __init__(self, background=(240, 236, 226)):
        self.image = Image.new("RGB", (WIDTH * SCALE, HEIGHT * SCALE), background)
        self.draw = ImageDraw.Draw(self.image)

    @staticmethod
    def _s(coords):
        return [c * SCALE for c in coords]

    def rect(self, box, fill, outline=None, width=0, radius=0):
        self.draw.rounded_rectangle(
            self._s(box), radius * SCALE, fill=fill, outline=outline, width=width * SCALE
        )

    def ellipse(self, box, fill, outline=None, width=0):
        self.draw.ellipse(self._s(box), fill=fill, outline=outline, width=width * SCALE)

    def circle(self, cx, cy, r, fill, outline=None, width=0):
        self.ellipse((cx - r, cy - r, cx + r, cy + r), fill, outline, width)

    def polygon(self, points, fill, outline=None, width=0):
        flat = [c * SCALE for point in points for c in point]
        self.draw.polygon(flat, fill=fill, outline=outline, width=width * SCALE)

    def line(self, points, fill, width=2):
        flat = [c * SCALE for point in points for c in point]
        self.draw.line(flat, fill=fill, width=width * SCALE, joint="curve")

    def arc(self, box, start, end, fill, width=2):
        self.draw.arc(self._s(box), start, end, fill=fill, width=width * SCALE)

    def text(self, cx, cy, text, size, fill=BLACK):
        font = ImageFont.load_default(size=size * SCALE)
        self.draw.text((cx * SCALE, cy * SCALE), text, font=font, fill=fill, anchor="mm")

    def finish(self) -> Image.Image:
        return self.image.resize((WIDTH, HEIGHT), Image.Resampling.LANCZOS)


# --- backgrounds ---------------------------------------------------------------------------------
def table(c: Canvas, rng: random.Random, top: int = 300) -> None:
    c.rect((0, 0, WIDTH, top), fill=(236, 228, 212))
    c.rect((0, top, WIDTH, HEIGHT), fill=(176, 124, 78))
    for _ in range(9):
        y = rng.randint(top + 8, HEIGHT - 6)
        c.line([(0, y), (WIDTH, y + rng.randint(-6, 6))], fill=(160, 110, 66), width=2)
    c.rect((0, top, WIDTH, top + 8), fill=(140, 92, 52))


def outdoors(c: Canvas, rng: random.Random, *, weather: str = "sunny", night=False) -> None:
    sky = {"sunny": (135, 196, 245), "rainy": (150, 160, 172)}[weather]
    if night:
        sky = (24, 30, 66)
    c.rect((0, 0, WIDTH, 340), fill=sky)
    c.rect((0, 340, WIDTH, HEIGHT), fill=(98, 172, 84) if not night else (40, 80, 44))
    if night:
        for _ in range(40):
            c.circle(rng.randint(0, WIDTH), rng.randint(0, 300), 1.5, fill=WHITE)
    elif weather == "sunny":
        c.circle(540, 80, 42, fill=YELLOW)
        for i in range(12):
            a = i * math.pi / 6
            c.line(
                [(540 + 55 * math.cos(a), 80 + 55 * math.sin(a))]
                + [(540 + 72 * math.cos(a), 80 + 72 * math.sin(a))],
                fill=YELLOW,
                width=4,
            )
    else:
        for x, y in ((120, 70), (330, 50), (520, 90)):
            cloud(c, x, y, (110, 116, 126))


def rain(c: Canvas, rng: random.Random) -> None:
    for _ in range(120):
        x, y = rng.randint(0, WIDTH), rng.randint(0, HEIGHT)
        c.line([(x, y), (x - 6, y + 18)], fill=(210, 225, 245), width=2)


def cloud(c: Canvas, x, y, color=WHITE) -> None:
    for dx, dy, r in ((0, 0, 34), (36, -14, 40), (76, 0, 32), (38, 12, 34)):
        c.circle(x + dx, y + dy, r, fill=color)


# --- objects ---------------------------------------------------------------------------------
def mug(c: Canvas, x, base, color=RED, size=1.0) -> None:
    w, h = 80 * size, 96 * size
    c.ellipse(
        (x + w - 18 * size, base - h + 18 * size, x + w + 30 * size, base - 22 * size),
        fill=None,
        outline=color,
        width=int(11 * size),
    )
    c.rect((x, base - h, x + w, base), fill=color, radius=int(12 * size))
    c.ellipse((x, base - h - 8 * size, x + w, base - h + 10 * size), fill=_darker(color))


def laptop(c: Canvas, x, base, width=230) -> None:
    h = width * 0.62
    c.rect((x + 12, base - h - 10, x + width - 12, base - 10), fill=(60, 64, 72), radius=8)
    c.rect((x + 24, base - h, x + width - 24, base - 22), fill=(96, 160, 220))
    c.polygon(
        [(x - 6, base), (x + width + 6, base), (x + width - 10, base - 12), (x + 10, base - 12)],
        fill=(190, 192, 198),
    )


def apple(c: Canvas, cx, cy, r=28, color=RED) -> None:
    c.circle(cx, cy, r, fill=color)
    c.circle(cx - r * 0.35, cy - r * 0.35, r * 0.22, fill=_lighter(color))
    c.line([(cx, cy - r + 2), (cx + 4, cy - r - 14)], fill=(90, 60, 30), width=4)
    c.ellipse((cx + 4, cy - r - 14, cx + 24, cy - r - 4), fill=GREEN)


def banana(c: Canvas, cx, cy, color=YELLOW, angle=0.0) -> None:
    """A crescent between two circular arcs that meet at the stem and the tip."""
    big_r, thickness = 110, 26
    ends = [math.radians(a) for a in range(25, 156, 5)]
    outer = [(cx + big_r * math.cos(a), cy - 60 + big_r * math.sin(a)) for a in ends]
    ex, ey = outer[0][0] - cx, outer[0][1] - cy
    bottom = 50 - thickness
    k = (bottom * bottom - ex * ex - ey * ey) / (2 * (bottom - ey))
    r = bottom - k
    inner = []
    for a in ends[::-1]:
        x = cx + ex * math.cos(a) / math.cos(ends[0])
        inner.append((x, cy + k + math.sqrt(max(r * r - (x - cx) ** 2, 0))))
    pts = outer + inner
    if angle:
        ca, sa = math.cos(angle), math.sin(angle)
        pts = [
            (cx + (px - cx) * ca - (py - cy) * sa, cy + (px - cx) * sa + (py - cy) * ca)
            for px, py in pts
        ]
    c.polygon(pts, fill=color, outline=_darker(color), width=2)
    c.circle(*pts[0], 5, fill=(90, 70, 40))


def orange_fruit(c: Canvas, cx, cy, r=26) -> None:
    c.circle(cx, cy, r, fill=ORANGE)
    c.circle(cx, cy - r + 5, 4, fill=(90, 120, 40))


def plate(c: Canvas, cx, cy, rx=170, ry=48) -> None:
    c.ellipse((cx - rx, cy - ry, cx + rx, cy + ry), fill=(210, 210, 214))
    c.ellipse((cx - rx + 14, cy - ry + 8, cx + rx - 14, cy + ry - 8), fill=WHITE)


def bowl(c: Canvas, cx, cy, w=260, color=(70, 110, 170)) -> None:
    c.draw.chord(Canvas._s((cx - w / 2, cy - 90, cx + w / 2, cy + 90)), 0, 180, fill=color)
    c.ellipse((cx - w / 2, cy - 12, cx + w / 2, cy + 12), fill=_darker(color))


def book(c: Canvas, x, y, w, h, color) -> None:
    c.rect((x, y, x + w, y + h), fill=color, radius=4)
    c.rect((x + 6, y + 6, x + w - 6, y + 12), fill=WHITE)
    c.line([(x + 10, y + h - 10), (x + w - 10, y + h - 10)], fill=_darker(color), width=3)


def traffic_light(c: Canvas, x, y, lit: str) -> None:
    c.rect((x + 34, y + 230, x + 50, 420), fill=(70, 70, 70))
    c.rect((x, y, x + 84, y + 236), fill=(40, 40, 44), radius=14)
    for i, name in enumerate(("red", "amber", "green")):
        on = {"red": RED, "amber": ORANGE, "green": (40, 220, 90)}[name]
        c.circle(x + 42, y + 42 + i * 76, 28, fill=on if name == lit else (70, 70, 74))


def clock(c: Canvas, cx, cy, r, hour, minute=0) -> None:
    c.circle(cx, cy, r + 10, fill=(60, 60, 64))
    c.circle(cx, cy, r, fill=WHITE)
    for h in range(1, 13):
        a = math.radians(h * 30 - 90)
        c.text(cx + (r - 26) * math.cos(a), cy + (r - 26) * math.sin(a), str(h), 22)
    m_angle = math.radians(minute * 6 - 90)
    h_angle = math.radians((hour % 12) * 30 + minute * 0.5 - 90)
    c.line(
        [(cx, cy), (cx + r * 0.5 * math.cos(h_angle), cy + r * 0.5 * math.sin(h_angle))],
        fill=BLACK,
        width=9,
    )
    c.line(
        [(cx, cy), (cx + r * 0.8 * math.cos(m_angle), cy + r * 0.8 * math.sin(m_angle))],
        fill=BLACK,
        width=5,
    )
    c.circle(cx, cy, 8, fill=RED)


def arrow_sign(c: Canvas, cx, cy, direction: str, label: str) -> None:
    c.rect((cx - 8, cy, cx + 8, 430), fill=GREY)
    c.rect(
        (cx - 150, cy - 60, cx + 150, cy + 60),
        fill=(20, 110, 60),
        outline=WHITE,
        width=4,
        radius=10,
    )
    s = -1 if direction == "left" else 1
    c.polygon([(cx + s * 120, cy), (cx + s * 70, cy - 40), (cx + s * 70, cy + 40)], fill=WHITE)
    c.rect(
        (cx - 60 if s > 0 else cx - 70, cy - 14, cx + 70 if s > 0 else cx + 60, cy + 14), fill=WHITE
    )
    c.text(cx - s * 10, cy - 38, label, 22, fill=WHITE)


def shop(c: Canvas, sign: str, sign_color) -> None:
    c.rect((60, 60, 580, 440), fill=(196, 120, 90))
    c.rect((60, 60, 580, 130), fill=(120, 60, 50))
    c.text(320, 95, "BAKERY", 44, fill=WHITE)
    c.rect((110, 170, 290, 330), fill=(170, 210, 235), outline=WHITE, width=6)
    c.rect((360, 170, 520, 440), fill=(110, 70, 40), outline=(80, 50, 30), width=6)
    c.circle(500, 320, 7, fill=YELLOW)
    c.rect((380, 210, 500, 270), fill=sign_color, radius=6)
    c.text(440, 240, sign, 30, fill=WHITE)
    for i in range(6):
        c.circle(140 + i * 28, 300, 12, fill=(220, 170, 90))


def house(c: Canvas, x, base, color=(220, 90, 70)) -> None:
    c.rect((x, base - 150, x + 200, base), fill=(236, 220, 190))
    c.polygon([(x - 20, base - 150), (x + 100, base - 240), (x + 220, base - 150)], fill=color)
    c.rect((x + 80, base - 80, x + 120, base), fill=(110, 70, 40))
    c.rect((x + 20, base - 120, x + 62, base - 80), fill=(170, 210, 235))
    c.rect((x + 138, base - 120, x + 180, base - 80), fill=(170, 210, 235))


def tree(c: Canvas, x, base, leaves=GREEN) -> None:
    c.rect((x - 12, base - 120, x + 12, base), fill=(110, 74, 40))
    for dx, dy, r in ((0, -170, 58), (-40, -130, 44), (40, -130, 44)):
        c.circle(x + dx, base + dy, r, fill=leaves)


def person(c: Canvas, x, base, facing: str, coat=BLUE, umbrella=None) -> None:
    s = -1 if facing == "left" else 1
    c.rect((x - 12, base - 60, x - 2, base), fill=(50, 50, 70))
    c.rect((x + 2, base - 60, x + 12, base), fill=(50, 50, 70))
    c.rect((x - 24, base - 150, x + 24, base - 56), fill=coat, radius=10)
    c.circle(x, base - 178, 26, fill=(236, 196, 160))
    c.polygon(
        [(x + s * 24, base - 182), (x + s * 36, base - 174), (x + s * 24, base - 168)],
        fill=(220, 170, 130),
    )
    c.circle(x + s * 12, base - 186, 4, fill=BLACK)
    c.draw.chord(Canvas._s((x - 27, base - 208, x + 27, base - 160)), 180, 360, fill=(70, 50, 30))
    c.line([(x + s * 18, base - 130), (x + s * 46, base - 100)], fill=coat, width=12)
    if umbrella:
        c.line([(x + s * 46, base - 100), (x + s * 46, base - 250)], fill=BLACK, width=4)
        c.draw.chord(
            Canvas._s((x + s * 46 - 90, base - 300, x + s * 46 + 90, base - 200)),
            180,
            360,
            fill=umbrella,
        )


def fish(c: Canvas, cx, cy, color=ORANGE, facing="right") -> None:
    s = 1 if facing == "right" else -1
    c.ellipse((cx - 40, cy - 20, cx + 40, cy + 20), fill=color)
    c.polygon([(cx - s * 36, cy), (cx - s * 66, cy - 24), (cx - s * 66, cy + 24)], fill=color)
    c.circle(cx + s * 22, cy - 5, 5, fill=BLACK)


def snowman(c: Canvas, cx, base) -> None:
    c.circle(cx, base - 60, 60, fill=WHITE, outline=(200, 210, 220), width=2)
    c.circle(cx, base - 160, 44, fill=WHITE, outline=(200, 210, 220), width=2)
    c.circle(cx, base - 238, 32, fill=WHITE, outline=(200, 210, 220), width=2)
    c.polygon([(cx, base - 240), (cx + 34, base - 234), (cx, base - 230)], fill=ORANGE)
    c.circle(cx - 10, base - 248, 4, fill=BLACK)
    c.circle(cx + 10, base - 248, 4, fill=BLACK)
    c.rect((cx - 30, base - 280, cx + 30, base - 266), fill=BLACK)
    c.rect((cx - 20, base - 320, cx + 20, base - 276), fill=BLACK)


def cactus(c: Canvas, x, base) -> None:
    c.rect((x - 14, base - 140, x + 14, base), fill=(60, 140, 70), radius=14)
    c.rect((x - 50, base - 100, x - 14, base - 84), fill=(60, 140, 70), radius=8)
    c.rect((x - 50, base - 130, x - 34, base - 84), fill=(60, 140, 70), radius=8)


def _darker(color, f=0.72):
    return tuple(int(v * f) for v in color)


def _lighter(color, f=0.45):
    return tuple(int(v + (255 - v) * f) for v in color)


# --- scenes ----------------------------------------------------------------------------------
def mug_left_laptop(c, rng):
    table(c, rng, top=250)
    mug(c, 70, 410, size=1.5)
    laptop(c, 300, 410, width=300)


def laptop_left_mug(c, rng):
    table(c, rng, top=250)
    laptop(c, 40, 410, width=300)
    mug(c, 440, 410, size=1.5)


def mug_single(c, rng):
    table(c, rng, top=250)
    mug(c, 250, 410, size=1.5)


def mugs_two(c, rng):
    table(c, rng, top=250)
    mug(c, 130, 410, size=1.5)
    mug(c, 380, 410, color=GREEN, size=1.5)


def apples(n):
    def scene(c, rng):
        table(c, rng)
        plate(c, 320, 390)
        xs = [320 + (i - (n - 1) / 2) * 62 for i in range(n)]
        for x in xs:
            apple(c, x + rng.randint(-4, 4), 372 + rng.randint(-6, 4))

    return scene


def bananas(color):
    def scene(c, rng):
        table(c, rng)
        plate(c, 320, 390, rx=200, ry=56)
        for i, dy in enumerate((-22, 0, 22)):
            banana(c, 300 + i * 20, 360 + dy, color=color, angle=-0.12 + i * 0.1)

    return scene


def fruit_bowl(c, rng):
    table(c, rng)
    for x in (240, 310, 380):
        apple(c, x, 306, r=32, color=RED if x != 310 else GREEN)
    orange_fruit(c, 410, 300, r=32)
    banana(c, 300, 290, angle=-0.15)
    bowl(c, 320, 330, w=300)


def traffic(lit):
    def scene(c, rng):
        outdoors(c, rng)
        traffic_light(c, 278, 60, lit)

    return scene


def clock_at(hour):
    def scene(c, rng):
        c.rect((0, 0, WIDTH, HEIGHT), fill=(214, 226, 232))
        clock(c, 320, 240, 170, hour)

    return scene


def books(top_color, bottom_color):
    def scene(c, rng):
        table(c, rng)
        book(c, 190, 330, 260, 70, bottom_color)
        book(c, 210, 262, 230, 68, top_color)

    return scene


def arrow(direction):
    def scene(c, rng):
        outdoors(c, rng)
        arrow_sign(c, 320, 190, direction, "STATION")

    return scene


def shop_sign(word, color):
    def scene(c, rng):
        c.rect((0, 0, WIDTH, HEIGHT), fill=(200, 200, 206))
        shop(c, word, color)

    return scene


def house_sunny(c, rng):
    outdoors(c, rng)
    house(c, 120, 400)
    tree(c, 470, 410)


def street_rainy(c, rng):
    outdoors(c, rng, weather="rainy")
    house(c, 60, 400)
    person(c, 440, 420, "left", coat=YELLOW, umbrella=RED)
    rain(c, rng)


def shapes(big):
    def scene(c, rng):
        c.rect((0, 0, WIDTH, HEIGHT), fill=WHITE)
        sizes = {"circle": 70, "square": 70, "triangle": 70}
        sizes[big] = 120
        r = sizes["circle"]
        c.circle(140, 250, r, fill=BLUE)
        s = sizes["square"]
        c.rect((320 - s, 250 - s, 320 + s, 250 + s), fill=RED)
        t = sizes["triangle"]
        c.polygon([(500, 250 - t), (500 - t, 250 + t * 0.8), (500 + t, 250 + t * 0.8)], fill=GREEN)

    return scene


def people(first, second):
    def scene(c, rng):
        outdoors(c, rng)
        person(c, 230, 420, first, coat=BLUE)
        person(c, 410, 420, second, coat=GREEN)

    return scene


def square_moon(c, rng):
    outdoors(c, rng, night=True)
    c.rect((440, 50, 540, 150), fill=(250, 240, 190))
    house(c, 120, 400, color=(120, 60, 60))


def flying_fish(c, rng):
    outdoors(c, rng)
    house(c, 200, 400)
    for x, y in ((120, 90), (300, 60), (450, 130)):
        fish(c, x, y)


def trees(leaves):
    def scene(c, rng):
        outdoors(c, rng)
        for x in (130, 320, 510):
            tree(c, x, 420 - rng.randint(0, 20), leaves=leaves)

    return scene


def desert_snowman(c, rng):
    c.rect((0, 0, WIDTH, 320), fill=(150, 206, 250))
    c.rect((0, 320, WIDTH, HEIGHT), fill=(236, 204, 140))
    c.circle(540, 80, 42, fill=YELLOW)
    cactus(c, 130, 420)
    cactus(c, 520, 440)
    snowman(c, 320, 450)
    for _ in range(50):
        c.circle(rng.randint(0, WIDTH), rng.randint(0, 300), 3, fill=WHITE)


def six_hour_clock(c, rng):
    c.rect((0, 0, WIDTH, HEIGHT), fill=(214, 226, 232))
    cx, cy, r = 320, 240, 170
    c.circle(cx, cy, r + 10, fill=(60, 60, 64))
    c.circle(cx, cy, r, fill=WHITE)
    for h in range(1, 7):
        a = math.radians(h * 60 - 90)
        c.text(cx + (r - 28) * math.cos(a), cy + (r - 28) * math.sin(a), str(h), 30)
    c.line(
        [(cx, cy), (cx + 80 * math.cos(math.radians(30)), cy + 80 * math.sin(math.radians(30)))],
        fill=BLACK,
        width=9,
    )
    c.line([(cx, cy), (cx, cy - 130)], fill=BLACK, width=5)
    c.circle(cx, cy, 8, fill=RED)


Scene = Callable[[Canvas, random.Random], None]
SCENES: dict[str, Scene] = {
    "mug-left-laptop": mug_left_laptop,
    "laptop-left-mug": laptop_left_mug,
    "mug-single": mug_single,
    "mugs-red-green": mugs_two,
    "apples-3": apples(3),
    "apples-5": apples(5),
    "bananas-yellow": bananas(YELLOW),
    "bananas-blue": bananas(BLUE),
    "fruit-bowl": fruit_bowl,
    "traffic-red": traffic("red"),
    "traffic-green": traffic("green"),
    "clock-3": clock_at(3),
    "clock-9": clock_at(9),
    "books-blue-on-yellow": books(BLUE, YELLOW),
    "books-yellow-on-blue": books(YELLOW, BLUE),
    "arrow-left": arrow("left"),
    "arrow-right": arrow("right"),
    "shop-open": shop_sign("OPEN", GREEN),
    "shop-closed": shop_sign("CLOSED", RED),
    "house-sunny": house_sunny,
    "street-rainy-umbrella": street_rainy,
    "shapes-big-circle": shapes("circle"),
    "shapes-big-square": shapes("square"),
    "people-same-direction": people("right", "right"),
    "people-facing-each-other": people("right", "left"),
    "apples-red-factual": apples(4),
    "moon-square": square_moon,
    "fish-flying": flying_fish,
    "trees-purple": trees(PURPLE),
    "desert-snowman": desert_snowman,
    "clock-six-hours": six_hour_clock,
}
BLURRED = {"trees-purple-blurred": "trees-purple"}


def render(name: str) -> Image.Image:
    """Draw one scene; the same name always gives the same pixels (seeded from the name)."""
    if name in BLURRED:
        return render(BLURRED[name]).filter(ImageFilter.GaussianBlur(14))
    rng = random.Random(zlib.crc32(name.encode()))
    canvas = Canvas()
    SCENES[name](canvas, rng)
    return canvas.finish()


def all_names() -> list[str]:
    return [*SCENES, *BLURRED]


def write_all(directory: Path, *, names: list[str] | None = None, force: bool = False) -> int:
    """Write ``<name>.png`` for each scene into ``directory``; return how many were written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = 0
    for name in names or all_names():
        path = directory / f"{name}.png"
        if path.exists() and not force:
            continue
        render(name).save(path, optimize=True)
        written += 1
    return written
