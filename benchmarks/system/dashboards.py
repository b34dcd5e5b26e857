"""The utility dashboards on a wide table: how long each steward page takes to answer, idle and beside CPU burners.

    .venv/bin/python -m benchmarks.system.dashboards --releases 3 --repeats 5 --burners 0 2 \
        --out benchmarks/out/dashboards.json

Builds ``credit_adult`` (benchmarks/harness/wide.py: 39 columns, its fitted half A of 15,000 rows), stores it as
an upload of a throwaway portal (SQLite and private storage in a temporary folder), confirms its drafted schema,
runs ``--releases`` baseline releases through the worker's path (the release, then its utility evaluation, as
the evaluation queue runs it), and times the steward's pages through Django's test client: the release
dashboard, the dataset dashboard and the comparison of two releases. Each page is asked ``--repeats`` times
with 0 and then 2 processes spinning on the CPU beside it (``python -c 'while 1: pass'``); the median and the
worst are reported, with the page's size. ``--profile PAGE`` prints cProfile's top functions of one request.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _setup_django(data_dir: Path) -> None:
    os.environ["DPPORTAL_DATA_DIR"] = str(data_dir)
    os.environ["DJANGO_SETTINGS_MODULE"] = "dpportal.settings"
    os.environ.pop("DATABASE_URL", None)
    os.environ.setdefault("DPPORTAL_RISK_REPORT", "0")
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    settings.ALLOWED_HOSTS = ["*"]
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.DPPORTAL_RISK_REPORT = False
    call_command("migrate", verbosity=0)


def build_portal(releases: int, rows: int, seed: int) -> dict:
    """The steward, the wide dataset with its confirmed schema and ``releases`` evaluated releases."""
    from benchmarks.harness.wide import raw_side_by_side, split
    from dpportal.accounts.models import Profile, make_user
    from dpportal.dashboards.services import evaluate_finished_release
    from dpportal.datasets import services as dataset_services
    from dpportal.datasets.upload import Limits, parse_markers, store_upload
    from dpportal.ledger import services as ledger
    from dpportal.releases import services as release_services
    from mechanisms.draft import draft_schema

    raw, _ = split(raw_side_by_side("credit_adult", seed), seed)
    if rows and len(raw) > rows:
        raw = raw.iloc[:rows].reset_index(drop=True)
    buf = io.BytesIO(raw.to_csv(index=False).encode())
    buf.name = "credit_adult.csv"
    owner = make_user("steward", "bench-password-not-secret", role=Profile.STEWARD)
    limits = Limits.from_settings()
    dataset = store_upload(buf, owner=owner, name="credit_adult", markers=parse_markers("?, NA"), limits=limits)
    dataset_services.confirm_schema(dataset, draft_schema(raw).confirmed())
    ledger.set_caps(dataset, epsilon="100", delta="1e-5", user=owner)
    made, timings = [], []
    for k in range(releases):
        release = release_services.plan_release(
            dataset,
            owner,
            release_services.ReleaseRequest(
                mechanism="baseline", epsilon=str(1 + k), delta="0", params={}, rows=len(raw)
            ),
        )
        assert release_services.claim(release.pk)
        t0 = time.perf_counter()
        release_services.execute(release.pk)
        t1 = time.perf_counter()
        evaluate_finished_release(release.pk)
        t2 = time.perf_counter()
        release.refresh_from_db()
        assert release.status == "done", release.error
        made.append(release.pk)
        timings.append({"release": release.pk, "release_s": round(t1 - t0, 1), "evaluation_s": round(t2 - t1, 1)})
    return {
        "owner": owner,
        "dataset": dataset.pk,
        "releases": made,
        "columns": len(raw.columns),
        "rows": len(raw),
        "jobs": timings,
    }


def pages(portal: dict) -> dict[str, str]:
    from django.urls import reverse

    a, b = portal["releases"][0], portal["releases"][-1]
    d = portal["dataset"]
    return {
        "release": reverse("dpportal-release-dashboard", args=[a]),
        "dataset": reverse("dpportal-dataset-dashboard", args=[d]),
        "compare": reverse("dpportal-release-compare", args=[d]) + f"?a={a}&b={b}",
    }


def time_pages(portal: dict, repeats: int) -> dict:
    from django.test import Client

    c = Client()
    c.force_login(portal["owner"])
    out = {}
    for name, url in pages(portal).items():
        seconds, size = [], 0
        for _ in range(repeats):
            t0 = time.perf_counter()
            resp = c.get(url)
            seconds.append(time.perf_counter() - t0)
            assert resp.status_code == 200, (url, resp.status_code)
            size = len(resp.content)
        out[name] = {
            "median_s": round(statistics.median(seconds), 3),
            "max_s": round(max(seconds), 3),
            "kib": round(size / 1024),
        }
    return out


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WebServer:
    """``python -m dpportal.serve`` (waitress, as ``make run``) on a loopback port over the portal's storage."""

    def __init__(self, data_dir: Path) -> None:
        from benchmarks.system.scale import wait_port

        self.port = free_port()
        env = {**os.environ, "DPPORTAL_DATA_DIR": str(data_dir), "DJANGO_ALLOWED_HOSTS": "127.0.0.1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "dpportal.serve", "--listen", f"127.0.0.1:{self.port}"], cwd=ROOT, env=env
        )
        wait_port(self.port)
        self.url = f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


def session_cookie(user) -> tuple[str, str]:
    from django.conf import settings
    from django.test import Client

    c = Client()
    c.force_login(user)
    return settings.SESSION_COOKIE_NAME, c.cookies[settings.SESSION_COOKIE_NAME].value


# Installed before the page's own scripts, in seconds from navigation start: when the first chart and when every
# chart were drawn (a .dash-chart holding plotly's svg), polled every 20 ms from the document's start; the
# response's first byte; the first contentful paint; and the longest task (the longest time the page could not
# answer a scroll or a click). Each visit is a new browser context: a first visit, nothing cached.
WATCH_JS = """window.__dash = {longest: 0};
new PerformanceObserver(list => list.getEntries().forEach(e => {
  window.__dash.longest = Math.max(window.__dash.longest, e.duration / 1000);
})).observe({type: 'longtask', buffered: true});
(function t() {
  const d = window.__dash, now = performance.now() / 1000;
  if (document.readyState !== 'loading') {
    const charts = [...document.querySelectorAll('.dash-chart')];
    const drawn = e => !!e.querySelector('svg.main-svg');
    if (d.first === undefined && charts.some(drawn)) { d.first = now; }
    if (charts.every(drawn)) {
      const nav = performance.getEntriesByType('navigation')[0];
      const paint = performance.getEntriesByType('paint').find(p => p.name === 'first-contentful-paint');
      Object.assign(d, {ttfb: nav.responseStart / 1000, fcp: paint ? paint.startTime / 1000 : null, drawn: now,
                        charts: charts.length});
      return;
    }
  }
  setTimeout(t, 20);
})();"""
DRAWN_JS = """() => new Promise(done => {
  const t = () => window.__dash.drawn ? done(window.__dash) : setTimeout(t, 50);
  t();
})"""
KEYS = ("ttfb", "fcp", "first", "drawn", "longest")


def _median(values: list) -> float | None:
    known = [v for v in values if v is not None]
    return round(statistics.median(known), 2) if known else None


def time_browser(portal: dict, server: WebServer, repeats: int, cookie: tuple[str, str]) -> dict:
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(ROOT))
    from tests.browser import launch_chromium, patient

    out = {}
    with sync_playwright() as p:
        browser = launch_chromium(p)
        for name, url in pages(portal).items():
            runs = []
            for _ in range(repeats):
                context = browser.new_context(viewport={"width": 1300, "height": 900})
                context.add_cookies([{"name": cookie[0], "value": cookie[1], "url": server.url}])
                page = patient(context.new_page())
                page.add_init_script(WATCH_JS)
                resp = page.goto(server.url + url)
                assert resp.status == 200, (url, resp.status)
                runs.append(page.evaluate(DRAWN_JS))
                context.close()
            out[name] = {key: _median([r.get(key) for r in runs]) for key in KEYS} | {
                "drawn_max": round(max(r["drawn"] for r in runs), 2),
                "charts": runs[0]["charts"],
            }
        browser.close()
    return out


def burners(k: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(k)]


def profile(portal: dict, page: str) -> None:
    import cProfile
    import pstats

    from django.test import Client

    c = Client()
    c.force_login(portal["owner"])
    url = pages(portal)[page]
    c.get(url)
    prof = cProfile.Profile()
    prof.enable()
    c.get(url)
    prof.disable()
    pstats.Stats(prof).sort_stats("cumulative").print_stats(40)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--releases", type=int, default=3)
    ap.add_argument("--rows", type=int, default=0, help="cut the table to this many rows (0: all 15,000)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--burners", type=int, nargs="+", default=[0, 2])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", choices=["release", "dataset", "compare"])
    ap.add_argument("--browser", action="store_true", help="also time the pages in chromium (load, charts drawn)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="dpportal-dashboards-") as tmp:
        _setup_django(Path(tmp))
        t0 = time.perf_counter()
        portal = build_portal(args.releases, args.rows, args.seed)
        setup_s = time.perf_counter() - t0
        if args.profile:
            profile(portal, args.profile)
            return
        result = {
            "table": "credit_adult",
            "columns": portal["columns"],
            "rows": portal["rows"],
            "releases": len(portal["releases"]),
            "jobs": portal["jobs"],
            "setup_s": round(setup_s, 1),
            "cpus": os.cpu_count(),
            "pages": {},
        }
        server = WebServer(Path(tmp)) if args.browser else None
        cookie = session_cookie(portal["owner"]) if args.browser else None
        try:
            for k in args.burners:
                procs = burners(k)
                try:
                    time.sleep(0.5 if k else 0)
                    result["pages"][f"burners={k}"] = time_pages(portal, args.repeats)
                    if server is not None:
                        result.setdefault("browser", {})[f"burners={k}"] = time_browser(
                            portal, server, args.repeats, cookie
                        )
                finally:
                    for p in procs:
                        p.kill()
                        p.wait()
        finally:
            if server is not None:
                server.close()
        text = json.dumps(result, indent=1)
        print(text)
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
