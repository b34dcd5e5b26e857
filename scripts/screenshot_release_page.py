"""Walk the steward workflow in chromium against a running `make run` and screenshot the release page.

    .venv/bin/python scripts/screenshot_release_page.py http://127.0.0.1:8000 steward PASSWORD docs/img/release-page.png

Needs Debian's chromium (/usr/bin/chromium) and the `adult.csv` table (path in ADULT, or argv[5]).
Exits non-zero if the browser logged a console error.
"""

import re
import sys
import time

from playwright.sync_api import sync_playwright

BASE, USER, PW, SHOT = sys.argv[1:5]
ADULT = sys.argv[5] if len(sys.argv) > 5 else "/work/shared/datasets/adult.csv"
errors = []
with sync_playwright() as p:
    b = p.chromium.launch(
        executable_path="/usr/bin/chromium",
        args=[
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ],
    )
    page = b.new_page(viewport={"width": 1200, "height": 900})
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(BASE + "/")
    page.fill("#id_username", USER)
    page.fill("#id_password", PW)
    page.click("button.primary")
    page.goto(BASE + "/datasets/upload/")
    page.set_input_files("#id_file", ADULT)
    page.fill("#id_name", "adult census")
    page.click("#upload-form button.primary")
    page.wait_for_url(re.compile(r".*/schema/$"))
    print("schema page:", page.url)
    page.click("#confirm-schema")
    print("without ack:", page.locator("#schema-error").inner_text()[:100])
    page.check("#public-ack")
    page.click("#confirm-schema")
    page.wait_for_url(re.compile(r".*/datasets/\d+/$"))
    ds = page.url
    page.goto(ds + "budget/")
    page.check("input[value=low]")
    page.click("#budget-form button.primary")
    page.wait_for_url(ds)
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
