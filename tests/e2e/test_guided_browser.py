"""A steward walks from the upload of a 40-column table to a recommended release in the browser, never
opening "Advanced". Screenshots of every step go to test-artifacts/ (and to docs/img/ for
the README when DPPORTAL_SCREENSHOTS=docs)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

from tests.browser import JOB_TIMEOUT_MS, launch_chromium, require_chromium, watch_page
from tests.personas import PASSWORD, make_personas

from .test_browser import eager_tasks  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / ("docs/img" if os.environ.get("DPPORTAL_SCREENSHOTS") == "docs" else "test-artifacts")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def wide_csv(path: Path, rows: int = 5000, columns: int = 40) -> None:
    """A deterministic 40-column table: 20 integer columns (amounts 0-999: 20 bins) and 20 categorical ones."""
    rng = np.random.default_rng(18)
    cols = {}
    for j in range(columns // 2):
        cols[f"num{j:02d}"] = rng.integers(0, 1000, rows).astype(str)
        cols[f"cat{j:02d}"] = rng.choice(["red", "green", "blue", "grey"], rows, p=[0.4, 0.3, 0.2, 0.1])
    names = list(cols)
    lines = [",".join(names)] + [",".join(cols[n][i] for n in names) for i in range(rows)]
    path.write_text("\n".join(lines) + "\n")


def shot(page, name: str) -> None:
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / f"guided-{name}.png"), full_page=name != "2-schema")


def test_a_steward_releases_a_wide_table_as_recommended_without_opening_advanced(live_server, eager_tasks, tmp_path):
    chromium = require_chromium()
    from playwright.sync_api import sync_playwright

    owner = make_personas().owner
    data = tmp_path / "wide.csv"
    wide_csv(data)
    errors, external = [], []
    with sync_playwright() as p:
        browser = launch_chromium(p, chromium)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        watch_page(page, live_server.url, errors, external)
        page.goto(live_server.url + "/")
        page.fill("#id_username", owner.username)
        page.fill("#id_password", PASSWORD)
        page.click("button.primary")
        page.goto(live_server.url + "/datasets/upload/")
        page.set_input_files("#id_file", str(data))
        shot(page, "1-upload")
        page.click("#upload-form button.primary")
        page.wait_for_url(re.compile(r".*/schema/$"))
        shot(page, "2-schema")
        page.check("#public-ack")
        page.click("#confirm-schema")
        page.wait_for_url(re.compile(r".*/datasets/\d+/$"))
        dataset_url = page.url
        page.goto(dataset_url + "budget/")
        page.check("input[value=low]")
        page.click("#budget-form button.primary")
        page.wait_for_url(dataset_url)
        page.goto(dataset_url + "releases/new/")
        # 1. purpose: cross-tabulate two pairs; accept 15% error
        page.check("input[name=purpose][value=marginals]")
        page.fill("#id_pairs", "num00:cat00, num01:cat01")
        page.fill("#id_error_pct", "15")
        shot(page, "3-purpose")
        page.click("#show-recommendation")
        page.wait_for_selector("#recommendation")
        recommended = page.inner_text("#recommended-mechanism")
        page.wait_for_selector("#curve-chart .main-svg")  # the curve is drawn (vendored plotly)
        failing = page.locator("#predictions tr.status-would-fail")
        assert failing.count() >= 3  # the joint-domain mechanisms, last, with their reason
        assert "near-uniform" in failing.first.inner_text()
        assert (
            page.locator("#predictions tbody tr")
            .last.get_attribute("class")
            .startswith(("status-would-fail", "status-unavailable"))
        )
        shot(page, "4-recommendation")
        # 2. epsilon by accuracy: take the smallest epsilon predicted to reach 15%
        smallest = page.inner_text("#smallest-epsilon strong")
        assert 0 < float(smallest) < 1  # within the remaining budget (the "low" preset: epsilon 1)
        page.click("#use-epsilon")
        page.wait_for_selector("#curve-chart .main-svg")
        assert page.input_value("#release-form input[name=epsilon]") == smallest
        # the release form is the recommended mechanism's, Advanced stays closed
        assert page.input_value("#release-form input[name=mechanism]") == recommended
        if page.locator("details#advanced").count():
            assert page.locator("details#advanced").get_attribute("open") is None
        page.fill("#id_rows", "200")
        page.click("#submit-release")
        page.wait_for_url(re.compile(r".*/releases/\d+/$"))
        page.wait_for_selector("#download-csv:visible", timeout=JOB_TIMEOUT_MS)
        assert page.locator("#status-pill").inner_text() == "done"
        shot(page, "5-released")
        browser.close()
    assert errors == []
    assert external == []
