"""A 42-column table walked from upload to download at 1280 px: no page is wider than the window, no
table hides a column behind its own scroll bar, and the schema page stays compact."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from tests.browser import CHROMIUM_ARGS, JOB_TIMEOUT_MS, require_chromium, watch_page
from tests.personas import PASSWORD, make_personas

from .test_browser import eager_tasks  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTH = 1280
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

# the widest element of the page, or of a table cut by its own scroll box, with by how much
OVERFLOW = """() => {
  const doc = document.documentElement, out = [];
  if (doc.scrollWidth > window.innerWidth || doc.scrollWidth > doc.clientWidth)
    out.push('page ' + doc.scrollWidth + ' > ' + doc.clientWidth + ' of ' + window.innerWidth);
  for (const el of document.querySelectorAll('table, pre, .card')) {
    if (el.tagName === 'PRE') continue;
    if (el.scrollWidth > el.clientWidth + 1) out.push((el.id || el.className || el.tagName) + ' '
      + el.scrollWidth + ' > ' + el.clientWidth);
  }
  return out;
}"""


def census_like_csv(path: Path, rows: int = 400) -> None:
    """42 columns with long census-style names: integers, money amounts, decimals and categories."""
    rng = np.random.default_rng(34)
    cols = {}
    for j in range(14):
        cols[f"household_income_component_{j:02d}"] = rng.integers(0, 100_000, rows).astype(str)
        cols[f"weeks_worked_in_year_{j:02d}"] = rng.integers(0, 53, rows).astype(str)
        cols[f"detailed_occupation_recode_{j:02d}"] = rng.choice(
            ["Not in universe", "Executive admin and managerial", "Precision production craft & repair"], rows
        )
    cols["migration_code_change_in_msa_reported_by_household_reference_person"] = rng.choice(["?", "Nonmover"], rows)
    del cols["detailed_occupation_recode_13"]
    names = list(cols)
    lines = [",".join(names)] + [",".join(cols[n][i] for n in names) for i in range(rows)]
    path.write_text("\n".join(lines) + "\n")


def assert_fits(page, where: str) -> None:
    page.wait_for_load_state()
    assert page.evaluate(OVERFLOW) == [], where


def test_a_wide_table_walks_from_upload_to_download_without_horizontal_overflow(live_server, eager_tasks, tmp_path):
    chromium = require_chromium()
    from playwright.sync_api import sync_playwright

    owner = make_personas().owner
    data = tmp_path / "census.csv"
    census_like_csv(data)
    errors, external = [], []
    with sync_playwright() as p:
        # scroll bars as a desktop chromium draws them (headless hides them): the page gets 1280 px less the bar
        browser = p.chromium.launch(
            executable_path=chromium, args=CHROMIUM_ARGS, ignore_default_args=["--hide-scrollbars"]
        )
        page = browser.new_page(viewport={"width": WIDTH, "height": 900})
        watch_page(page, live_server.url, errors, external)
        page.goto(live_server.url + "/")
        page.fill("#id_username", owner.username)
        page.fill("#id_password", PASSWORD)
        page.click("button.primary")
        page.goto(live_server.url + "/datasets/upload/")
        assert_fits(page, "upload")
        page.set_input_files("#id_file", str(data))
        page.click("#upload-form button.primary")
        page.wait_for_url(re.compile(r".*/schema/$"))
        assert_fits(page, "schema")
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "layout-schema-1280.png"), full_page=True)
        height = page.evaluate("document.documentElement.scrollHeight")
        assert height < 6429 / 2, f"schema page {height} px tall for 42 columns"
        page.check("#public-ack")
        page.click("#confirm-schema")
        page.wait_for_url(re.compile(r".*/datasets/\d+/$"))
        dataset_url = page.url
        assert_fits(page, "dataset")
        page.goto(dataset_url + "budget/")
        assert_fits(page, "budget")
        page.check("input[value=moderate]")
        page.click("#budget-form button.primary")
        page.wait_for_url(dataset_url)
        page.goto(dataset_url + "releases/new/?purpose=ml&target=detailed_occupation_recode_00")
        page.wait_for_selector("#recommendation")
        assert page.locator("td.model-quality").count() >= 3  # measured model accuracy, one more column
        assert_fits(page, "recommendation for training a model")
        page.goto(dataset_url + "releases/new/?mechanism=baseline")
        assert_fits(page, "release form")
        page.fill("#id_epsilon", "0.2")
        page.fill("#id_rows", "100")
        page.click("#submit-release")
        page.wait_for_load_state()
        if page.locator("input[name=confirm_high_error]").count():  # 400 rows: a high predicted error
            page.check("input[name=confirm_high_error]")
            page.click("#submit-release")
        page.wait_for_url(re.compile(r".*/releases/\d+/$"))
        page.wait_for_selector("#download-csv:visible", timeout=JOB_TIMEOUT_MS)
        assert_fits(page, "release page")
        with page.expect_download() as download:
            page.click("#download-csv")
        header = Path(download.value.path()).read_text().splitlines()[0]
        assert header.count(",") == 41
        release_url = page.url
        page.fill("#draw-form input[name=rows]", "50")  # a free draw: a note row on the ledger
        page.click("#draw-form button")
        page.wait_for_url(re.compile(r".*/releases/\d+/$"))
        page.goto(release_url)
        page.click("#privacy-report-link")
        page.wait_for_selector("#privacy-report")
        assert_fits(page, "privacy report")
        page.emulate_media(media="print")
        assert not page.locator("header.top").is_visible() and page.locator("#report-caveats").is_visible()
        page.emulate_media(media="screen")
        page.goto(dataset_url + "ledger/")
        assert_fits(page, "ledger")
        assert page.locator(".ledger-table tr.kind-note").count() == 1
        params = page.locator(".ledger-table td.params code").first
        assert params.is_visible()
        box, table = params.bounding_box(), page.locator(".ledger-table").bounding_box()
        assert box["x"] + box["width"] <= table["x"] + table["width"] + 1  # the Parameters column is not cut
        page.goto(dataset_url + "dashboard/")
        assert_fits(page, "dashboard")
        browser.close()
    assert errors == []
    assert external == []
