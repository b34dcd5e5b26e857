"""Browser test (Playwright driving Debian's chromium): a finished release's dashboard renders its
plotly charts offline, with no console error and no request to a non-loopback host; an analyst gets
404. Screenshots go to test-artifacts/ (gitignored)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest
from django.conf import settings as django_settings
from django.test import Client
from django.urls import reverse

from dpportal.dashboards import services as dash_services
from dpportal.dashboards.models import Evaluation
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

SCHEMA = {
    "missing_markers": ["", "NA"],
    "columns": [
        {"name": "age", "kind": "integer", "lower": 18, "upper": 90, "bins": 8},
        {"name": "income", "kind": "continuous", "lower": 0, "upper": 150000, "bins": 10},
        {"name": "hours", "kind": "integer", "lower": 0, "upper": 80, "bins": 8},
        {"name": "city", "kind": "categorical", "categories": ["Paris", "Lyon", "Nice", "Lille"]},
        {"name": "education", "kind": "categorical", "categories": ["school", "bachelor", "master", "phd"]},
        {"name": "owns_home", "kind": "categorical", "categories": ["no", "yes"]},
    ],
}


def people_csv(n: int = 600, seed: int = 0) -> str:
    """A correlated table: income grows with age and education; home ownership with income."""
    rng = np.random.default_rng(seed)
    age = np.clip(rng.normal(42, 12, n), 18, 90).round().astype(int)
    edu = np.clip((rng.normal(1.3, 1.0, n)).round(), 0, 3).astype(int)
    income = np.clip(18000 + 700 * (age - 18) + 12000 * edu + rng.normal(0, 9000, n), 0, 150000).round(2)
    hours = np.clip(rng.normal(38, 8, n), 0, 80).round().astype(int)
    city = rng.choice(["Paris", "Lyon", "Nice", "Lille"], size=n, p=[0.4, 0.3, 0.2, 0.1])
    home = np.where(income + rng.normal(0, 15000, n) > 52000, "yes", "no")
    names = ["school", "bachelor", "master", "phd"]
    lines = ["age,income,hours,city,education,owns_home"]
    lines += [f"{a},{i},{h},{c},{names[e]},{o}" for a, i, h, c, e, o in zip(age, income, hours, city, edu, home)]
    return "\n".join(lines) + "\n"


@pytest.fixture
def finished(transactional_db):
    people = make_personas()
    owner, analyst = people.owner, people.analyst
    dataset = make_dataset(owner, text=people_csv(), schema=SCHEMA, budget=("10", "0"))
    dataset.analysts.add(analyst)
    dash_services.set_target(dataset, "owns_home")
    low = run_release(dataset, owner, epsilon="0.3", rows=600)
    release = run_release(dataset, owner, epsilon="2", rows=600)
    run_release(dataset, owner, epsilon="1", rows=600, mechanism="kdtree-grid")
    ev = Evaluation.objects.get(release=release)
    assert release.status == "done" and ev.status == Evaluation.DONE, (release.error, ev.error)
    assert ev.results["ml"] is not None
    # sessions are made here: once Playwright runs, this thread has an event loop and the ORM refuses
    return {"owner": _session(owner), "analyst": _session(analyst), "dataset": dataset, "release": release, "low": low}


def _session(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies[django_settings.SESSION_COOKIE_NAME].value


@pytest.fixture
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = launch_chromium(p, CHROMIUM)
        yield b
        b.close()


def _open(browser, session: str, base_url: str):
    """A page logged in with ``session`` that records console errors and blocks non-loopback requests."""
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    context.add_cookies([{"name": django_settings.SESSION_COOKIE_NAME, "value": session, "url": base_url}])
    external: list[str] = []
    errors: list[str] = []

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
    return page, external, errors


def _charts_render(page) -> list[bool]:
    """Whether each chart was drawn (those in view first, the others one per task after them)."""
    page.wait_for_load_state("networkidle")
    page.wait_for_function("[...document.querySelectorAll('.dash-chart')].every(e => e.querySelector('svg.main-svg'))")
    return page.eval_on_selector_all(".dash-chart", "els => els.map(e => !!e.querySelector('svg.main-svg'))")


def test_release_dashboard_renders_offline_and_is_404_for_an_analyst(finished, live_server, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    release, dataset = finished["release"], finished["dataset"]
    url = live_server.url + reverse("dpportal-release-dashboard", args=[release.pk])

    page, external, errors = _open(browser, finished["owner"], live_server.url)
    resp = page.goto(url)
    assert resp.status == 200
    drawn = _charts_render(page)
    # 6 column overlays + 3 heatmaps + TSTR + DCR
    assert len(drawn) == 11 and all(drawn), drawn
    assert page.locator("#not-private-note").is_visible()
    assert page.locator(".dash-metrics tbody tr").count() >= 8
    page.screenshot(path=str(ARTIFACTS / "dashboard-release.png"), full_page=True)

    page.goto(live_server.url + reverse("dpportal-dataset-dashboard", args=[dataset.pk]))
    drawn = _charts_render(page)
    assert len(drawn) == 5 and all(drawn), drawn  # quality, 1-way, 2-way, pMSE, TSTR against epsilon
    page.screenshot(path=str(ARTIFACTS / "dashboard-dataset.png"), full_page=True)

    page.goto(
        live_server.url
        + reverse("dpportal-release-compare", args=[dataset.pk])
        + f"?a={release.pk}&b={finished['low'].pk}"
    )
    drawn = _charts_render(page)
    assert len(drawn) == 6 and all(drawn), drawn
    assert errors == [] and external == []
    if os.environ.get("DPPORTAL_DOCS_SCREENSHOT"):  # refresh the README picture
        shutil.copy(ARTIFACTS / "dashboard-release.png", Path(__file__).resolve().parents[3] / "docs/img/dashboard.png")

    analyst_page, _, _ = _open(browser, finished["analyst"], live_server.url)
    assert analyst_page.goto(url).status == 404
    assert analyst_page.goto(live_server.url + reverse("dpportal-dataset-dashboard", args=[dataset.pk])).status == 404
    # the analyst may download the release itself (the dashboards are the steward's only)
    assert analyst_page.goto(live_server.url + reverse("dpportal-release", args=[release.pk])).status == 200
