"""Playwright driving Debian's chromium, shared by the browser tests (web, dashboards, e2e).

`playwright install` cannot download a browser here; the apt package works with these flags
(checked on Debian 12's chromium package).
"""

from __future__ import annotations

import os
import shutil

# Every wait in the browser tests is on a condition (an element, a URL, a state); these are only the
# ceilings. Under load (two CPU-bound processes beside the suite on 2 cores) a click on a page still
# rendering once took longer than Playwright's default 30 s, so actions get minutes, and a job (a release,
# its evaluation) more. DPPORTAL_BROWSER_TIMEOUT_MS raises them on a slower machine.
ACTION_TIMEOUT_MS = int(os.environ.get("DPPORTAL_BROWSER_TIMEOUT_MS", "180000"))
JOB_TIMEOUT_MS = 3 * ACTION_TIMEOUT_MS

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


def patient(page):
    """The page with the ceilings above for its actions and navigations; returns it."""
    page.set_default_timeout(ACTION_TIMEOUT_MS)
    page.set_default_navigation_timeout(ACTION_TIMEOUT_MS)
    return page


def watch_page(page, base_url: str, errors: list[str], external: list[str]) -> None:
    """Record console errors and page errors in ``errors``, and requests leaving ``base_url`` in ``external``;
    the page gets the ceilings of :func:`patient`."""
    patient(page)
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: external.append(r.url) if not r.url.startswith(base_url) else None)
