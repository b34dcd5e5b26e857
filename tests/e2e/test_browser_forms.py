"""The small form helpers of static/dpportal/forms.js in a real browser: typing a custom
budget chooses "Custom values"; the schema page's review count follows the ticks and typed values."""

from __future__ import annotations

import pytest

from tests.browser import launch_chromium, require_chromium, watch_page
from tests.personas import PASSWORD, make_dataset, make_personas

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_budget_and_schema_helpers(live_server, tmp_path):
    chromium = require_chromium()
    from playwright.sync_api import sync_playwright

    owner = make_personas().owner
    d = make_dataset(owner, schema=None, budget=None)
    errors, external = [], []
    with sync_playwright() as p:
        browser = launch_chromium(p, chromium)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        watch_page(page, live_server.url, errors, external)
        page.goto(live_server.url + "/accounts/login/")
        page.fill("#id_username", owner.username)
        page.fill("#id_password", PASSWORD)
        page.click("button.primary")
        page.goto(f"{live_server.url}/datasets/{d.pk}/budget/")
        assert page.is_checked("input[name=preset][value=moderate]")
        page.fill("#id_epsilon", "3")
        assert page.is_checked("input[name=preset][value=custom]")  # typing chose "Custom values"

        page.goto(f"{live_server.url}/datasets/{d.pk}/schema/")
        count = page.locator("#review-count")
        assert count.inner_text().startswith("4 of 4 kept columns")
        page.check("input[name=col-1-ok]")
        assert count.inner_text().startswith("3 of 4 kept columns")
        page.fill("input[name=col-0-upper]", "120")  # typing a value counts as reviewing the row
        assert page.is_checked("input[name=col-0-ok]") and count.inner_text().startswith("2 of 4")
        page.select_option("select[name=col-3-kind]", "excluded")
        assert count.inner_text().startswith("1 of 3 kept columns")
        page.fill("input[name=col-2-lower]", "1")  # integer answer codes 1..12, then made categorical
        page.fill("input[name=col-2-upper]", "12")
        assert page.input_value("textarea[name=col-2-categories]") == ""  # an integer row: no list yet
        page.select_option("select[name=col-2-kind]", "categorical")
        assert page.input_value("textarea[name=col-2-categories]").split() == [str(v) for v in range(1, 13)]
        # the row now shows its categorical fields only: the list collapsed under a summary of the codes
        assert not page.is_visible("input[name=col-2-lower]") and page.is_visible("input[name=col-2-other]")
        assert page.inner_text("tr:has(select[name=col-2-kind]) summary").startswith("12 categories: 1, 2, 3")
        page.fill("input[name=col-0-upper]", "100000")  # too many codes for a list: left empty
        page.select_option("select[name=col-0-kind]", "categorical")
        assert page.input_value("textarea[name=col-0-categories]") == ""
        page.select_option("select[name=col-0-kind]", "integer")
        page.fill("input[name=col-0-upper]", "120")
        page.click("#bulk-review")  # server side: tick every column
        page.wait_for_selector("#bulk-note")
        assert page.locator("#review-count").inner_text().startswith("All 3 kept columns")
        assert page.input_value("input[name=col-0-upper]") == "120"  # the typed value survived
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280
        browser.close()
    assert errors == [] and external == []
