"""The guided release page: purpose first, recommendation and curve from public inputs only, would-fail
mechanisms need a confirmation, parameters behind "Advanced" with steward-facing help."""

from __future__ import annotations

import json
import re

import pytest

from dpportal.datasets.models import Dataset
from dpportal.ledger import services as ledger
from dpportal.releases import guidance
from dpportal.releases.models import Release

from mechanisms import registry

from tests.personas import make_dataset
from .test_release_form import _defaults
from tests.dpportal.api.test_recommendation_api import OTHER_CSV

NEW = "/datasets/{}/releases/new/"


def _section(page: str, ident: str) -> str:
    m = re.search(rf'<section class="card" id="{ident}">.*?</section>', page, re.S)
    assert m, f"no #{ident} section"
    return m.group(0)


def _curve_points(page: str) -> list:
    m = re.search(r'<script id="curve-figure" type="application/json">(.*?)</script>', page, re.S)
    assert m, "no curve figure"
    return json.loads(m.group(1))["data"][0]


def test_the_page_starts_with_the_purpose_and_preselects_the_recommendation(world):
    page = world.client(world.owner).get(NEW.format(world.dataset.pk)).content.decode()
    assert page.index('id="purpose-form"') < page.index('id="recommendation"') < page.index('id="release-form"')
    rec = _section(page, "recommendation")
    chosen = re.search(r'id="recommended-mechanism">([\w-]+)<', rec).group(1)
    assert f'name="mechanism" value="{chosen}"' in page  # the release form is the recommended mechanism's
    assert "no data was read and nothing is reserved" in rec
    assert _curve_points(page)["x"][0] < 1 < _curve_points(page)["x"][-1]
    assert "remaining budget" in page.split('id="curve-figure"')[1]


def test_parameters_sit_behind_advanced_with_steward_help(world):
    page = world.client(world.owner).get(NEW.format(world.dataset.pk), {"mechanism": "density-lp"}).content.decode()
    advanced = page.split('<details id="advanced">')[1].split("</details>")[0]
    assert 'name="param_degree"' in advanced and 'name="epsilon"' not in advanced
    assert "spreads the budget over many more tables" in advanced  # what it changes for the steward
    assert "In the paper's terms:" in advanced


def test_a_parameter_error_opens_advanced(world):
    url = NEW.format(world.dataset.pk) + "?mechanism=density-lp"
    post = {k: v for k, v in _defaults(registry.get("density-lp")).items()}
    for bad, message in (
        ({"param_degree": "9"}, "parameter &#x27;degree&#x27; must be &lt;= 3"),  # the service
        ({"param_degree": "two"}, "Enter a whole number."),
    ):  # the form field
        page = world.client(world.owner).post(url, {**post, **bad}).content.decode()
        assert '<details id="advanced" open>' in page and message in page, bad
    closed = world.client(world.owner).post(url, {**post, "epsilon": "-1"}).content.decode()
    assert '<details id="advanced">' in closed  # an epsilon error leaves the parameters folded


def test_recommendation_and_curve_are_identical_for_two_tables_with_the_same_schema_and_n(world):
    other = make_dataset(world.owner, text=OTHER_CSV)
    ledger.set_caps(other, epsilon="2", delta="1e-5", user=world.owner)
    client = world.client(world.owner)
    query = {"purpose": "marginals", "pairs": "age:city", "epsilon": "0.7", "delta": "1e-6", "error_pct": "60"}
    a = client.get(NEW.format(world.dataset.pk), query).content.decode()
    b = client.get(NEW.format(other.pk), query).content.decode()
    assert _section(a, "recommendation") == _section(b, "recommendation")
    assert _curve_points(a) == _curve_points(b)
    assert _section(a, "accuracy-curve").split("<script")[0] == _section(b, "accuracy-curve").split("<script")[0]


def _no_raw_access(monkeypatch):
    def refuse(self):
        raise AssertionError("the raw file was opened")

    monkeypatch.setattr(Dataset, "raw_path", refuse)


def test_the_guided_page_never_opens_the_raw_file(world, monkeypatch):
    _no_raw_access(monkeypatch)
    resp = world.client(world.owner).get(
        NEW.format(world.dataset.pk), {"purpose": "ml", "target": "city", "error_pct": "50"}
    )
    assert resp.status_code == 200 and 'id="recommended-mechanism"' in resp.content.decode()


def test_the_raw_file_guard_catches_a_view_that_reads_data(world, monkeypatch):
    """The guard above has teeth: a (deliberately broken) recommendation that reads the table fails."""
    _no_raw_access(monkeypatch)
    real = guidance.recommendation_for

    def mutant(dataset, query, **kw):
        dataset.source(dataset.confirmed_schema()).frame()
        return real(dataset, query, **kw)

    monkeypatch.setattr(guidance, "recommendation_for", mutant)
    with pytest.raises(AssertionError, match="raw file was opened"):
        world.client(world.owner).get(NEW.format(world.dataset.pk))


def test_a_would_fail_mechanism_needs_the_confirmation_and_nothing_is_charged_without_it(world):
    client = world.client(world.owner)
    url = NEW.format(world.dataset.pk) + "?mechanism=kdtree-grid"
    page = client.get(url).content.decode()
    row = re.search(r'<tr class="status-would-fail[^"]*" data-mechanism="kdtree-grid">.*?</tr>', page, re.S).group(0)
    assert "near-uniform output predicted" in row
    assert 'name="confirm_would_fail"' in page
    before, spent = Release.objects.count(), ledger.remaining(world.dataset)["epsilon"]["remaining"]
    post = {k: v for k, v in _defaults(registry.get("kdtree-grid")).items() if k != "confirm_would_fail"}
    resp = client.post(url, post)
    assert resp.status_code == 200 and "tick the box to confirm" in resp.content.decode()
    assert Release.objects.count() == before and ledger.remaining(world.dataset)["epsilon"]["remaining"] == spent
    ok = client.post(url, {**post, "confirm_would_fail": "on"})
    assert ok.status_code == 302, re.findall(r"class=\"error[^>]*>([^<]*)", ok.content.decode())


def test_would_fail_mechanisms_are_listed_last(world):
    page = world.client(world.owner).get(NEW.format(world.dataset.pk)).content.decode()
    statuses = re.findall(r'<tr class="status-([\w-]+)', _section(page, "recommendation"))
    order = {"recommended": 0, "ok": 1, "would-fail": 2, "unavailable": 3}
    assert statuses == sorted(statuses, key=order.get) and "would-fail" in statuses


def test_model_training_recommends_aim_around_the_target_and_carries_epsilon_and_delta_into_the_form(world):
    page = (
        world.client(world.owner)
        .get(NEW.format(world.dataset.pk), {"purpose": "ml", "target": "city", "epsilon": "0.8", "delta": "1e-6"})
        .content.decode()
    )
    assert 'id="recommended-mechanism">aim<' in page
    form = page.split('id="release-form"')[1]
    assert 'name="epsilon" value="0.8"' in form and 'name="delta" value="1e-06"' in form
    assert '<input type="hidden" name="purpose" value="ml">' in form  # the purpose survives a refused POST
    assert '<option value="city" selected>city</option>' in form.split('name="param_target"')[1].split("</select>")[0]
    workload = form.split('name="param_workload"')[1].split("</select>")[0]
    assert '<option value="target" selected>target</option>' in workload  # the assumed workload, pre-set


def test_model_training_without_aim_recommends_dpmerf_labelled(world):
    page = (
        world.client(world.owner)
        .get(
            NEW.format(world.dataset.pk),
            {"purpose": "ml", "target": "city", "epsilon": "0.8", "delta": "1e-6", "mechanism": "dpmerf"},
        )
        .content.decode()
    )
    form = page.split('id="release-form"')[1]
    assert '<option value="city" selected>city</option>' in form.split('name="param_target"')[1].split("</select>")[0]


def test_key_columns_are_entered_under_explore_and_a_release_from_the_recommendation_carries_them(world):
    client = world.client(world.owner)
    query = {"purpose": "explore", "key_columns": "city", "epsilon": "1", "delta": "1e-6", "mechanism": "mst"}
    page = client.get(NEW.format(world.dataset.pk), query).content.decode()
    purpose_form = page.split('id="purpose-form"')[1].split("</form>")[0]
    assert 'name="key_columns" id="id_key_columns" value="city"' in purpose_form
    rec = _section(page, "recommendation")
    assert "over the pairs with city" in rec and "mean 2-way TVD of city with every other column" in rec
    form = page.split('id="release-form"')[1]
    assert 'name="param_key_columns" value="city"' in form  # MST's prediction assumed it: pre-set
    assert '<input type="hidden" name="key_columns" value="city">' in form
    post = {**_defaults(registry.get("mst")), **query, "epsilon": "0.5", "param_key_columns": "city"}
    resp = client.post(NEW.format(world.dataset.pk) + "?mechanism=mst", post)
    assert resp.status_code == 302, resp.content.decode()[:2000]
    release = Release.objects.latest("pk")
    assert release.mechanism == "mst" and release.params["key_columns"] == ["city"]


def test_key_columns_count_under_explore_only_on_the_page(world):
    page = (
        world.client(world.owner)
        .get(NEW.format(world.dataset.pk), {"purpose": "ml", "target": "city", "key_columns": "age"})
        .content.decode()
    )
    assert 'id="purpose-error"' not in page and "Sorted first by whether the mechanism models" in page


def test_bad_key_columns_are_named_on_the_page(world):
    page = world.client(world.owner).get(NEW.format(world.dataset.pk), {"key_columns": "nope"}).content.decode()
    error = page.split('id="purpose-error"')[1].split("</p>")[0]
    assert "key_columns must name kept columns of the schema, got &#x27;nope&#x27;" in error
    assert 'id="release-form"' in page


def test_the_smallest_epsilon_for_an_accepted_error_links_back_with_it(world):
    page = world.client(world.owner).get(NEW.format(world.dataset.pk), {"error_pct": "65"}).content.decode()
    line = page.split('id="smallest-epsilon"')[1].split("</p>")[0]
    eps = re.search(r"<strong>([\d.e+-]+)</strong>", line).group(1)
    assert f"Use ε {eps}" in line and f"epsilon={eps}" in line


@pytest.mark.parametrize(
    "query, message",
    [
        ({"purpose": "ml"}, "needs a target column"),
        ({"epsilon": "lots"}, "epsilon must be a number"),
        ({"error_pct": "abc"}, "target_error must be a number"),
        ({"purpose": "marginals", "pairs": "age:nope"}, "&#x27;nope&#x27; is not a kept column"),
    ],
)
def test_a_bad_purpose_is_named_and_the_form_still_works(world, query, message):
    resp = world.client(world.owner).get(NEW.format(world.dataset.pk), query)
    page = resp.content.decode()
    assert resp.status_code == 200 and message in page.split('id="purpose-error"')[1].split("</p>")[0]
    assert 'id="release-form"' in page


def test_a_plain_post_without_purpose_still_releases(world):
    """The form's old contract (mechanism, epsilon, delta, rows) keeps working: API-like scripts and tests."""
    resp = world.client(world.owner).post(
        NEW.format(world.dataset.pk), {"mechanism": "baseline", "epsilon": "0.1", "delta": "0", "rows": "5"}
    )
    assert resp.status_code == 302


def test_the_recommendation_explains_its_order_terms_and_epsilon_and_shows_run_times(world):
    page = (
        world.client(world.owner)
        .get(NEW.format(world.dataset.pk), {"purpose": "ml", "target": "city", "epsilon": "0.5", "delta": "1e-6"})
        .content.decode()
    )
    rec = _section(page, "recommendation")
    assert "<th>Run time</th>" in rec and 'id="ranking">Sorted first by whether the mechanism models' in rec
    cells = re.findall(r'<td class="runtime">(.*?)</td>', rec)
    assert cells and all(c == "–" or "second" in c or " s" in c or "min" in c for c in cells)
    assert any(c != "–" for c in cells)
    assert "a factor of 1.65 (e^ε)" in rec  # e^0.5
    for term in ("TVD", "marginals", "rho (ρ)", "ε (epsilon)"):
        assert f"<dt>{term}</dt>" in rec
    assert "The privacy loss" in page.split('id="purpose-form"')[1]
    api = (
        world.client(None)
        .get(
            f"/api/datasets/{world.dataset.pk}/recommendation/",
            {"purpose": "ml", "target": "city"},
            **world.api(world.owner),
        )
        .json()
    )
    assert api["ranking"].startswith("Sorted first") and "label_conditional" in api["mechanisms"][0]


def test_train_a_model_shows_measured_model_accuracy_beside_the_predicted_error(world, monkeypatch):
    _no_raw_access(monkeypatch)
    page = (
        world.client(world.owner)
        .get(NEW.format(world.dataset.pk), {"purpose": "ml", "target": "city", "epsilon": "1", "delta": "1e-6"})
        .content.decode()
    )
    assert "Model accuracy (AUC, measured on benchmark tables)" in page
    assert 'id="model-quality-note"' in page and "Model accuracy is not predicted for this table" in page
    cells = re.findall(r'<td class="model-quality">([^<]*)</td>', page)
    assert cells and all(c.startswith(("measured ", "about 0.5 (chance)", "not measured")) for c in cells)
    assert any("benchmark tables at ε 1 (real data:" in c for c in cells)
    api = (
        world.client(None)
        .get(
            f"/api/datasets/{world.dataset.pk}/recommendation/",
            {"purpose": "ml", "target": "city", "epsilon": "1", "delta": "1e-6"},
            **world.api(world.owner),
        )
        .json()
    )
    assert api["model_quality_note"].startswith("Model accuracy is not predicted")
    assert all(m["model_quality"]["kind"] in ("measured", "chance", "none") for m in api["mechanisms"])
    explore = world.client(world.owner).get(NEW.format(world.dataset.pk), {"purpose": "explore"}).content.decode()
    assert "model-quality" not in explore


LABELLED_CSV = "age,city,income\n" + "".join(
    f"{20 + i % 50},{('Paris', 'Lyon')[i % 2]},{('low', 'high')[i % 3 == 0]}\n" for i in range(60)
)
LABELLED_SCHEMA = {
    "missing_markers": [""],
    "columns": [
        {"name": "age", "kind": "integer", "lower": 18, "upper": 90, "bins": 8},
        {"name": "city", "kind": "categorical", "categories": ["Paris", "Lyon"]},
        {"name": "income", "kind": "categorical", "categories": ["low", "high"]},
    ],
}


def test_a_key_column_suggested_from_the_schema_is_offered_beside_the_field_not_applied(world):
    dataset = make_dataset(world.owner, LABELLED_CSV, LABELLED_SCHEMA)
    client = world.client(world.owner)
    page = client.get(NEW.format(dataset.pk), {"epsilon": "1"}).content.decode()
    purpose_form = page.split('id="purpose-form"')[1].split("</form>")[0]
    line = purpose_form.split('id="key-suggestion"')[1].split("</p>")[0]
    assert "<strong>income</strong> (2 categories, named like a label, the table&#x27;s last column)" in line
    assert 'name="key_columns" id="id_key_columns" value=""' in purpose_form  # not applied
    assert "mean 2-way TVD over all pairs" in _section(page, "recommendation")
    assert 'name="param_key_columns" value="income"' not in page
    link = re.search(r'href="\?([^"]+)"', line).group(1).replace("&amp;", "&")
    assert "key_columns=income" in link and "epsilon=1" in link
    named = client.get(NEW.format(dataset.pk) + "?" + link).content.decode()
    assert 'id="key-suggestion"' not in named  # named: nothing left to suggest
    assert "mean 2-way TVD of income with every other column" in _section(named, "recommendation")
    plain = client.get(NEW.format(world.dataset.pk)).content.decode()  # income numeric, no label-like column
    assert 'id="key-suggestion"' not in plain


def test_mst_chosen_for_model_training_is_preset_with_the_target_as_key_column(world):
    query = {"purpose": "ml", "target": "city", "epsilon": "1", "delta": "1e-6", "mechanism": "mst"}
    page = world.client(world.owner).get(NEW.format(world.dataset.pk), query).content.decode()
    rec = _section(page, "recommendation")
    assert "mst · key_columns = city · models the columns given city" in rec  # the MST row's configuration
    form = page.split('id="release-form"')[1]
    assert 'name="param_key_columns" value="city"' in form  # as predicted: every pair with city measured
