"""Browser test (Playwright driving Debian's chromium): a table page draws its bar chart with error bars
offline (the vendored plotly.js), with no console error and no request to a non-loopback host. Screenshot in
test-artifacts/ (gitignored)."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.conf import settings as django_settings
from django.test import Client

from tests.browser import chromium_path, launch_chromium, patient
from tests.personas import make_dataset, make_personas, run_release

CHROMIUM = chromium_path()
ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts"
LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not os.path.exists(CHROMIUM), reason="needs Debian chromium (scripts/ensure-system-packages.sh)"
    ),
]

CITIES = ["Paris", "Lyon", "Nice", "other"]


def _csv(n: int = 400) -> str:
    rows = ["age,city,income,note"] + [f"{20 + i % 60},{CITIES[i % 7 % 4]},{1000 * (i % 90)},x" for i in range(n)]
    return "\n".join(rows) + "\n"


@pytest.fixture
def finished(transactional_db):
    people = make_personas()
    dataset = make_dataset(people.owner, text=_csv())
    dataset.analysts.add(people.analyst)
    release = run_release(dataset, people.owner, epsilon="1", rows=100)
    assert release.status == "done", release.error
    client = Client()
    client.force_login(people.analyst)
    return {"release": release, "session": client.cookies[django_settings.SESSION_COOKIE_NAME].value}


def test_a_table_page_draws_its_error_bars_offline(finished, live_server):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = launch_chromium(p, CHROMIUM)
        context = browser.new_context(viewport={"width": 1200, "height": 900})
        context.add_cookies(
            [{"name": django_settings.SESSION_COOKIE_NAME, "value": finished["session"], "url": live_server.url}]
        )
        external, errors = [], []

        def guard(route):
            host = urlsplit(route.request.url).hostname or ""
            if route.request.url.startswith(("data:", "blob:")) or host in LOOPBACK:
                route.continue_()
            else:
                external.append(route.request.url)
                route.abort()

        context.route("**/*", guard)
        page = patient(context.new_page())
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        resp = page.goto(f"{live_server.url}/releases/{finished['release'].pk}/tables/1/")
        assert resp.status == 200
        page.wait_for_load_state("networkidle")
        assert page.locator("#table-chart svg.main-svg").count() >= 1
        assert page.locator("#table-chart g.errorbar").count() == 4  # one error bar per city
        assert page.locator("#table-cells tbody tr").count() == 4
        page.screenshot(path=str(ARTIFACTS / "release-table.png"), full_page=True)
        browser.close()
    assert external == [] and errors == [], (external, errors)
