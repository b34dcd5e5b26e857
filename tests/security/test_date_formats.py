"""Hostile date formats: every one is refused with its reason (400 through the API, the form shown
again with the error on the web page), never a 500, because a format is accepted only after a round
trip (known dates written with it and read back identical at the column's granularity)."""

from __future__ import annotations

import html
import json

import pytest

from mechanisms import dates
from mechanisms.schema import Schema, SchemaError
from tests.personas import make_dataset

DATED = "opened,city\n" + "".join(f"{1 + i % 28:02d}/0{1 + i % 9}/20{10 + i % 12},Paris\n" for i in range(30))

HOSTILE = {
    "a directive repeated 20 times": ("%Y" * 20, "cannot be read back"),
    "a glibc padding flag": ("%-d/%m/%Y", "cannot be read back"),
    "a stray percent": ("%Y%", "cannot be read back"),
    "an ISO year without its week": ("%G-%m-%d", "cannot be read back"),
    "a week number without a weekday": ("%U-%Y", "cannot be read back"),
    "a NUL": ("%d/%m/%Y\x00", "control character"),
    "a formula": ("=%d/%m/%Y", "formula"),
    "a format that drops the day": ("%m/%Y", "does not read back the dates it writes"),
    "a two-digit year over a century": ("%d/%m/%y", "does not read back the dates it writes"),
}


def schema(fmt: str, lower: str = "2000-01-01", upper: str = "2030-12-31") -> dict:
    return {
        "columns": [
            {"name": "opened", "kind": "date", "lower": lower, "upper": upper, "granularity": "day", "format": fmt},
            {"name": "city", "kind": "categorical", "categories": ["Paris"]},
        ]
    }


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_the_library_refuses_a_format_that_does_not_round_trip(case):
    fmt, message = HOSTILE[case]
    lower = "1950-01-01" if "two-digit" in case else "2000-01-01"
    with pytest.raises(SchemaError, match=message):
        Schema.from_dict(schema(fmt, lower=lower))


def test_formats_that_round_trip_are_accepted():
    for fmt, granularity in dates.DRAFT_FORMATS:
        assert dates.check_format(fmt, granularity) == fmt
    assert dates.check_format("%b %d %Y") and dates.check_format("%Y-%j")
    assert dates.check_format(
        "%d/%m/%y", "day", dates.to_units("1990-01-01", "day"), dates.to_units("2030-01-01", "day")
    )


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_the_api_answers_400_naming_the_format(world, case):
    fmt, message = HOSTILE[case]
    ds = make_dataset(world.owner, text=DATED, schema=None, budget=None)
    lower = "1950-01-01" if "two-digit" in case else "2000-01-01"
    resp = world.client(None).put(
        f"/api/datasets/{ds.pk}/schema/",
        json.dumps(schema(fmt, lower=lower)),
        content_type="application/json",
        **world.api(world.owner),
    )
    assert resp.status_code == 400, (resp.status_code, resp.content[:300])
    assert message in resp.json()["error"] and "opened" in resp.json()["error"]
    ds.refresh_from_db()
    assert ds.schema_confirmed_at is None


@pytest.mark.parametrize("case", ["a directive repeated 20 times", "a glibc padding flag", "a NUL", "a formula"])
def test_the_schema_page_shows_the_reason(world, case):
    fmt, message = HOSTILE[case]
    ds = make_dataset(world.owner, text=DATED, schema=None, budget=None)
    post = {
        "markers": "",
        "empty_is_missing": "1",
        "public_ack": "1",
        "col-0-kind": "date",
        "col-0-lower": "2000-01-01",
        "col-0-upper": "2030-12-31",
        "col-0-granularity": "day",
        "col-0-format": fmt,
        "col-1-kind": "categorical",
        "col-1-categories": "Paris",
    }
    resp = world.client(world.owner).post(f"/datasets/{ds.pk}/schema/", post)
    assert resp.status_code == 200, resp.status_code  # the form again, with its error
    assert message in html.unescape(resp.content.decode())
    ds.refresh_from_db()
    assert ds.schema_confirmed_at is None
