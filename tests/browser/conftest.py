"""Debian's chromium through Playwright, against pytest-django's live server.

The live server runs in another thread, so browser tests use a transactional database. Each page
records its uncaught JavaScript errors (``page.js_errors``) and its console errors
(``page.console_errors``: Content-Security-Policy refusals, "Refused to …", and failed loads).
"""

import os

import pytest
from django.db import connections

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


@pytest.fixture
def chromium(monkeypatch):
    sync_api = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian chromium is not installed")
    # Playwright's sync API runs an event loop in this thread; the ORM calls here are plain
    # synchronous test setup and checks.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield browser
        # The ORM calls made while Playwright's sync loop runs get a connection of their own,
        # which pytest-django's teardown does not see; close it, or the test database cannot be
        # dropped at the end of the session ("being accessed by other users").
        connections.close_all()
        browser.close()


def new_page(browser):
    """A page in a fresh context (its own cookies), recording errors as it goes."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.js_errors = []
    page.console_errors = []
    page.on("pageerror", lambda exc: page.js_errors.append(f"{page.url}: {exc}"))
    page.on("console", lambda msg: _console(page, msg))
    return page


def _console(page, msg) -> None:
    if msg.type == "error":
        source = msg.location.get("url") or ""
        page.console_errors.append(f"{page.url}: {msg.text}" + (f" ({source})" if source else ""))


@pytest.fixture
def browser_page(chromium):
    page = new_page(chromium)
    yield page
    page.context.close()
