"""A release's tables with error bars: tables.json beside the synthetic CSV (free), the pages, the API, the
manifest, and a crosstabs release through the API and the form."""

from __future__ import annotations

import csv
import io
import json

import pytest

from dpportal.ledger import services as ledger
from dpportal.releases import services
from dpportal.releases import tables as release_tables
from dpportal.releases.models import Release

from tests.personas import run_release


def _api(world, user, url):
    return world.client(None).get(url, **world.api(user))


def _body(resp) -> str:
    return b"".join(resp.streaming_content).decode() if resp.streaming else resp.content.decode()


def test_a_baseline_release_writes_its_measured_tables_at_no_cost(world):
    r = world.release
    path = release_tables.path(r)
    assert path is not None and path.parent == r.output_path().parent
    data = json.loads(path.read_text())
    assert data["mechanism"] == "baseline" and data["rows"] == 6
    assert [t["columns"] for t in data["tables"]] == [["age"], ["city"], ["income"]]
    city = data["tables"][1]
    assert [c["values"] for c in city["cells"]] == [["Paris"], ["Lyon"], ["Nice"], ["other"]]
    assert city["noise"]["distribution"] == "discrete_laplace"
    for c in city["cells"]:
        assert c["lo"] < c["noisy"] < c["hi"] and c["se"] > 0
    # no ledger entry for the tables: the release's own charge only
    assert ledger.remaining(world.dataset)["epsilon"]["spent"] == "0.5"


def test_the_release_page_lists_the_tables_and_each_table_has_a_page(world):
    r = world.release
    for user in (world.owner, world.analyst):
        client = world.client(user)
        page = client.get(f"/releases/{r.pk}/").content.decode()
        assert 'id="release-tables"' in page and f"/releases/{r.pk}/tables/1/" in page
        assert "discrete Laplace noise, scale" in page
        resp = client.get(f"/releases/{r.pk}/tables/1/")
        assert resp.status_code == 200, user
        html = resp.content.decode()
        assert "vendor/plotly.min.js" in html and 'id="table-chart"' in html and "error_y" in html
        assert "<td>Lyon</td>" in html and "95% interval" in html and "P(|noise| &lt;= t)" in html
        assert f"/releases/{r.pk}/tables/1.csv" in html and f"/releases/{r.pk}/tables/1.json" in html
    assert world.client(world.owner).get(f"/releases/{r.pk}/tables/3/").status_code == 404
    for user in (world.stranger_analyst, world.other_steward, world.outsider):
        for url in (f"/releases/{r.pk}/tables/1/", f"/releases/{r.pk}/tables/1.csv", f"/releases/{r.pk}/tables.json"):
            assert world.client(user).get(url).status_code in (403, 404), (user, url)
    assert world.client(None).get(f"/releases/{r.pk}/tables/1/").status_code == 302  # to the login page


def test_the_table_downloads_hold_every_cell(world):
    r = world.release
    client = world.client(world.analyst)
    data = json.loads(release_tables.path(r).read_text())
    rows = list(csv.DictReader(io.StringIO(_body(client.get(f"/releases/{r.pk}/tables/1.csv")))))
    assert [row["city"] for row in rows] == ["Paris", "Lyon", "Nice", "other"]
    assert [float(row["noisy"]) for row in rows] == [c["noisy"] for c in data["tables"][1]["cells"]]
    one = json.loads(client.get(f"/releases/{r.pk}/tables/1.json").content)
    assert one["columns"] == ["city"] and one["cells"] == data["tables"][1]["cells"] and one["epsilon"] == 0.5
    assert json.loads(_body(client.get(f"/releases/{r.pk}/tables.json"))) == data


def test_a_large_table_is_shown_a_page_at_a_time(world, monkeypatch):
    monkeypatch.setattr(release_tables, "PAGE_CELLS", 3)
    client = world.client(world.owner)
    html = client.get(f"/releases/{world.release.pk}/tables/1/?page=2").content.decode()
    assert "Cells 4-4 of 4" in html and "<td>other</td>" in html and "<td>Paris</td>" not in html
    assert "Cells 1-3 of 4" in client.get(f"/releases/{world.release.pk}/tables/1/?page=x").content.decode()


def test_the_api_lists_the_tables_and_serves_each_as_json_and_csv(world):
    r = world.release
    assert _api(world, world.owner, f"/api/releases/{r.pk}/").json()["tables"] == f"/api/releases/{r.pk}/tables/"
    for user in (world.owner, world.analyst):
        listing = _api(world, user, f"/api/releases/{r.pk}/tables/").json()
        assert listing["release"] == r.pk and listing["epsilon"] == 0.5 and listing["mechanism"] == "baseline"
        assert [(t["index"], t["columns"], t["cells"]) for t in listing["tables"]] == [
            (0, ["age"], 8),
            (1, ["city"], 4),
            (2, ["income"], 10),
        ]
        assert listing["tables"][1]["noise"]["distribution"] == "discrete_laplace"
        one = _api(world, user, f"/api/releases/{r.pk}/tables/1/").json()
        assert one["columns"] == ["city"] and len(one["cells"]) == 4 and "interval" in one
        assert set(one["cells"][0]) == {"values", "noisy", "estimate", "se", "lo", "hi"}
        resp = _api(world, user, f"/api/releases/{r.pk}/tables/1/?format=csv")
        assert resp["Content-Type"].startswith("text/csv")
        assert _body(resp).splitlines()[0] == "city,noisy,estimate,se,lo,hi"
    bad = _api(world, world.owner, f"/api/releases/{r.pk}/tables/1/?format=xls")
    assert bad.status_code == 400 and "format must be one of json, csv" in bad.json()["error"]
    missing = _api(world, world.owner, f"/api/releases/{r.pk}/tables/7/")
    assert missing.status_code == 404 and "no table 7" in missing.json()["error"]
    for user in (world.stranger_analyst, world.other_steward):
        assert _api(world, user, f"/api/releases/{r.pk}/tables/").status_code == 404
        assert _api(world, user, f"/api/releases/{r.pk}/tables/1/?format=csv").status_code == 404


def test_the_manifest_lists_the_tables_and_their_noise(world):
    m = _api(world, world.analyst, f"/api/releases/{world.release.pk}/manifest.json").json()
    assert [t["columns"] for t in m["tables"]] == [["age"], ["city"], ["income"]]
    assert m["tables"][1]["cells"] == 4 and m["tables"][1]["noise"]["distribution"] == "discrete_laplace"
    assert "post-processing" in m["tables_cost"] and "tables.json" in m["files"]


def test_a_draw_has_no_tables_of_its_own_and_leads_to_its_release(world):
    draw = services.draw_more(world.release, world.owner, 20)
    assert services.claim(draw.pk)
    services.execute(draw.pk)
    draw.refresh_from_db()
    assert draw.status == "done" and not (draw.output_path().parent / "tables.json").exists()
    client = world.client(world.owner)
    page = client.get(f"/releases/{draw.pk}/").content.decode()
    assert "has no tables of its own" in page and f"/releases/{world.release.pk}/tables/0/" in page
    resp = client.get(f"/releases/{draw.pk}/tables/0/")
    assert resp.status_code == 302 and resp["Location"] == f"/releases/{world.release.pk}/tables/0/"
    listing = _api(world, world.owner, f"/api/releases/{draw.pk}/tables/").json()
    assert listing["release"] == world.release.pk and len(listing["tables"]) == 3
    m = _api(world, world.owner, f"/api/releases/{draw.pk}/manifest.json").json()
    assert m["tables_from_release"] == world.release.pk and len(m["tables"]) == 3


def test_a_failure_to_build_the_tables_never_fails_the_release(world, monkeypatch):
    def broken(mech):
        raise RuntimeError("boom")

    monkeypatch.setattr(release_tables, "build", broken)
    r = run_release(world.dataset, world.owner, epsilon="0.1", rows=10)
    assert r.status == "done" and release_tables.load(r) is None
    assert world.client(world.owner).get(f"/releases/{r.pk}/").status_code == 200
    assert _api(world, world.owner, f"/api/releases/{r.pk}/tables/").status_code == 404
    assert world.client(world.owner).get(f"/releases/{r.pk}/tables/0/").status_code == 404
    m = _api(world, world.owner, f"/api/releases/{r.pk}/manifest.json").json()
    assert "tables" not in m


def test_an_unreadable_tables_file_leaves_the_release_page_and_manifest_working(world):
    release_tables.path(world.release).write_text('{"tables": [')
    client = world.client(world.owner)
    page = client.get(f"/releases/{world.release.pk}/")
    assert page.status_code == 200 and 'id="release-tables"' not in page.content.decode()
    assert client.get(f"/releases/{world.release.pk}/tables/0/").status_code == 404
    assert "tables" not in _api(world, world.owner, f"/api/releases/{world.release.pk}/manifest.json").json()


def _post_release(world, body):
    return world.client(None).post(
        f"/api/datasets/{world.dataset.pk}/releases/",
        json.dumps(body),
        content_type="application/json",
        **world.api(world.owner),
    )


CROSSTABS = {"mechanism": "crosstabs", "epsilon": "0.5", "delta": "1e-6", "rows": 30}
BAD_SPECS = [
    ("city,nope", "tables: 'nope' is not a kept column of the schema"),
    ("city,city", "tables: a table names a column twice"),
    ("age,city,income,age/2", "a table has at most 3 columns"),
    ("city/2", "only numeric columns can be grouped"),
    ("age/x", "the grouping after '/' must be a whole number"),
    ("city;;income", "an empty table"),
]


def test_a_crosstabs_release_with_a_bad_table_spec_is_400_naming_the_problem(world):
    before = ledger.remaining(world.dataset)
    for spec, message in BAD_SPECS:
        resp = _post_release(world, {**CROSSTABS, "params": {"tables": spec}})
        assert resp.status_code == 400, (spec, resp.content)
        assert message in resp.json()["error"], (spec, resp.json())
    resp = _post_release(world, {**CROSSTABS, "params": {"tables": 5}})
    assert resp.status_code == 400 and "tables" in resp.json()["error"], resp.content
    assert Release.objects.count() == 1 and ledger.remaining(world.dataset) == before


def test_a_crosstabs_release_through_the_api_publishes_its_tables(world):
    body = {**CROSSTABS, "params": {"tables": "city,income/5;age/2", "iters": 50}}
    resp = _post_release(world, {**body, "confirm_high_error": True, "confirm_would_fail": True})
    assert resp.status_code == 201, resp.content
    pk = resp.json()["id"]
    assert services.claim(pk)
    services.execute(pk)
    r = Release.objects.get(pk=pk)
    assert r.status == "done", r.error
    listing = _api(world, world.owner, f"/api/releases/{pk}/tables/").json()
    assert listing["mechanism"] == "crosstabs" and listing["delta"] == 1e-6
    assert "what it measured" in listing["cost"]  # these tables are what the release paid for, not free extras
    assert [(t["columns"], t["cells"]) for t in listing["tables"]] == [(["city", "income"], 8), (["age"], 4)]
    one = _api(world, world.owner, f"/api/releases/{pk}/tables/0/").json()
    se = {c["se"] for c in one["cells"]}
    assert len(se) == 1 and one["noise"]["distribution"] == "gaussian"
    assert abs(sum(c["noisy"] for c in one["cells"]) - 6) < 1e-5  # the public row count (cells to 6 decimals)
    assert world.client(world.owner).get(f"/releases/{pk}/tables/0/").status_code == 200
    spent = ledger.remaining(world.dataset)["epsilon"]["spent"]
    assert spent == "1"  # the baseline's 0.5 and this release's 0.5; the tables add nothing


def test_the_release_form_shows_the_tables_parameter_and_names_a_bad_spec(world):
    client = world.client(world.owner)
    url = f"/datasets/{world.dataset.pk}/releases/new/?mechanism=crosstabs"
    page = client.get(url)
    assert page.status_code == 200 and 'name="param_tables"' in page.content.decode()
    form = {"mechanism": "crosstabs", "epsilon": "0.5", "delta": "1e-6", "rows": "10", "param_tables": "city,nope"}
    form.update(confirm_high_error="on", confirm_would_fail="on")
    resp = client.post(url, form)
    assert resp.status_code == 200
    assert "tables: &#x27;nope&#x27; is not a kept column of the schema" in resp.content.decode()
    assert Release.objects.count() == 1
    resp = client.post(url, {**form, "param_tables": "city,income/5;age/2"})
    release = Release.objects.exclude(pk=world.release.pk).get()
    assert resp.status_code == 302 and resp["Location"] == f"/releases/{release.pk}/"
    assert (release.mechanism, release.params["tables"], release.status) == (
        "crosstabs",
        "city,income/5;age/2",
        "queued",
    )


@pytest.mark.slow  # Private-PGM's backend loads in about 5 s
def test_an_mst_release_publishes_its_measurements(world):
    body = {"mechanism": "mst", "epsilon": "0.5", "delta": "1e-6", "rows": 20, "params": {"iters": 100}}
    resp = _post_release(world, {**body, "confirm_high_error": True, "confirm_would_fail": True})
    assert resp.status_code == 201, resp.content
    pk = resp.json()["id"]
    assert services.claim(pk)
    services.execute(pk)
    assert Release.objects.get(pk=pk).status == "done"
    listing = _api(world, world.analyst, f"/api/releases/{pk}/tables/").json()
    columns = [t["columns"] for t in listing["tables"]]
    assert columns[:3] == [["age"], ["city"], ["income"]], columns  # the pairs too where n is large enough
    assert {t["noise"]["distribution"] for t in listing["tables"]} == {"discrete_gaussian"}
    assert world.client(world.analyst).get(f"/releases/{pk}/tables/{len(columns) - 1}/").status_code == 200
