"""Timing and error side channels: nothing an analyst can see depends on how long a job ran, on its
stage texts, on its error text or on whether it read the data; failed and unfinished releases are
invisible to analysts; API errors are the same for "does not exist" and "not yours".

The check is differential: everything an analyst can fetch is recorded, the release's timing and
error fields are then changed to very different values, and every response must be byte-identical
(after removing the per-request CSRF token).
"""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest

from dpportal.releases.models import Release

CSRF = re.compile(rb'name="csrfmiddlewaretoken" value="[^"]+"')


def analyst_views(world) -> dict[str, bytes]:
    web, api = world.client(world.analyst), world.api(world.analyst)
    anon = world.client(None)
    d, r = world.dataset.pk, world.release.pk
    out = {}
    for url in (
        "/datasets/",
        f"/datasets/{d}/",
        f"/releases/{r}/",
        f"/releases/{r}/status.json",
        f"/releases/{r}/manifest.json",
        f"/releases/{r}/tables/0/",
    ):
        resp = web.get(url)
        assert resp.status_code == 200, url
        out[url] = CSRF.sub(b"", resp.content)
    for url in (
        "/api/datasets/",
        f"/api/datasets/{d}/",
        f"/api/datasets/{d}/releases/",
        f"/api/releases/{r}/",
        f"/api/releases/{r}/manifest.json",
        f"/api/releases/{r}/tables/",
        f"/api/releases/{r}/tables/0/",
    ):
        resp = anon.get(url, **api)
        assert resp.status_code == 200, url
        out[url] = resp.content
    return out


def test_analyst_views_do_not_change_with_job_timing_stage_or_error_text(world):
    rel = Release.objects.get(pk=world.release.pk)
    before = analyst_views(world)
    start = rel.finished_at.replace(hour=0, minute=0, second=1)  # same day: the analyst sees the day only
    report = dict(rel.report or {})
    report.update(
        seconds_fit=9999.0,
        seconds_sample=123.0,
        solve_seconds=77.7,
        details={**report.get("details", {}), "fit_duration": 5, "elapsed_lp": 3},
    )
    Release.objects.filter(pk=rel.pk).update(
        created_at=start,
        started_at=start + timedelta(seconds=1),
        finished_at=start + timedelta(hours=23),
        stage="LP solve took 41 s on 3 distinct reference points",
        error="KeyError: 'Zurich' in row 17",
        data_touched=not rel.data_touched,
        report=report,
    )
    after = analyst_views(world)
    changed = [url for url in before if before[url] != after[url]]
    assert not changed, f"analyst-visible responses depend on timing/error fields: {changed}"


def test_the_owner_does_see_the_timings_so_the_differential_test_can_fail(world):
    """The same change IS visible to the owner: the test above compares fields that matter."""
    owner = world.client(world.owner)
    first = owner.get(f"/api/releases/{world.release.pk}/", **world.api(world.owner)).json()
    Release.objects.filter(pk=world.release.pk).update(started_at=world.release.started_at - timedelta(seconds=99))
    second = owner.get(f"/api/releases/{world.release.pk}/", **world.api(world.owner)).json()
    assert first["started_at"] != second["started_at"]


def test_no_duration_key_reaches_an_analyst_at_any_depth(world):
    rel = Release.objects.get(pk=world.release.pk)
    Release.objects.filter(pk=rel.pk).update(
        report={**(rel.report or {}), "solve_seconds": 1.5, "details": {"lp": {"solve_seconds_max_error": 2}}}
    )
    for body in analyst_views(world).values():
        text = body.decode(errors="replace").lower()
        for marker in ("seconds", "duration", "elapsed", "started_at", "finished_at", "keyerror"):
            assert marker not in text, marker


@pytest.mark.parametrize("status", [Release.QUEUED, Release.RUNNING, Release.FAILED])
def test_unfinished_or_failed_releases_are_invisible_to_analysts(world, status):
    Release.objects.filter(pk=world.release.pk).update(status=status, error="ValueError: age=131 in row 4")
    api = world.api(world.analyst)
    web = world.client(world.analyst)
    for url in (
        f"/releases/{world.release.pk}/",
        f"/releases/{world.release.pk}/status.json",
        f"/releases/{world.release.pk}/synthetic.csv",
    ):
        assert web.get(url).status_code == 404
    assert world.client(None).get(f"/api/releases/{world.release.pk}/", **api).status_code == 404
    listing = world.client(None).get(f"/api/datasets/{world.dataset.pk}/releases/", **api).json()
    assert listing == {"releases": []}
    page = web.get(f"/datasets/{world.dataset.pk}/").content.decode()
    assert "age=131" not in page and f"/releases/{world.release.pk}/" not in page


def test_the_owner_sees_the_error_text(world):
    Release.objects.filter(pk=world.release.pk).update(status=Release.FAILED, error="ValueError: age=131")
    data = world.client(None).get(f"/api/releases/{world.release.pk}/", **world.api(world.owner)).json()
    assert data["error"] == "ValueError: age=131"


def test_not_found_and_not_yours_are_indistinguishable(world):
    """The same status and body for another steward's dataset and for an id that does not exist."""
    api = world.api(world.other_steward)
    anon = world.client(None)
    missing = world.dataset.pk + 1000
    for path in ("/api/datasets/{}/", "/api/datasets/{}/schema/", "/api/datasets/{}/ledger/"):
        a = anon.get(path.format(world.dataset.pk), **api)
        b = anon.get(path.format(missing), **api)
        assert (a.status_code, a.content) == (b.status_code, b.content) == (404, b'{"error": "not found"}')
    web = world.client(world.other_steward)
    a, b = web.get(f"/datasets/{world.dataset.pk}/"), web.get(f"/datasets/{missing}/")
    assert a.status_code == b.status_code == 404 and CSRF.sub(b"", a.content) == CSRF.sub(b"", b.content)


def test_the_manifest_for_an_analyst_carries_the_day_only(world):
    data = json.loads(world.client(world.analyst).get(f"/releases/{world.release.pk}/manifest.json").content)
    assert list(data["timestamps"]) == ["released_on"]
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", data["timestamps"]["released_on"])
