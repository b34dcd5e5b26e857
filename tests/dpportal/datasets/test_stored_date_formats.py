"""A schema confirmed before date formats were checked by a round trip still loads: its dataset page names
the column whose format fails the check and tells the steward to fix it, releases still run with it, and
confirming it again (API, library) is refused with the reason until the format is fixed."""

from __future__ import annotations

import json

import pytest

from dpportal.datasets import services as dataset_services
from dpportal.datasets.models import Dataset
from mechanisms.schema import Schema, SchemaError
from tests.personas import make_dataset, run_release

# Months written as "2015-03" in a column declared at day granularity: "%Y-%m" writes a day and reads back the
# first of its month, which the round trip refuses ("does not read back the dates it writes").
MONTHS = "opened,city\n" + "".join(f"20{10 + i % 12}-{1 + i % 12:02d},{('Paris', 'Lyon')[i % 2]}\n" for i in range(40))
STORED = {
    "version": 1,
    "draft": False,
    "missing_markers": [""],
    "columns": [
        {
            "name": "opened",
            "kind": "date",
            "lower": "2010-01-01",
            "upper": "2021-12-31",
            "granularity": "day",
            "format": "%Y-%m",
            "bins": 12,
            "fill": None,
        },
        {"name": "city", "kind": "categorical", "categories": ["Paris", "Lyon"], "other": None},
    ],
}


def test_the_library_loads_a_stored_schema_and_names_the_format_that_fails():
    with pytest.raises(SchemaError, match="does not read back the dates it writes"):
        Schema.from_dict(STORED)  # a new schema: refused
    stored = Schema.from_stored(STORED)
    assert list(stored.date_problems()) == ["opened"]
    assert "does not read back the dates it writes" in stored.date_problems()["opened"]
    assert stored.to_dict()["columns"][0] == STORED["columns"][0]  # written back as stored, nothing added
    fixed = json.loads(json.dumps(STORED))
    fixed["columns"][0]["format"] = "%Y-%m-%d"
    assert Schema.from_stored(fixed).date_problems() == {}


def _stored_dataset(owner) -> Dataset:
    dataset = make_dataset(owner, text=MONTHS, schema=None, budget=("2", "0"))
    Dataset.objects.filter(pk=dataset.pk).update(schema=STORED)  # confirmed under the older rules
    dataset.refresh_from_db()
    return dataset


def test_the_dataset_page_flags_the_column_and_releases_still_run(world):
    dataset = _stored_dataset(world.owner)
    page = world.client(world.owner).get(f"/datasets/{dataset.pk}/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "fix the date format" in text and "Column &#x27;opened&#x27;" in text
    assert "does not read back the dates it writes" in text and "fix the format on the schema page" in text
    assert world.client(world.owner).get(f"/datasets/{dataset.pk}/schema/").status_code == 200
    release = run_release(dataset, world.owner, epsilon="0.5", rows=20)
    assert release.status == "done", release.error
    assert world.client(world.owner).get(f"/releases/{release.pk}/").status_code == 200


def test_a_fitting_format_shows_no_note(world):
    page = world.client(world.owner).get(f"/datasets/{world.dataset.pk}/").content.decode()
    assert "fix the date format" not in page


def test_confirming_it_again_is_refused_with_the_reason(world):
    dataset = _stored_dataset(world.owner)
    with pytest.raises(dataset_services.SchemaRejected, match="'opened'.*does not read back"):
        dataset_services.confirm_schema(dataset, dataset.confirmed_schema())
    resp = world.client(None).put(
        f"/api/datasets/{dataset.pk}/schema/",
        json.dumps(STORED),
        content_type="application/json",
        **world.api(world.owner),
    )
    assert resp.status_code == 400 and "does not read back" in resp.json()["error"]
