"""The dashboard's tests drive Debian's chromium (tests/support/chromium.sh installs it) with
Playwright, never a downloaded browser: where it is, how it is started, and a page signed in to a
running `drsg serve` with its token."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.support.server import TOKEN, RunningServer

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]

# `make test` installs it (tests/support/chromium.sh); in CI a missing browser fails rather than skips
needs_chromium = pytest.mark.skipif(
    not Path(CHROMIUM).exists() and not os.environ.get("CI"), reason="Debian's chromium is not installed (make browser)"
)


def launch(playwright: Any) -> Any:
    """Headless chromium from Debian's package."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)


def sign_in(page: Any, served: RunningServer) -> None:
    """Open the dashboard and give it the server's token, as a person does."""
    page.goto(f"http://127.0.0.1:{served.port}/#planes")
    page.fill("#token", TOKEN)
    page.click("#signin")
    page.wait_for_selector("#planes table")
