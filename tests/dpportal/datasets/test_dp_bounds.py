"""Private bounds from the schema page: charged like a release (reserve, run,
settle), shown as estimates, used in one action, never visible to analysts."""

from __future__ import annotations

from dpportal.dashboards.models import Evaluation
from dpportal.datasets.models import Dataset
from dpportal.ledger import services as ledger
from dpportal.ledger.models import LedgerEntry
from dpportal.releases import services as release_services
from dpportal.releases.models import Release

from tests.personas import make_dataset

AGES = "age,city,income,note\n" + "".join(
    f"{18 + (i * 7) % 70},Paris,{1000 + (i * 37) % 900}.5,x\n" for i in range(3000)
)


def _start(world, d, **data):
    return world.client(world.owner).post(f"/datasets/{d.pk}/schema/dp-bounds/", data, follow=True)


def _run(release):
    assert release_services.claim(release.pk)
    release_services.execute(release.pk)
    release.refresh_from_db()
    return release


def test_an_estimate_is_reserved_run_and_spent_then_used_on_the_schema_page(world):
    d = make_dataset(world.owner, text=AGES, schema=None, budget=("1", "0"))
    text = _start(world, d, bounds_columns=["age", "income"], bounds_epsilon="0.5").content.decode()
    assert "Estimating bounds or categories of 2 column(s) privately" in text
    r = Release.objects.get(dataset=d, mechanism="dp-bounds")
    assert ledger.remaining(Dataset.objects.get(pk=d.pk))["epsilon"]["reserved"] == "0.5"
    r = _run(r)
    assert r.status == "done" and r.data_touched and r.report["guarantee"] == "pure"
    assert ledger.remaining(Dataset.objects.get(pk=d.pk))["epsilon"]["spent"] == "0.5"
    assert LedgerEntry.objects.filter(release_pk=r.pk, kind="spend").exists()
    bounds = r.report["details"]["bounds"]
    assert bounds["age"]["lower"] <= 18 and bounds["age"]["upper"] >= 80  # ages 18-87, 3000 rows, eps 0.25
    assert not Evaluation.objects.filter(release=r).exists()  # nothing to evaluate: no table
    release_services.queue_evaluation(r.pk)  # what the worker calls after every finished job
    assert not Evaluation.objects.filter(release=r).exists()
    assert world.client(world.owner).post(f"/releases/{r.pk}/evaluate/").status_code == 404
    assert not Evaluation.objects.filter(release=r).exists()
    page = world.client(world.owner).get(f"/datasets/{d.pk}/schema/").content.decode()
    assert "private estimate (ε 0.5, release" in page and 'id="bulk-use-dp"' in page
    post = {"markers": "", "empty_is_missing": "1", "bulk": "use_dp"}
    for i, col in enumerate(d.schema_draft["columns"]):
        post[f"col-{i}-kind"] = col["kind"]
        for f in ("lower", "upper", "bins", "fill", "other"):
            if col.get(f) is not None:
                post[f"col-{i}-{f}"] = str(col[f])
        post[f"col-{i}-categories"] = "\n".join(col.get("categories", []))
    page = world.client(world.owner).post(f"/datasets/{d.pk}/schema/", post).content.decode()
    assert "Used the private estimates for 2 column(s): age, income" in page
    assert f'name="col-0-lower" value="{bounds["age"]["lower"]}"' in page
    assert f'name="col-0-upper" value="{bounds["age"]["upper"]}"' in page
    assert f'name="col-0-fill" value="{bounds["age"]["lower"]}"' in page  # from the estimate, not the draft
    assert "still suggestions from the data" in page


def test_analysts_never_see_an_estimate(world):
    d = world.dataset
    r = _run(release_services.plan_bounds(d, world.owner, columns=["age"], epsilon="0.1"))
    assert r.status == "done"
    assert world.client(world.analyst).get(f"/releases/{r.pk}/").status_code == 404
    api = world.client(world.analyst).get(f"/api/datasets/{d.pk}/releases/", **world.api(world.analyst)).json()
    assert r.pk not in [x["id"] for x in api["releases"]]


def test_no_budget_no_estimate_and_nothing_charged(world):
    d = make_dataset(world.owner, text=AGES, schema=None, budget=None)
    text = _start(world, d, bounds_columns=["age"], bounds_epsilon="0.1").content.decode()
    assert "Set a privacy budget" in text or "no privacy budget" in text
    assert not Release.objects.filter(dataset=d).exists() and not LedgerEntry.objects.filter(dataset=d).exists()


def test_bad_requests_are_named_and_charge_nothing(world):
    d = make_dataset(world.owner, text=AGES, schema=None, budget=("1", "0"))
    for data, message in (
        ({"bounds_columns": ["nope"], "bounds_epsilon": "0.1"}, "got [&#x27;nope&#x27;]"),
        ({"bounds_epsilon": "0.1"}, "got none"),
        ({"bounds_columns": ["age"], "bounds_epsilon": "-1"}, "epsilon: expected a positive"),
        ({"bounds_columns": ["age"], "bounds_epsilon": "5"}, "over budget"),
    ):
        text = _start(world, d, **data).content.decode()
        assert "Bounds not estimated" in text and message in text, message
    assert not Release.objects.filter(dataset=d).exists()
    assert ledger.remaining(Dataset.objects.get(pk=d.pk))["epsilon"]["reserved"] == "0"


def test_a_failed_estimate_after_reading_is_spent_not_refunded(world, monkeypatch):
    d = make_dataset(world.owner, text=AGES, schema=None, budget=("1", "0"))
    r = release_services.plan_bounds(d, world.owner, columns=["age"], epsilon="0.2")

    def boom(*a, **k):
        raise RuntimeError("disk error while reading")

    monkeypatch.setattr("mechanisms.bounds.estimate_bounds", boom)
    r = _run(r)
    assert r.status == "failed" and "disk error" in r.error
    assert ledger.remaining(Dataset.objects.get(pk=d.pk))["epsilon"]["spent"] == "0.2"  # the job had touched data


def test_the_release_page_of_an_estimate_lists_the_bounds_and_offers_no_download(world):
    r = _run(release_services.plan_bounds(world.dataset, world.owner, columns=["age"], epsilon="0.5"))
    page = world.client(world.owner).get(f"/releases/{r.pk}/").content.decode()
    assert 'id="bounds-note"' in page and "<dt>age</dt>" in page and 'id="download-csv"' not in page
    assert "quality-score" not in page


def test_the_api_starts_an_estimate_and_names_bad_input(world):
    import json

    d = make_dataset(world.owner, text=AGES, schema=None, budget=("1", "0"))
    url = f"/api/datasets/{d.pk}/bounds/"
    c = world.client(None)
    resp = c.post(
        url,
        json.dumps({"columns": ["age"], "epsilon": "0.3"}),
        content_type="application/json",
        **world.api(world.owner),
    )
    assert resp.status_code == 201 and resp.json()["mechanism"] == "dp-bounds"
    r = _run(Release.objects.get(pk=resp.json()["id"]))
    got = c.get(f"/api/releases/{r.pk}/", **world.api(world.owner)).json()
    assert got["privacy"]["details"]["bounds"]["age"]["lower"] is not None
    bad = c.post(url, json.dumps({"columns": "age"}), content_type="application/json", **world.api(world.owner))
    assert bad.status_code == 400 and "columns must be a list" in bad.json()["error"]


JOBS = "job,age\n" + "".join(f"{'clerk' if i % 3 else 'nurse'},{20 + i % 50}\n" for i in range(3000)) + "astronaut,44\n"


def test_categories_are_discovered_privately_with_a_delta_and_used_on_the_schema_page(world):
    d = make_dataset(world.owner, text=JOBS, schema=None, budget=("1", "0.00001"))
    page = world.client(world.owner).get(f"/datasets/{d.pk}/schema/").content.decode()
    assert 'id="discovery-columns"' in page and 'name="bounds_delta"' in page
    text = _start(world, d, bounds_columns=["job"], bounds_epsilon="0.5", bounds_delta="0.000002").content.decode()
    assert "Estimating bounds or categories of 1 column(s) privately" in text
    r = _run(Release.objects.get(dataset=d, mechanism="dp-bounds"))
    assert r.status == "done" and r.report["guarantee"] == "approximate" and r.delta == "0.000002"
    assert ledger.remaining(Dataset.objects.get(pk=d.pk))["delta"]["spent"] == "2e-6"
    found = r.report["details"]["categories"]["job"]["categories"]
    assert found == ["clerk", "nurse"]  # the one astronaut is not released
    page = world.client(world.owner).get(f"/datasets/{d.pk}/schema/").content.decode()
    assert "private discovery (ε 0.5, release" in page
    post = {
        "markers": "",
        "empty_is_missing": "1",
        "bulk": "use_dp",
        "col-0-kind": "categorical",
        "col-0-categories": "astronaut\nclerk\nnurse",
        "col-1-kind": "integer",
        "col-1-lower": "0",
        "col-1-upper": "100",
    }
    page = world.client(world.owner).post(f"/datasets/{d.pk}/schema/", post).content.decode()
    assert "Used the private estimates for 1 column(s): job" in page and "clerk\nnurse\n(other)" in page


def test_a_discovery_needs_a_delta_and_bounds_take_none(world):
    d = make_dataset(world.owner, text=JOBS, schema=None, budget=("1", "0.00001"))
    with_delta = _start(world, d, bounds_columns=["age"], bounds_epsilon="0.5", bounds_delta="0.001").content.decode()
    assert "pure epsilon-DP and take no delta" in with_delta
    zero = _start(world, d, bounds_columns=["job"], bounds_epsilon="0.5", bounds_delta="0").content.decode()
    assert "needs a delta in (0, 1)" in zero
    over = _start(world, d, bounds_columns=["job"], bounds_epsilon="0.5", bounds_delta="0.001").content.decode()
    assert "delta" in over and not Release.objects.filter(dataset=d).exists()  # over the delta cap: nothing reserved


CODES = "origin,city\n" + "".join(
    f"{'NA' if i % 4 == 0 else '?' if i % 4 == 1 else 'Cuban' if i % 2 else 'Mexican'},{'?' if i % 2 else 'Paris'}\n"
    for i in range(2000)
)


def test_a_marker_kept_as_a_category_is_discovered_as_a_label_and_missing_cells_as_missing(world):
    d = make_dataset(world.owner, text=CODES, schema=None, budget=("1", "0.00001"))
    assert "NA" in d.schema_draft["columns"][0]["categories"]  # the file writes missing as "?"
    # the file's own marker is judged over the columns discovered together: "?" 1,500 cells, "NA" 500
    r = _run(release_services.plan_bounds(d, world.owner, columns=["origin", "city"], epsilon="0.5", delta="0.000002"))
    assert r.params["marker_labels"] == "auto"  # chosen from the noisy counts, not from the draft
    found = r.report["details"]["categories"]["origin"]
    assert found["marker_labels"] == ["NA"]
    assert found["categories"] == ["Cuban", "Mexican", "NA"] and found["missing"]  # 500 "?" cells
    post = {"markers": "?, NA", "empty_is_missing": "1", "bulk": "use_dp", "col-0-kind": "categorical"}
    post |= {"col-1-kind": "categorical", "col-1-categories": "Paris"}
    page = world.client(world.owner).post(f"/datasets/{d.pk}/schema/", post).content.decode()
    assert "Cuban\nMexican\nNA\n(missing)\n(other)" in page
