"""The printable privacy report: steward and granted analysts, linked from the release page, print CSS."""

from __future__ import annotations

import re

from dpportal.releases import services

URL = "/releases/{}/report/"


def test_the_steward_and_a_granted_analyst_get_a_printable_report(world):
    release = world.release
    detail = world.client(world.owner).get(f"/releases/{release.pk}/").content.decode()
    assert f'href="{URL.format(release.pk)}" id="privacy-report-link"' in detail
    for user in (world.owner, world.analyst):
        resp = world.client(user).get(URL.format(release.pk))
        page = resp.content.decode()
        assert resp.status_code == 200
        assert f"Privacy report: release {release.pk}" in page
        assert re.search(r'id="report-epsilon">' + re.escape(str(release.epsilon)) + "<", page)
        assert re.search(r'id="report-delta">' + re.escape(str(release.delta)) + "<", page)
        report = release.report
        assert f"{report['guarantee']} differential privacy" in page
        assert report["neighbouring"] in page
        assert all(c in page for c in report["caveats"])
        assert 'id="report-parameters"' in page and "window.print()" in page
    analyst_page = world.client(world.analyst).get(URL.format(release.pk)).content.decode()
    assert "finished " not in analyst_page and "released on " in analyst_page  # no time of day for analysts


def test_the_ledger_links_each_release_to_its_printable_report(world):
    page = world.client(world.owner).get(f"/datasets/{world.dataset.pk}/ledger/").content.decode()
    assert f'href="{URL.format(world.release.pk)}" title="printable privacy report"' in page


def test_others_get_not_found(world):
    for user in (world.stranger_analyst, world.other_steward, world.outsider):
        assert world.client(user).get(URL.format(world.release.pk)).status_code == 404


def test_an_unfinished_release_says_it_has_no_report_yet(world):
    draw = services.draw_more(world.release, world.owner, 5)
    page = world.client(world.owner).get(URL.format(draw.pk)).content.decode()
    assert 'id="no-report"' not in page  # a draw carries its origin's report
    assert "no additional privacy cost" in page


def test_the_stylesheet_prints_the_report_without_the_site_chrome():
    from pathlib import Path

    css = (Path(__file__).resolve().parents[3] / "static" / "dpportal" / "app.css").read_text()
    block = css[css.index("@media print") :]
    assert "header.top" in block and ".no-print" in block and "display: none" in block
