"""Playwright driving Debian's chromium, shared by the browser tests (web, dashboards, e2e).

`playwright install` cannot download a browser here; the apt package works with these flags
(checked on Debian 12's chromium package).
"""

from __future__ import annotations

import os
import shutil

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_path() -> str:
    """The chromium on PATH, else Debian's default location (which may not exist)."""
    return shutil.which("chromium") or "/usr/bin/chromium"


def require_chromium() -> str:
    """The chromium binary; fails (does not skip) when it is missing, so CI cannot pass without it."""
    chromium = chromium_path()
    assert os.path.exists(chromium), "chromium is missing: run scripts/ensure-system-packages.sh (make test does)"
    return chromium


def launch_chromium(playwright, executable: str | None = None):
    """A headless chromium browser from a running ``sync_playwright()`` context."""
    return playwright.chromium.launch(executable_path=executable or chromium_path(), args=CHROMIUM_ARGS)


def watch_page(page, base_url: str, errors: list[str], external: list[str]) -> None:
    """Record console errors and page errors in ``errors``, and requests leaving ``base_url`` in ``external``."""
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: external.append(r.url) if not r.url.startswith(base_url) else None)
