"""End to end in a real browser (Playwright + Debian chromium) against a live server (runserver) with a
real Celery worker on the embedded filesystem broker: a new steward logs in, uploads adult.csv,
confirms the schema, sets a budget, releases with two mechanisms (baseline and kdtree-grid), watches
progress to done, opens the dashboard, downloads the CSV, reviews the ledger, grants an analyst, and
the analyst logs in and downloads; finally the steward deletes the raw file. A screenshot of every
step goes to test-artifacts/e2e/. No console errors and no request leaves the server."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from tests.browser import JOB_TIMEOUT_MS, launch_chromium, require_chromium, watch_page
from tests.live import Stack, manage
from tests.samples import ADULT

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts" / "e2e"
ROWS = 500

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def stack(tmp_path):
    s = Stack(tmp_path / "stack")
    manage(s.env, "create_steward", "new-steward", "--password", "steward-pass-8642")
    manage(s.env, "create_steward", "new-analyst", "--password", "analyst-pass-9753", "--role", "analyst")
    s.start()
    yield s
    s.stop()


def _shot(page, n: int, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{n:02d}-{name}.png"), full_page=True)


def _login(page, url: str, username: str, password: str) -> None:
    page.goto(url + "/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button.primary")
    page.wait_for_url(re.compile(r".*/datasets/$"))


def _release(page, dataset_url: str, mechanism: str, epsilon: str) -> str:
    page.goto(f"{dataset_url}releases/new/?mechanism={mechanism}")
    page.fill("#id_epsilon", epsilon)
    page.fill("#id_rows", str(ROWS))
    if page.locator("input[name=confirm_would_fail]").count():  # predicted near-uniform: confirm
        page.check("input[name=confirm_would_fail]")
    page.click("#submit-release")
    page.wait_for_url(re.compile(r".*/releases/\d+/$"))
    return page.url


def _read_download(page, selector: str) -> list[list[str]]:
    with page.expect_download() as dl:
        page.click(selector)
    with open(dl.value.path(), newline="") as fh:
        return list(csv.reader(fh))


def test_a_new_steward_walks_the_whole_workflow_and_an_analyst_downloads(stack):
    chromium = require_chromium()
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for old in ARTIFACTS.glob("*.png"):
        old.unlink()
    errors, external = [], []
    header = ADULT.open().readline().strip().split(",")
    url = stack.url
    with sync_playwright() as p:
        browser = launch_chromium(p, chromium)

        def new_page():
            page = browser.new_context(accept_downloads=True).new_page()
            watch_page(page, url, errors, external)
            return page

        # 1. the steward logs in
        page = new_page()
        _login(page, url, "new-steward", "steward-pass-8642")
        _shot(page, 1, "steward-logged-in")

        # 2. upload adult.csv
        page.goto(url + "/datasets/upload/")
        page.fill("#id_name", "adult")
        page.set_input_files("#id_file", str(ADULT))
        _shot(page, 2, "upload")
        page.click("#upload-form button.primary")
        page.wait_for_url(re.compile(r".*/schema/$"))

        # 3. confirm the schema (suggestions reviewed; age bounds set from public knowledge)
        assert page.locator(".suggestion").count() >= 10
        page.fill("input[name=col-0-lower]", "17")
        page.fill("input[name=col-0-upper]", "90")
        page.check("#public-ack")
        _shot(page, 3, "schema")
        page.click("#confirm-schema")
        page.wait_for_url(re.compile(r".*/datasets/\d+/$"))
        assert page.locator("#schema-error").count() == 0
        dataset_url = page.url

        # 4. set a budget (custom: epsilon 3)
        page.goto(dataset_url + "budget/")
        page.check("input[value=custom]")
        page.fill("#id_epsilon", "3")
        page.fill("#id_delta", "0")
        _shot(page, 4, "budget")
        page.click("#budget-form button.primary")
        page.wait_for_url(dataset_url)

        # 5-6. two releases; watch the progress of each until done
        release_urls = [_release(page, dataset_url, "baseline", "1"), _release(page, dataset_url, "kdtree-grid", "1")]
        for i, release_url in enumerate(release_urls):
            page.goto(release_url)
            if i == 1:
                _shot(page, 5, "release-progress")
            page.wait_for_selector("#download-csv:visible", timeout=JOB_TIMEOUT_MS)
            assert page.locator("#status-pill").inner_text() == "done"
        _shot(page, 6, "release-done")

        # 7. the dashboard of the first release
        page.goto(release_urls[0] + "dashboard/")
        assert page.locator("#not-private-note").count() == 1
        page.wait_for_selector("#eval-progress", state="detached", timeout=JOB_TIMEOUT_MS)
        assert page.locator("#evaluation-failed").count() == 0
        _shot(page, 7, "dashboard")

        # 8. download the CSV
        page.goto(release_urls[0])
        rows = _read_download(page, "#download-csv")
        assert rows[0] == header and len(rows) == ROWS + 1
        _shot(page, 8, "downloaded")

        # 9. the ledger: both releases spent, 1 + 1 of 3
        page.goto(dataset_url + "ledger/")
        ledger_text = page.inner_text("body")
        assert "spent" in ledger_text
        _shot(page, 9, "ledger")

        # 10. grant the analyst
        page.goto(dataset_url)
        page.fill("input[name=username][placeholder]", "new-analyst")
        page.click("form.row button:has-text('Grant')")
        page.wait_for_url(dataset_url)
        assert "new-analyst" in page.inner_text("body")
        _shot(page, 10, "granted")

        # 11. the analyst logs in, sees the dataset's releases (no steward tools) and downloads
        analyst = new_page()
        _login(analyst, url, "new-analyst", "analyst-pass-9753")
        analyst.click("text=adult")
        analyst.wait_for_url(dataset_url)
        assert analyst.locator("text=Set budget").count() == 0
        analyst.goto(release_urls[1])
        rows = _read_download(analyst, "#download-csv")
        assert rows[0] == header and len(rows) == ROWS + 1
        _shot(analyst, 11, "analyst-downloaded")
        # steward-only pages stay 404 for the analyst (fetched without rendering: no console noise)
        for steward_only in (release_urls[1] + "dashboard/", dataset_url + "ledger/", dataset_url + "schema/"):
            assert analyst.context.request.get(steward_only).status == 404, steward_only

        # 12. the steward deletes the raw file: the dataset says so, the budget is not freed
        page.goto(dataset_url)
        page.check("#raw-delete-form input[name=confirm]")
        page.click("#raw-delete-form button")
        page.wait_for_url(dataset_url)
        assert "deleted" in page.inner_text("#raw-status")
        assert "remaining 1 of" in page.inner_text("body")
        _shot(page, 12, "raw-deleted")
        browser.close()
    assert errors == [], errors
    assert external == [], external
