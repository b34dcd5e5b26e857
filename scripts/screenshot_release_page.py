"""Walk the steward workflow in chromium against a running `make run` and screenshot the release page.

    .venv/bin/python scripts/screenshot_release_page.py http://127.0.0.1:8000 steward PASSWORD docs/img/release-page.png

Needs Debian's chromium (/usr/bin/chromium) and the `adult.csv` table (path in ADULT, or argv[5]).
Exits non-zero if the browser logged a console error.
"""

import re
import sys
import time

from playwright.sync_api import sync_playwright

from walk import open_page, set_budget, sign_in, upload_and_confirm

BASE, USER, PW, SHOT = sys.argv[1:5]
ADULT = sys.argv[5] if len(sys.argv) > 5 else "/work/shared/datasets/adult.csv"
errors = []
with sync_playwright() as p:
    b, page = open_page(p, errors)
    sign_in(page, BASE, USER, PW)
    ds = upload_and_confirm(page, BASE, ADULT, "adult census", show_refusal=True)
    set_budget(page, ds)
    page.goto(ds + "releases/new/")
    page.fill("#id_epsilon", "0.5")
    page.fill("#id_rows", "1000")
    page.click("#submit-release")
    page.wait_for_url(re.compile(r".*/releases/\d+/$"))
    t0 = time.time()
    page.wait_for_selector("#download-csv:visible", timeout=60000)
    print("release done in %.1fs" % (time.time() - t0), page.url)
    page.screenshot(path=SHOT, full_page=True)
    with page.expect_download() as dl:
        page.click("#download-csv")
    print("downloaded", dl.value.suggested_filename)
    b.close()
print("console errors:", errors)
sys.exit(1 if errors else 0)
