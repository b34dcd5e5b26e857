"""The steward's first steps in chromium, shared by the screenshot scripts: sign in, upload a CSV and
confirm its drafted schema, set a budget preset."""

import re

CHROMIUM = "/usr/bin/chromium"  # Debian's chromium
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def open_page(playwright, errors: list):
    """A 1200 x 900 page whose console errors and page errors are appended to ``errors``."""
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return browser, page


def sign_in(page, base: str, user: str, password: str) -> None:
    page.goto(base + "/")
    page.fill("#id_username", user)
    page.fill("#id_password", password)
    page.click("button.primary")


def upload_and_confirm(page, base: str, path: str, name: str, *, show_refusal: bool = False) -> str:
    """Upload ``path``, confirm the drafted schema (acknowledging it as public); returns the dataset's URL.
    ``show_refusal`` first clicks confirm without the acknowledgement and prints the page's refusal."""
    page.goto(base + "/datasets/upload/")
    page.set_input_files("#id_file", path)
    page.fill("#id_name", name)
    page.click("#upload-form button.primary")
    page.wait_for_url(re.compile(r".*/schema/$"))
    print("schema page:", page.url)
    if show_refusal:
        page.click("#confirm-schema")
        print("without ack:", page.locator("#schema-error").inner_text()[:100])
    page.check("#public-ack")
    page.click("#confirm-schema")
    page.wait_for_url(re.compile(r".*/datasets/\d+/$"))
    return page.url


def set_budget(page, dataset_url: str, preset: str = "low") -> None:
    page.goto(dataset_url + "budget/")
    page.check(f"input[value={preset}]")
    page.click("#budget-form button.primary")
    page.wait_for_url(dataset_url)
