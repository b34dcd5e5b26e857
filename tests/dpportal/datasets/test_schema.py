"""Schema confirmation: suggestions must be confirmed; a schema the file does not fit is refused."""

from __future__ import annotations

import json

from dpportal.datasets.models import Dataset

from tests.data import SMALL_SCHEMA, csv_file
from tests.personas import make_dataset


def _form_for(dataset, overrides=None):
    post = {"markers": "?, NA", "empty_is_missing": "1", "public_ack": "1"}
    for i, col in enumerate(SMALL_SCHEMA["columns"]):
        post[f"col-{i}-kind"] = col["kind"]
        for f in ("lower", "upper", "bins", "fill", "other"):
            if col.get(f) is not None:
                post[f"col-{i}-{f}"] = str(col[f])
        post[f"col-{i}-categories"] = "\n".join(col.get("categories", []))
    post.update(overrides or {})
    return post


def test_the_page_marks_suggestions_from_data(world):
    d = make_dataset(world.owner, schema=None, budget=None)
    page = world.client(world.owner).get(f"/datasets/{d.pk}/schema/").content.decode()
    assert "suggested from data" in page and "becomes PUBLIC metadata" in page


def test_confirming_needs_the_public_knowledge_box(world):
    d = make_dataset(world.owner, schema=None, budget=None)
    resp = world.client(world.owner).post(f"/datasets/{d.pk}/schema/", _form_for(d, {"public_ack": ""}))
    assert "public knowledge" in resp.content.decode()
    assert Dataset.objects.get(pk=d.pk).schema is None


def test_it_confirms_a_schema_that_fits(world):
    d = make_dataset(world.owner, schema=None, budget=None)
    resp = world.client(world.owner).post(f"/datasets/{d.pk}/schema/", _form_for(d))
    assert resp.status_code == 302
    d.refresh_from_db()
    assert d.schema["draft"] is False and d.confirmed_schema().column("age").upper == 90


def test_it_refuses_a_schema_the_file_does_not_fit(world):
    d = make_dataset(world.owner, schema=None, budget=None)
    # 'Nice' appears in the file; without it and without an 'other' category, the data does not fit
    post = _form_for(d, {"col-1-categories": "Paris\nLyon", "col-1-other": ""})
    resp = world.client(world.owner).post(f"/datasets/{d.pk}/schema/", post)
    text = resp.content.decode()
    assert "does not fit this schema" in text and "outside the declared categories" in text
    assert Dataset.objects.get(pk=d.pk).schema is None


def test_it_names_a_bad_bound(world):
    d = make_dataset(world.owner, schema=None, budget=None)
    resp = world.client(world.owner).post(f"/datasets/{d.pk}/schema/", _form_for(d, {"col-0-upper": "ten"}))
    assert "upper bound must be a number, got &#x27;ten&#x27;" in resp.content.decode()
    resp = world.client(world.owner).post(f"/datasets/{d.pk}/schema/", _form_for(d, {"col-0-upper": "5"}))
    assert "upper must exceed lower" in resp.content.decode()


def test_export_then_import_round_trips(world):
    client = world.client(world.owner)
    exported = json.loads(client.get(f"/datasets/{world.dataset.pk}/schema.json").content)
    d = make_dataset(world.owner, schema=None, budget=None)
    resp = client.post(f"/datasets/{d.pk}/schema/import/", {"schema_file": csv_file(json.dumps(exported), "s.json")})
    assert resp.status_code == 302
    d.refresh_from_db()
    assert d.draft_source == "import" and d.schema is None  # imported values still need confirming
    assert d.schema_draft["columns"] == exported["columns"]


def test_import_refuses_foreign_columns(world):
    d = make_dataset(world.owner, schema=None, budget=None)
    bad = {"columns": [{"name": "zzz", "kind": "excluded"}, {"name": "age", "kind": "integer", "lower": 0, "upper": 1}]}
    resp = world.client(world.owner).post(
        f"/datasets/{d.pk}/schema/import/", {"schema_text": json.dumps(bad)}, follow=True
    )
    assert "not in the file: [&#x27;zzz&#x27;]" in resp.content.decode()


def test_api_schema_put_refuses_mismatch_with_400(world):
    d = make_dataset(world.owner, schema=None, budget=None)
    schema = json.loads(json.dumps(SMALL_SCHEMA))
    schema["columns"][2].pop("fill")  # a missing income value and no fill declared
    resp = world.client(None).put(
        f"/api/datasets/{d.pk}/schema/", json.dumps(schema), content_type="application/json", **world.api(world.owner)
    )
    assert resp.status_code == 400 and "missing value(s) and no 'fill' declared" in resp.json()["error"]


def test_the_widest_allowed_table_can_be_confirmed_through_the_form(world, settings):
    width = settings.DPPORTAL_MAX_COLUMNS
    header = ",".join(f"c{i}" for i in range(width))
    text = header + "\n" + "\n".join(",".join(str((r + i) % 5) for i in range(width)) for r in range(4)) + "\n"
    d = make_dataset(world.owner, text=text, schema=None, budget=None)
    post = {"markers": "", "empty_is_missing": "1", "public_ack": "1"}
    for i in range(width):
        post.update(
            {
                f"col-{i}-kind": "integer",
                f"col-{i}-lower": "0",
                f"col-{i}-upper": "4",
                f"col-{i}-bins": "5",
                f"col-{i}-fill": "",
                f"col-{i}-categories": "",
                f"col-{i}-other": "",
            }
        )
    resp = world.client(world.owner).post(f"/datasets/{d.pk}/schema/", post)
    assert resp.status_code == 302
    d.refresh_from_db()
    assert len(d.confirmed_schema().kept) == width


def test_a_blank_missing_value_box_says_what_it_means(world):
    from dpportal.datasets.upload import parse_markers, store_upload

    from tests.data import SMALL_CSV

    c = world.client(world.owner)
    assert "Blank means none: only empty cells" in c.get("/datasets/upload/").content.decode()
    d = store_upload(csv_file(SMALL_CSV), owner=world.owner, name="blank", markers=parse_markers(""))
    page = c.get(f"/datasets/{d.pk}/schema/").content.decode()
    meaning = page.split('id="markers-meaning"')[1].split("</p>")[0]
    assert "No other markers: only empty cells are missing; a cell like ? or NA is read as a value." in meaning
    page = c.get(f"/datasets/{world.dataset.pk}/schema/").content.decode()
    assert "Missing: empty cells and cells equal to “?”, “NA”." in page.split('id="markers-meaning"')[1]


def test_special_values_log_bins_decimals_and_the_missing_marker_are_confirmed_from_the_form(world):
    d = make_dataset(world.owner, schema=None, budget=None)
    post = _form_for(
        d, {"col-2-special": "0, 99999", "col-2-scale": "log", "col-2-decimals": "2", "missing_output": "NA"}
    )
    assert world.client(world.owner).post(f"/datasets/{d.pk}/schema/", post).status_code == 302
    d.refresh_from_db()
    income = d.confirmed_schema().column("income")
    assert income.special == (0, 99999) and income.scale == "log" and income.decimals == 2
    assert d.confirmed_schema().missing_text == "NA"
    page = world.client(world.owner).get(f"/datasets/{d.pk}/schema/").content.decode()
    assert 'value="0, 99999"' in page and 'value="NA"' in page


def test_a_bad_special_value_is_named(world):
    d = make_dataset(world.owner, schema=None, budget=None)
    resp = world.client(world.owner).post(f"/datasets/{d.pk}/schema/", _form_for(d, {"col-2-special": "5e6"}))
    assert "special value 5000000 lies outside" in resp.content.decode()
    assert Dataset.objects.get(pk=d.pk).schema is None


def test_rules_are_confirmed_refused_when_malformed_and_refused_when_the_file_breaks_them(world):
    d = make_dataset(world.owner, schema=None, budget=None)
    url = f"/datasets/{d.pk}/schema/"
    client = world.client(world.owner)
    text = client.post(url, _form_for(d, {"rules": '[{"order": ["age"'})).content.decode()
    assert "the rules are not valid JSON" in text
    text = client.post(url, _form_for(d, {"rules": '[{"forbid": {"age": [18, 90]}}]'})).content.decode()
    assert "forbids every record" in text
    # the file has a 67-year-old in Lyon: a rule forbidding it is not a fact about every record
    text = client.post(
        url, _form_for(d, {"rules": '[{"forbid": {"age": [60, 90], "city": ["Lyon"]}, "name": "no old Lyonnais"}]'})
    ).content.decode()
    assert "the file breaks rule &#x27;no old Lyonnais&#x27; in 1 row(s)" in text
    assert Dataset.objects.get(pk=d.pk).schema is None
    good = '[{"forbid": {"age": [18, 25], "city": ["Nice"]}, "name": "no young Niçois"}]'
    assert client.post(url, _form_for(d, {"rules": good})).status_code == 302
    d.refresh_from_db()
    assert d.confirmed_schema().rules[0].name == "no young Niçois"
    assert "no young Niçois" in client.get(url).content.decode()


def test_rare_categories_are_flagged_and_can_be_grouped_into_other(world):
    text = "job,age\n" + "".join(f"clerk,{20 + i % 40}\n" for i in range(40)) + "astronaut,50\n"
    d = make_dataset(world.owner, text=text, schema=None, budget=None)
    url = f"/datasets/{d.pk}/schema/"
    page = world.client(world.owner).get(url).content.decode()
    assert "1 rare category (fewer than 10 rows): astronaut" in page and 'id="bulk-group-rare"' in page
    post = {
        "markers": "",
        "empty_is_missing": "1",
        "col-0-kind": "categorical",
        "col-0-categories": "astronaut\nclerk",
        "col-1-kind": "integer",
        "col-1-lower": "0",
        "col-1-upper": "100",
        "bulk": "group_rare",
    }
    page = world.client(world.owner).post(url, post).content.decode()
    assert "Grouped the rare categories of 1 column(s)" in page and "astronaut" not in page.split('id="bulk-note"')[1]
    assert "clerk\n(other)" in page and 'name="col-0-other" value="(other)"' in page


def test_a_date_column_is_suggested_and_confirmed_with_iso_bounds(world):
    text = "opened,city\n" + "".join(f"{1 + i % 28:02d}/0{1 + i % 9}/20{10 + i % 12},Paris\n" for i in range(30))
    d = make_dataset(world.owner, text=text, schema=None, budget=None)
    url = f"/datasets/{d.pk}/schema/"
    page = world.client(world.owner).get(url).content.decode()
    assert 'value="2010-01-01"' in page and 'value="%d/%m/%Y"' in page
    post = {
        "markers": "",
        "empty_is_missing": "1",
        "public_ack": "1",
        "col-0-kind": "date",
        "col-0-lower": "2000-01-01",
        "col-0-upper": "2030-12-31",
        "col-0-granularity": "month",
        "col-0-format": "%d/%m/%Y",
        "col-1-kind": "categorical",
        "col-1-categories": "Paris",
    }
    assert world.client(world.owner).post(url, post).status_code == 302
    d.refresh_from_db()
    col = d.schema["columns"][0]
    assert (col["kind"], col["lower"], col["upper"], col["granularity"]) == ("date", "2000-01", "2030-12", "month")
    bad = world.client(world.owner).post(url, {**post, "col-0-lower": "yesterday"}).content.decode()
    assert "not an ISO date" in bad
