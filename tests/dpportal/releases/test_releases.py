"""Releases: refusals charge and queue nothing; the worker settles, refunds, neutralises formulas."""

from __future__ import annotations

import csv
import io
import json

from dpportal.ledger import services as ledger
from dpportal.releases import services, tasks
from dpportal.releases.models import Release
from mechanisms.synthesizers.baseline import Baseline

from tests.personas import make_dataset, run_release


def _post(world, body):
    return world.client(None).post(
        f"/api/datasets/{world.dataset.pk}/releases/",
        json.dumps(body),
        content_type="application/json",
        **world.api(world.owner),
    )


BAD_REQUESTS = [
    ({"mechanism": "baseline", "epsilon": "5"}, "over budget"),
    ({"mechanism": "nope", "epsilon": "0.1"}, "unknown mechanism 'nope'"),
    ({"mechanism": "baseline", "epsilon": "-1"}, "epsilon must be positive, got epsilon='-1'"),
    ({"mechanism": "baseline", "epsilon": "0"}, "epsilon must be positive"),
    ({"mechanism": "baseline", "epsilon": "nan"}, "expected a finite number"),
    ({"mechanism": "baseline", "epsilon": "1e400"}, "between 1e-30 and 1e30"),
    (
        {"mechanism": "baseline", "epsilon": "abc"},
        "expected a number like 0.5, 1e-6 or 1/9 (digits 0-9; no spaces, underscores or signs inside), got 'abc'",
    ),
    ({"mechanism": "baseline", "epsilon": True}, "epsilon must be a number"),
    ({"mechanism": "baseline", "epsilon": "0.1", "delta": "1"}, "delta must be in [0, 1)"),
    ({"mechanism": "baseline", "epsilon": "0.1", "delta": "1e-6"}, "pure epsilon-DP and takes no delta"),
    ({"mechanism": "baseline", "epsilon": "0.1", "rows": 0}, "rows must be between 1 and"),
    ({"mechanism": "baseline", "epsilon": "0.1", "rows": 10**9}, "rows must be between 1 and"),
    ({"mechanism": "baseline", "epsilon": "0.1", "rows": "many"}, "rows must be a whole number"),
    ({"mechanism": "baseline", "epsilon": "0.1", "params": {"x": 1}}, "unknown parameter(s) for 'baseline'"),
    ({"mechanism": "baseline", "epsilon": "0.1", "params": [1]}, "params must be an object"),
    ({"mechanism": "baseline", "epsilon": "0.1", "seed": 1}, "unknown field(s) ['seed']"),
]


def test_bad_requests_are_400_with_a_message_and_nothing_charged_or_queued(world):
    before = ledger.remaining(world.dataset)
    for body, message in BAD_REQUESTS:
        resp = _post(world, body)
        assert resp.status_code == 400, (body, resp.content)
        assert message in resp.json()["error"], (body, resp.json())
    assert Release.objects.count() == 1
    assert ledger.remaining(world.dataset) == before


def test_a_mechanism_that_does_not_support_the_schema_is_refused(world, monkeypatch):
    monkeypatch.setattr(Baseline, "supported_kinds", frozenset({"continuous"}))
    resp = _post(world, {"mechanism": "baseline", "epsilon": "0.1"})
    assert resp.status_code == 400 and "does not support the schema's column kind(s)" in resp.json()["error"]


def test_an_unconfirmed_schema_is_refused(world):
    d = make_dataset(world.owner, schema=None)
    resp = world.client(None).post(
        f"/api/datasets/{d.pk}/releases/",
        '{"mechanism": "baseline", "epsilon": 1}',
        content_type="application/json",
        **world.api(world.owner),
    )
    assert resp.status_code == 400 and "confirm the dataset's schema" in resp.json()["error"]


def test_the_web_form_shows_errors_and_queues_nothing(world):
    client = world.client(world.owner)
    url = f"/datasets/{world.dataset.pk}/releases/new/?mechanism=baseline"
    assert "Reserve budget and release" in client.get(url).content.decode()
    resp = client.post(url, {"mechanism": "baseline", "epsilon": "9", "rows": "10", "delta": "0"})
    assert "over budget" in resp.content.decode()
    assert Release.objects.count() == 1


def test_a_finished_release_is_settled_and_downloadable(world):
    r = world.release
    assert (r.status, r.progress, r.data_touched) == ("done", 1.0, True)
    budget = ledger.remaining(world.dataset)["epsilon"]
    assert (budget["spent"], budget["reserved"], budget["remaining"]) == ("0.5", "0", "1.5")
    body = b"".join(world.client(world.owner).get(f"/releases/{r.pk}/synthetic.csv").streaming_content)
    rows = list(csv.DictReader(io.StringIO(body.decode())))
    assert len(rows) == 50 and set(rows[0]) == {"age", "city", "income"}


def test_manifest_has_the_facts_and_no_seed(world):
    m = world.client(None).get(f"/api/releases/{world.release.pk}/manifest.json", **world.api(world.owner)).json()
    for key in (
        "dataset",
        "schema_sha256",
        "mechanism",
        "parameters",
        "epsilon",
        "delta",
        "guarantee",
        "caveats",
        "rows",
        "software_version",
        "timestamps",
    ):
        assert key in m, key
    assert m["schema_sha256"] == world.dataset.confirmed_schema().fingerprint()
    assert (m["epsilon"], m["guarantee"], m["rows"]) == ("0.5", "pure", 50)
    assert "seed" not in json.dumps(m).lower()


def test_the_spreadsheet_csv_guards_formula_cells_and_leaves_numbers_and_the_analysis_csv_exact(world):
    text = "cmd,temp\n=SUM(A1),-5\n+1,-3\n@x,-7\n"
    schema = {
        "columns": [
            {"name": "cmd", "kind": "categorical", "categories": ["=SUM(A1)", "+1", "@x", "-2"]},
            {"name": "temp", "kind": "integer", "lower": -10, "upper": -1, "bins": 10},
        ]
    }
    d = make_dataset(world.owner, text=text, schema=schema)
    r = run_release(d, world.owner, epsilon="1", rows=200)
    resp = world.client(world.owner).get(f"/releases/{r.pk}/synthetic-spreadsheet.csv")
    body = b"".join(resp.streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(body)))
    assert all(row["cmd"].startswith("'") for row in rows)
    assert {row["cmd"][1:] for row in rows} <= {"=SUM(A1)", "+1", "@x", "-2"}
    assert all(-10 <= int(row["temp"]) <= -1 for row in rows)  # numbers untouched: no quote prefix
    exact = b"".join(world.client(world.owner).get(f"/releases/{r.pk}/synthetic.csv").streaming_content).decode()
    assert {row["cmd"] for row in csv.DictReader(io.StringIO(exact))} <= {"=SUM(A1)", "+1", "@x", "-2"}


def test_more_rows_are_drawn_at_no_privacy_cost(world):
    before = ledger.remaining(world.dataset)
    draw = services.draw_more(world.release, world.owner, 120)
    assert services.claim(draw.pk)
    services.execute(draw.pk)
    draw.refresh_from_db()
    assert draw.status == "done" and draw.parent_id == world.release.pk
    body = draw.output_path().read_text()
    assert len(body.strip().splitlines()) == 121
    assert ledger.remaining(world.dataset) == before
    m = world.client(None).get(f"/api/releases/{draw.pk}/manifest.json", **world.api(world.owner)).json()
    assert m["drawn_from_release"] == world.release.pk and "no additional privacy cost" in m["note"]


def test_summary_is_npz_not_pickle(world):
    import numpy as np

    with np.load(world.release.summary_path(), allow_pickle=False) as z:
        assert "__meta__" in z.files


def test_a_job_failing_before_it_reads_data_is_refunded(world, monkeypatch):
    def broken(*a, **k):
        raise RuntimeError("could not build")

    r = services.plan_release(world.dataset, world.owner, services.ReleaseRequest("baseline", "0.25", "0", {}, 10))
    monkeypatch.setattr(services.worker, "build", broken)  # the worker fails while preparing, before any read
    assert services.claim(r.pk)
    services.execute(r.pk)
    r.refresh_from_db()
    assert (r.status, r.data_touched, r.error) == ("failed", False, "could not build")
    assert ledger.remaining(world.dataset)["epsilon"]["spent"] == "0.5"  # only the first release
    assert not r.storage_dir().exists()


def test_a_job_failing_after_it_read_data_stays_charged_and_exposes_nothing(world, monkeypatch):
    def broken_fit(self, source):
        source.frame()
        raise ValueError("boom inside fit")

    monkeypatch.setattr(Baseline, "_fit", broken_fit)
    r = run_release(world.dataset, world.owner, epsilon="0.25")
    assert (r.status, r.data_touched) == ("failed", True)
    assert ledger.remaining(world.dataset)["epsilon"]["spent"] == "0.75"
    assert not r.storage_dir().exists() and not r.output_file
    assert world.client(world.owner).get(f"/releases/{r.pk}/synthetic.csv").status_code == 404
    # the owner sees the error; an analyst does not even see the release
    assert "boom inside fit" in world.client(world.owner).get(f"/releases/{r.pk}/").content.decode()
    assert world.client(world.analyst).get(f"/releases/{r.pk}/").status_code == 404


def test_a_second_delivery_does_nothing(world):
    r = world.release
    mtime = r.output_path().stat().st_mtime_ns
    assert services.claim(r.pk) is False
    tasks.run_release.apply(args=(r.pk,))
    r.refresh_from_db()
    assert r.status == "done" and r.output_path().stat().st_mtime_ns == mtime


def test_a_job_whose_worker_died_is_failed_once_and_stays_charged(world):
    r = services.plan_release(world.dataset, world.owner, services.ReleaseRequest("baseline", "0.25", "0", {}, 10))
    assert services.claim(r.pk)
    Release.objects.filter(pk=r.pk).update(data_touched=True)  # killed after fit began
    assert services.fail_abandoned(r.pk) is True
    assert services.fail_abandoned(r.pk) is False
    r.refresh_from_db()
    assert r.status == "failed" and ledger.remaining(world.dataset)["epsilon"]["spent"] == "0.75"


def test_the_status_endpoint_reports_progress(world):
    data = world.client(world.owner).get(f"/releases/{world.release.pk}/status.json").json()
    assert {k: data[k] for k in ("id", "status", "progress", "stage", "finished", "can_cancel", "queue")} == {
        "id": world.release.pk,
        "status": "done",
        "progress": 100.0,
        "stage": "done",
        "finished": True,
        "can_cancel": False,
        "queue": "fast",
    }
    assert data["elapsed_seconds"] >= 0 and data["timing_text"].startswith("took ")


def test_the_draw_button_queues_a_free_draw(world):
    resp = world.client(world.owner).post(f"/releases/{world.release.pk}/draw/", {"rows": "7"})
    draw = Release.objects.latest("pk")
    assert resp.status_code == 302 and resp["Location"] == f"/releases/{draw.pk}/"
    assert (draw.parent_id, draw.rows, draw.status) == (world.release.pk, 7, "queued")
    bad = world.client(world.owner).post(f"/releases/{world.release.pk}/draw/", {"rows": "0"}, follow=True)
    assert "rows must be between 1 and" in bad.content.decode()


def test_the_steward_grants_and_revokes_an_analyst(world):
    client = world.client(world.owner)
    url = f"/datasets/{world.dataset.pk}/grants/"
    client.post(url, {"username": "stan", "action": "grant"})
    assert world.client(world.stranger_analyst).get(f"/releases/{world.release.pk}/synthetic.csv").status_code == 200
    client.post(url, {"username": "stan", "action": "revoke"})
    assert world.client(world.stranger_analyst).get(f"/releases/{world.release.pk}/synthetic.csv").status_code == 404
    resp = client.post(url, {"username": "oscar", "action": "grant"}, follow=True)  # a steward, not an analyst
    assert "no analyst named" in resp.content.decode()
    assert not world.dataset.analysts.filter(username="oscar").exists()


def test_release_form_warns_when_pmse_gets_more_columns_than_it_can_use(world):
    """pMSE's advice (docs/benchmarks.md, finding 7) appears for a 4-numeric-column schema and not for 2;
    it refuses nothing and reserves nothing."""
    cols = ["a", "b", "c", "d"]
    text = ",".join(cols) + "\n" + "\n".join(",".join(str((i * (j + 3)) % 50) for j in range(4)) for i in range(60))
    wide = {
        "missing_markers": [""],
        "columns": [{"name": c, "kind": "continuous", "lower": 0, "upper": 50, "bins": 5, "fill": 0} for c in cols],
    }
    narrow = {
        "missing_markers": [""],
        "columns": wide["columns"][:2] + [{"name": c, "kind": "excluded"} for c in cols[2:]],
    }
    client = world.client(world.owner)
    before = Release.objects.count()
    pages = {}
    for label, schema in (("wide", wide), ("narrow", narrow)):
        ds = make_dataset(world.owner, text=text, schema=schema)
        pages[label] = client.get(f"/datasets/{ds.pk}/releases/new/", {"mechanism": "pmse"}).content.decode()
    assert "This schema keeps 4 numeric columns. pMSE is built for two or three" in pages["wide"]
    assert 'id="submit-release"' in pages["wide"]  # advice only: the release can still be submitted
    assert "pMSE is built for two or three" not in pages["narrow"]
    base = client.get(f"/datasets/{ds.pk}/releases/new/", {"mechanism": "baseline"}).content.decode()
    assert "mechanism-advice" not in base
    assert Release.objects.count() == before


def test_pmse_releases_are_recorded_as_mcmc_or_heuristic_never_pure(world):
    """the release form warns before release (advice), and after it the ledger and the release
    page carry the honest label: 'mcmc' for strict trees, 'heuristic' for the paper's greedy trees."""
    from dpportal.ledger.models import LedgerEntry

    text = "a,b\n" + "\n".join(f"{(i * 7) % 50},{(i * 3) % 50}" for i in range(40))
    schema = {
        "missing_markers": [""],
        "columns": [{"name": c, "kind": "continuous", "lower": 0, "upper": 50, "bins": 5, "fill": 0} for c in "ab"],
    }
    ds = make_dataset(world.owner, text=text, schema=schema)
    client = world.client(world.owner)
    form = client.get(f"/datasets/{ds.pk}/releases/new/", {"mechanism": "pmse"}).content.decode()
    assert "tree=&#x27;paper&#x27; is heuristic" in form and "not &#x27;pure&#x27;" in form
    for tree, label in (("strict", "mcmc"), ("paper", "heuristic")):
        release = run_release(
            ds,
            world.owner,
            epsilon="0.2",
            rows=10,
            mechanism="pmse",
            params={"tree": tree, "burn_in": 100, "iterations": 100, "m": 1},
        )
        assert release.status == "done", release.error
        spend = LedgerEntry.objects.get(release=release, kind=LedgerEntry.SPEND)
        assert spend.guarantee == label
        page = client.get(f"/releases/{release.pk}/").content.decode()
        assert f"{label} DP" in page and 'id="guarantee-meaning"' in page


def test_a_release_request_builds_its_mechanism_once_through_the_api_and_the_form(world, monkeypatch):
    from dpportal.releases.services import parsing

    built = []
    real = parsing.build
    monkeypatch.setattr(parsing, "build", lambda *a, **kw: built.append(a[0]) or real(*a, **kw))
    resp = _post(world, {"mechanism": "baseline", "epsilon": "0.1", "rows": 10})
    assert resp.status_code == 201, resp.content
    assert built == ["baseline"]
    built.clear()
    page = world.client(world.owner).post(
        f"/datasets/{world.dataset.pk}/releases/new/", {"mechanism": "baseline", "epsilon": "0.1", "rows": "10"}
    )
    assert page.status_code == 302, page.content.decode()[:2000]
    assert built == ["baseline"]
