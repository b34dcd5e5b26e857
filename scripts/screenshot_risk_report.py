"""Release MST on the German credit sample at epsilon 1 in chromium against a running `make run`, wait for
the risk report on the release's dashboard and screenshot it.

    .venv/bin/python scripts/screenshot_risk_report.py http://127.0.0.1:8000 steward PASSWORD docs/img/risk-report.png

Needs Debian's chromium (/usr/bin/chromium). Exits non-zero if the browser logged a console error.
"""

import re
import sys
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from walk import open_page, set_budget, sign_in, upload_and_confirm

BASE, USER, PW, SHOT = sys.argv[1:5]
DATA = Path(__file__).resolve().parents[1] / "samples" / "german_credit.csv"
errors = []
with sync_playwright() as p:
    b, page = open_page(p, errors)
    sign_in(page, BASE, USER, PW)
    ds = upload_and_confirm(page, BASE, str(DATA), "german credit")
    set_budget(page, ds)
    page.goto(ds + "releases/new/?mechanism=mst")
    page.fill("#id_epsilon", "1")
    page.click("#submit-release")
    page.wait_for_url(re.compile(r".*/releases/\d+/$"))
    release = page.url
    page.wait_for_selector("#download-csv:visible", timeout=120000)
    t0 = time.time()
    page.goto(release + "dashboard/")
    while not page.locator("#risk-summary").count() and time.time() - t0 < 300:
        time.sleep(3)
        try:
            page.goto(release + "dashboard/")
        except Exception:  # the page refreshes itself while the report runs
            pass
    print("risk report after %.0f s" % (time.time() - t0), page.url)
    page.locator("#risk-report").screenshot(path=SHOT)
    b.close()
print("console errors:", errors)
sys.exit(1 if errors else 0)
