"""Chinese and Hindi render with real glyphs on a machine that has no CJK or Devanagari font.

Chromium runs with a fontconfig that lists only the machine's fonts covering neither script
(``FONTCONFIG_FILE``), as on a fresh install; the glyphs must come from the fonts Blindspot
ships (static/fonts, declared in static/css/fonts.css). The proof is in pixels: without a font,
every character of a script is drawn as the same "tofu" box, so two different characters must
look different, and unlike what the page draws with the system's fonts alone.

Also here: the language a person picks is kept on their profile, so a fresh browser shows it
after login.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from django.db import connections
from django.urls import reverse
from PIL import Image, ImageChops

from annotator import services
from annotator.platform import roles
from tests.browser.conftest import ARGS, CHROMIUM, new_page
from tests.browser.test_keyboard_workspace import png_data_url
from tests.factories import PASSWORD, ProjectFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SAMPLES = {"zh": ("中", "文"), "hi": ("क", "ष")}


def fontconfig_without_cjk_or_devanagari(root: Path) -> Path:
    """A fonts.conf listing the machine's fonts that cover neither Chinese nor Hindi."""
    fonts = root / "fonts"
    fonts.mkdir()
    if shutil.which("fc-list"):

        def files(pattern: str) -> set[str]:
            out = subprocess.run(
                ["fc-list", pattern, "file"], capture_output=True, text=True, check=True
            ).stdout
            return {line.rsplit(":", 1)[0].strip() for line in out.splitlines() if line.strip()}

        covering = files(":lang=zh") | files(":lang=hi")
        for n, file in enumerate(sorted(files(":") - covering)):
            (fonts / f"{n}-{Path(file).name}").symlink_to(file)
    conf = root / "fonts.conf"
    conf.write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n'
        f"<fontconfig><dir>{fonts}</dir><cachedir>{root / 'cache'}</cachedir></fontconfig>\n"
    )
    if shutil.which("fc-list"):
        env = {**os.environ, "FONTCONFIG_FILE": str(conf)}
        for lang in ("zh", "hi"):
            left = subprocess.run(
                ["fc-list", f":lang={lang}"], capture_output=True, text=True, env=env, check=True
            ).stdout
            assert left == "", f"fonts for {lang} still visible: {left}"
    return conf


@pytest.fixture
def bare_chromium(monkeypatch, tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian chromium is not installed")
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    conf = fontconfig_without_cjk_or_devanagari(tmp_path)
    env = {**os.environ, "FONTCONFIG_FILE": str(conf)}
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS, env=env)
        yield browser
        connections.close_all()
        browser.close()


def glyph_png(page, char: str, family: str | None) -> Image.Image:
    """``char`` drawn 64 px large in the page's font (or ``family``), as a screenshot."""
    page.evaluate(
        """([char, family]) => {
            const el = document.createElement("span");
            el.id = "glyph-probe";
            el.textContent = char;
            el.style.fontSize = "64px";
            el.style.lineHeight = "1";
            el.style.display = "inline-block";
            el.style.padding = "4px";
            el.style.background = "#fff";
            el.style.color = "#000";
            if (family) el.style.fontFamily = family;
            document.getElementById("glyph-probe")?.remove();
            document.body.prepend(el);
        }""",
        [char, family],
    )
    page.evaluate(
        """() => {
            const el = document.getElementById("glyph-probe");
            return document.fonts.load("64px " + getComputedStyle(el).fontFamily, el.textContent);
        }"""
    )
    page.wait_for_function("() => document.fonts.status === 'loaded'")
    return Image.open(io.BytesIO(page.locator("#glyph-probe").screenshot())).convert("L")


def differ(a: Image.Image, b: Image.Image) -> bool:
    if a.size != b.size:
        return True
    return ImageChops.difference(a, b).getbbox() is not None


def log_in(page, base: str, username: str) -> None:
    page.goto(base + reverse("login"))
    page.keyboard.type(username)
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    with page.expect_navigation():
        page.keyboard.press("Enter")


def test_chinese_and_hindi_render_with_the_shipped_fonts(
    live_server, transactional_db, bare_chromium
):
    # Given a crowdworker with a task whose question is in Hindi and whose caption is Chinese
    worker = UserFactory(username="fontworker", role=roles.CROWDWORKER)
    project = ProjectFactory(members=[worker])
    queue = services.queue_create(
        project=project, kind="vqa_choice", title="हिन्दी 中文", config={}, redundancy=1
    )
    services.tasks_bulk_create(
        queue=queue,
        rows=[
            services.TaskRow(
                {
                    "image": {"url": png_data_url("red")},
                    "question": "क्या यह 红色 है?",
                    "choices": ["हाँ", "नहीं"],
                }
            )
        ],
    )
    page = new_page(bare_chromium)
    page.set_default_timeout(15000)
    log_in(page, live_server.url, "fontworker")

    # When the page draws each script in its own font, and with the system's fonts alone
    page.goto(live_server.url + reverse("work", args=[queue.pk]))
    page.wait_for_selector("#task-area[data-task-id]")
    for script, (one, other) in SAMPLES.items():
        tofu_one = glyph_png(page, one, "sans-serif")
        tofu_other = glyph_png(page, other, "sans-serif")
        real_one = glyph_png(page, one, None)
        real_other = glyph_png(page, other, None)
        # Then without the shipped fonts the machine has no glyph (the test's premise) …
        assert not differ(tofu_one, tofu_other), f"{script}: the system still has a font"
        # … and with them, each character has its own shape, not the box.
        assert differ(real_one, tofu_one), f"{script}: {one} drawn as a box"
        assert differ(real_one, real_other), f"{script}: {one} and {other} look the same"
    loaded = page.evaluate(
        "[...document.fonts].filter(f => f.status === 'loaded').map(f => f.family)"
    )
    assert any("Noto Sans SC" in f for f in loaded), loaded
    assert any("Noto Sans Devanagari" in f for f in loaded), loaded
    page.screenshot(path=str(Path(os.environ.get("BLINDSPOT_SHOTS", "/tmp")) / "fonts-task.png"))

    # And the interface itself switched to Hindi, then Chinese, is drawn with glyphs
    for code in ("hi", "zh-hans"):
        with page.expect_navigation():
            page.select_option("#lang-select", code)
        page.wait_for_selector("#task-area")
        page.evaluate("() => document.fonts.ready")
        assert page.get_attribute("html", "lang") == code
        assert "Submit" not in page.inner_text("#task-submit")  # translated
        page.screenshot(
            path=str(Path(os.environ.get("BLINDSPOT_SHOTS", "/tmp")) / f"fonts-{code}.png")
        )
    assert page.js_errors == []
    assert page.console_errors == []  # the fonts load under the Content-Security-Policy
    page.context.close()

    # The choice is on the profile: a fresh browser shows Chinese right after login.
    fresh = new_page(bare_chromium)
    log_in(fresh, live_server.url, "fontworker")
    assert fresh.get_attribute("html", "lang") == "zh-hans"
    fresh.context.close()
