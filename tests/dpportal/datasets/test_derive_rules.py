"""Derived columns on the schema page: suggested by the draft, refused with the rows the file breaks,
confirmed, and exact in the released file (dates written in the upload's format)."""

from __future__ import annotations

import io
import json

import pandas as pd

from dpportal.datasets.models import Dataset
from tests.data import csv_file
from tests.personas import make_dataset, run_release
from tests.samples import SAMPLES

HEAD = (SAMPLES / "hospital.csv").read_text().splitlines()[:301]  # the header and 300 stays
TEXT = "\n".join(HEAD) + "\n"
RULE = '[{"derive": {"column": "discharged", "from": "admitted + stay_days", "unit": "day"}}]'


def _form(overrides: dict) -> dict:
    post = {"markers": "", "empty_is_missing": "1", "public_ack": "1"}
    for i, name in enumerate(("admitted", "discharged")):
        post |= {
            f"col-{i}-kind": "date",
            f"col-{i}-lower": "2019-01-01",
            f"col-{i}-upper": "2024-12-31",
            f"col-{i}-granularity": "day",
            f"col-{i}-format": "%d/%m/%Y",
            f"col-{i}-bins": "20",
        }
    post |= {
        "col-2-kind": "categorical",
        "col-2-categories": "Cardiology\nGeneral medicine\nMaternity\nOrthopaedics\nSurgery",
        "col-3-kind": "integer",
        "col-3-lower": "0",
        "col-3-upper": "15",
        "col-3-bins": "16",
    }
    return post | overrides


def test_the_draft_suggests_the_identity_and_the_file_is_checked_against_it(world):
    d = make_dataset(world.owner, text=TEXT, schema=None, budget=None)
    url = f"/datasets/{d.pk}/schema/"
    client = world.client(world.owner)
    page = client.get(url).content.decode()
    card = page.split('id="rules-card"')[1].split("</details>")[0]
    assert "admitted + stay_days" in card and "suggested from data" in card
    stays = pd.read_csv(io.StringIO(TEXT))["stay_days"]
    wrong = '[{"derive": {"column": "discharged", "from": "admitted + 1"}}]'
    text = client.post(url, _form({"rules": wrong})).content.decode()
    assert f"the file breaks rule discharged = admitted + 1 in {int((stays != 1).sum())} row(s)" in text
    assert Dataset.objects.get(pk=d.pk).schema is None
    assert client.post(url, _form({"rules": RULE})).status_code == 302
    d.refresh_from_db()
    assert d.schema["rules"] == [{"derive": {"column": "discharged", "from": "admitted + stay_days", "unit": "day"}}]


def test_a_release_writes_the_computed_dates_exactly(world):
    d = make_dataset(world.owner, text=TEXT, schema=None, budget=("2", "1e-5"))
    assert world.client(world.owner).post(f"/datasets/{d.pk}/schema/", _form({"rules": RULE})).status_code == 302
    release = run_release(Dataset.objects.get(pk=d.pk), world.owner, rows=200)
    assert release.status == "done", release.error
    body = b"".join(world.client(world.owner).get(f"/releases/{release.pk}/synthetic.csv").streaming_content)
    out = pd.read_csv(io.BytesIO(body), dtype=str)
    days = pd.to_datetime(out["discharged"], format="%d/%m/%Y") - pd.to_datetime(out["admitted"], format="%d/%m/%Y")
    assert len(out) == 200 and (days.dt.days == out["stay_days"].astype(int)).all()


def test_the_rule_travels_with_the_schema_export_and_import(world):
    client = world.client(world.owner)
    d = make_dataset(world.owner, text=TEXT, schema=None, budget=None)
    assert client.post(f"/datasets/{d.pk}/schema/", _form({"rules": RULE})).status_code == 302
    exported = json.loads(client.get(f"/datasets/{d.pk}/schema.json").content)
    other = make_dataset(world.owner, text=TEXT, schema=None, budget=None)
    post = {"schema_file": csv_file(json.dumps(exported), "s.json")}
    assert client.post(f"/datasets/{other.pk}/schema/import/", post).status_code == 302
    other.refresh_from_db()
    assert other.schema_draft["rules"] == exported["rules"] == json.loads(RULE)
    page = client.get(f"/datasets/{other.pk}/schema/").content.decode()
    card = page.split('id="rules-card"')[1].split("</details>")[0]
    assert "admitted + stay_days" in card and "suggested from data" not in card  # imported, not from data
