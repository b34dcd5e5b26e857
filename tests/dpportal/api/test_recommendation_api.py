"""GET /api/datasets/{id}/recommendation/: public inputs only, owner only, bad input named."""

from __future__ import annotations

import pytest

from tests.data import SMALL_CSV
from tests.personas import make_dataset

URL = "/api/datasets/{}/recommendation/"

# Same header and row count as SMALL_CSV, different values (the same schema fits both)
OTHER_CSV = (
    "age,city,income,note\n"
    "80,Nice,99000,a\n"
    "19,Nice,1000,b\n"
    "20,Lyon,2000,c\n"
    "21,Lyon,3000,d\n"
    "22,Nice,4000,e\n"
    "23,Nice,5000,f\n"
)


def test_it_recommends_with_a_curve_and_the_remaining_budget(world):
    resp = world.client(None).get(
        URL.format(world.dataset.pk) + "?purpose=explore&epsilon=0.5&target_error=0.5", **world.api(world.owner)
    )
    assert resp.status_code == 200, resp.content
    data = resp.json()
    assert data["public_inputs_only"] is True and data["rows"] == world.dataset.n_rows
    assert data["recommended"] in {m["mechanism"] for m in data["mechanisms"]}
    assert data["curve"]["mechanism"] == data["recommended"] and len(data["curve"]["points"]) > 10
    assert "smallest_epsilon" in data["curve"]
    assert data["budget"]["set"] is True


def test_two_tables_with_the_same_schema_and_n_get_the_same_answer(world):
    assert len(OTHER_CSV.splitlines()) == len(SMALL_CSV.splitlines())
    other = make_dataset(world.owner, text=OTHER_CSV)
    query = "?purpose=ml&target=city&epsilon=1&delta=1e-6&target_error=0.3"
    a = world.client(None).get(URL.format(world.dataset.pk) + query, **world.api(world.owner)).json()
    b = world.client(None).get(URL.format(other.pk) + query, **world.api(world.owner)).json()
    a.pop("budget"), b.pop("budget")  # the ledgers differ (the world dataset has a release)
    assert a == b


@pytest.mark.parametrize(
    "query, message",
    [
        ("?epsilon=abc", "epsilon must be a number, got epsilon='abc'"),
        ("?epsilon=1e999", "epsilon must be in (0, 100]"),
        ("?epsilon=0", "epsilon must be in (0, 100]"),
        ("?delta=1", "delta must be in [0, 1)"),
        ("?epsilon=" + "1" * 50, "epsilon is too long"),
        ("?purpose=ml", "needs a target column"),
        ("?purpose=ml&target=note", "target must name a kept column"),
        ("?purpose=marginals&pairs=age", "column:column"),
        ("?target_error=2", "target_error must be in (0, 1)"),
        ("?colour=blue", "unknown parameter(s) ['colour']"),
        ("?key_columns=city,nope", "key_columns must name kept columns of the schema, got 'nope'"),
        ("?key_columns=note", "key_columns must name kept columns of the schema, got 'note'"),
        ("?key_columns=city,city", "key_columns name the column 'city' twice"),
        ("?key_columns=age,city,income,age", "key_columns may name at most 3 columns"),
        ("?purpose=ml&target=city&key_columns=age", "key_columns belong to purpose 'explore'"),
    ],
)
def test_bad_input_is_named(world, query, message):
    resp = world.client(None).get(URL.format(world.dataset.pk) + query, **world.api(world.owner))
    assert resp.status_code == 400 and message in resp.json()["error"], resp.content


def test_key_columns_rank_on_their_pairs_and_the_recommended_params_carry_them(world):
    query = "?purpose=explore&key_columns=city&epsilon=1&delta=1e-6"
    resp = world.client(None).get(URL.format(world.dataset.pk) + query, **world.api(world.owner))
    assert resp.status_code == 200, resp.content
    data = resp.json()
    assert data["key_columns"] == ["city"] and data["metric"] == "mean 2-way TVD of city with every other column"
    mst = next(m for m in data["mechanisms"] if m["mechanism"] == "mst")
    assert mst["params"] == {"key_columns": "city"}


def test_only_the_owner_sees_it(world):
    for user in (world.analyst, world.other_steward):
        resp = world.client(None).get(URL.format(world.dataset.pk), **world.api(user))
        assert resp.status_code == 404


def test_a_release_of_a_mechanism_predicted_to_fail_needs_the_confirmation(world):
    from dpportal.ledger import services as ledger
    from dpportal.releases.models import Release

    url = f"/api/datasets/{world.dataset.pk}/releases/"
    body = {"mechanism": "kdtree-grid", "epsilon": "0.1", "rows": 5}
    before, left = Release.objects.count(), ledger.remaining(world.dataset)["epsilon"]["remaining"]
    resp = world.client(None).post(url, body, content_type="application/json", **world.api(world.owner))
    assert resp.status_code == 400 and "confirm_would_fail" in resp.json()["error"]
    assert "near-uniform" in resp.json()["error"] and "Nothing was charged" in resp.json()["error"]
    assert Release.objects.count() == before and ledger.remaining(world.dataset)["epsilon"]["remaining"] == left
    ok = world.client(None).post(
        url, {**body, "confirm_would_fail": True}, content_type="application/json", **world.api(world.owner)
    )
    assert ok.status_code == 201
    plain = world.client(None).post(
        url,
        {"mechanism": "baseline", "epsilon": "0.1", "rows": 5},
        content_type="application/json",
        **world.api(world.owner),
    )
    assert plain.status_code == 201  # mechanisms not predicted to fail need nothing new


def larger_dataset(owner, rows: int = 2000):
    """The small table's schema with 2,000 rows: large enough that epsilon, not the row count, decides."""
    body = SMALL_CSV.split("\n", 1)[1]
    return make_dataset(owner, SMALL_CSV.split("\n", 1)[0] + "\n" + body * (rows // 6))


def test_a_release_predicted_above_the_error_threshold_needs_the_high_error_confirmation(world):
    from dpportal.ledger import services as ledger
    from dpportal.releases.models import Release

    d = larger_dataset(world.owner)
    url = f"/api/datasets/{d.pk}/releases/"
    body = {"mechanism": "baseline", "epsilon": "0.01", "rows": 5}
    before, left = Release.objects.count(), ledger.remaining(d)["epsilon"]["remaining"]
    resp = world.client(None).post(url, body, content_type="application/json", **world.api(world.owner))
    error = resp.json()["error"]
    assert resp.status_code == 400 and "confirm_high_error" in error and "Nothing was charged" in error
    assert "predicted error at ε 0.01 is 49%" in error and "above the 30%" in error and "ε 0.0438 or more" in error
    assert Release.objects.count() == before and ledger.remaining(d)["epsilon"]["remaining"] == left
    ok = world.client(None).post(
        url, {**body, "confirm_high_error": True}, content_type="application/json", **world.api(world.owner)
    )
    assert ok.status_code == 201
    fine = world.client(None).post(
        url, {**body, "epsilon": "0.5"}, content_type="application/json", **world.api(world.owner)
    )
    assert fine.status_code == 201  # predicted under the threshold: nothing new to confirm
    tiny = world.client(None).post(
        f"/api/datasets/{world.dataset.pk}/releases/", body, content_type="application/json", **world.api(world.owner)
    )
    assert tiny.status_code == 201  # 6 rows: no epsilon brings it under, so epsilon is not what to confirm


def test_the_release_form_asks_for_the_high_error_confirmation(world):
    from dpportal.releases.models import Release

    from tests.dpportal.releases.test_release_form import _defaults
    from mechanisms import registry

    d = larger_dataset(world.owner)
    url = f"/datasets/{d.pk}/releases/new/"
    c = world.client(world.owner)
    page = c.get(url, {"mechanism": "baseline", "epsilon": "0.01"}).content.decode()
    assert 'name="confirm_high_error"' in page and "predicted error at ε 0.01 is 49%" in page
    post = {**_defaults(registry.get("baseline")), "epsilon": "0.01"}
    post.pop("confirm_high_error")
    before = Release.objects.count()
    refused = c.post(url, post)
    assert refused.status_code == 200 and "tick the box" in refused.content.decode()
    assert Release.objects.count() == before
    assert c.post(url, {**post, "confirm_high_error": "on"}).status_code == 302
    assert 'name="confirm_high_error"' not in c.get(url, {"mechanism": "baseline", "epsilon": "1"}).content.decode()
