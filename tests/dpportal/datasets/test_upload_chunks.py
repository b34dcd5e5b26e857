"""Big uploads in bounded memory: the draft reads a bounded sample, the schema-fit check reads the file in
chunks and agrees with the one-shot reading, and the limits answer with a clear message."""

from __future__ import annotations

import numpy as np
import pytest

from dpportal.datasets import services
from dpportal.datasets.models import Dataset
from dpportal.datasets.services import SchemaRejected, check_chunk_rows, confirm_schema
from dpportal.datasets.upload import draft_rows, store_upload
from dpportal.serve import MULTIPART_OVERHEAD, options
from mechanisms.schema import Column, Schema
from mechanisms.source import read_raw_csv

from tests.data import csv_file

SCHEMA = Schema(
    columns=(
        Column("age", "integer", lower=0, upper=100, bins=10, fill=40),
        Column("city", "categorical", categories=("Lyon", "Nice", "Paris")),
    ),
    missing_markers=("", "?"),
)


def _text(n: int, last_city: str = "Nice") -> str:
    rng = np.random.default_rng(5)
    ages = rng.integers(0, 120, n)  # over the bound: clipped, not refused
    cities = rng.choice(["Paris", "Lyon", " Paris", "Nice"], n)
    cities[-1] = last_city
    return "age,city\n" + "".join(f"{a},{c}\n" for a, c in zip(ages, cities))


def _upload(owner, text: str) -> Dataset:
    return store_upload(csv_file(text), owner=owner, name="chunks", markers=["", "?"])


def test_a_file_of_several_chunks_is_checked_in_chunks_and_gives_the_one_shot_dataset(personas, settings, monkeypatch):
    monkeypatch.setattr(services, "CHECK_CHUNK_CELLS", 2 * 37)  # 37 rows a chunk: 1,000 rows in 28 chunks
    settings.DPPORTAL_DRAFT_SAMPLE_CELLS = 2 * 50
    assert check_chunk_rows(2) == 37 and draft_rows(2) == 50
    d = _upload(personas.owner, _text(1000))
    assert d.n_rows == 1000
    source = d.source(SCHEMA)
    calls = []
    real = type(source).check
    monkeypatch.setattr(type(source), "check", lambda self, size, **kw: calls.append(size) or real(self, size, **kw))
    confirm_schema(d, SCHEMA)
    assert calls == [37]
    one_shot = SCHEMA.to_cells(SCHEMA.prepare(read_raw_csv(d.raw_path())))
    np.testing.assert_array_equal(d.source(SCHEMA).cells(37), one_shot)


def test_a_bad_value_in_the_last_chunk_is_refused_with_the_one_shot_message(personas, monkeypatch):
    monkeypatch.setattr(services, "CHECK_CHUNK_CELLS", 2 * 37)
    d = _upload(personas.owner, _text(1000, last_city="Rome"))
    with pytest.raises(SchemaRejected) as chunked:
        confirm_schema(d, SCHEMA)
    monkeypatch.setattr(services, "CHECK_CHUNK_CELLS", 10**9)  # the whole file in one chunk
    with pytest.raises(SchemaRejected) as whole:
        confirm_schema(d, SCHEMA)
    assert str(chunked.value) == str(whole.value)
    assert "column 'city': 1 value(s) outside the declared categories (e.g. 'Rome')" in str(chunked.value)


def test_the_draft_reads_a_bounded_prefix(personas, settings):
    """A category seen only after the sample is not in the draft (the draft is suggestions; the fit check
    reads every row): the web process never holds more than the sample's cells."""
    settings.DPPORTAL_DRAFT_SAMPLE_CELLS = 2 * 200
    d = _upload(personas.owner, _text(1000, last_city="Rome"))
    cats = {c["name"]: c.get("categories") for c in d.schema_draft["columns"]}
    assert "Paris" in cats["city"] and "Rome" not in cats["city"]
    settings.DPPORTAL_DRAFT_SAMPLE_CELLS = 2 * 1000
    d = _upload(personas.owner, _text(1000, last_city="Rome"))
    assert "Rome" in {c["name"]: c.get("categories") for c in d.schema_draft["columns"]}["city"]


def test_the_limits_are_10m_rows_and_5_gib_in_django_and_waitress(settings):
    assert settings.DPPORTAL_MAX_ROWS == 10_000_000
    assert settings.DPPORTAL_MAX_UPLOAD_BYTES == 5 * 2**30
    assert options(settings.DPPORTAL_MAX_UPLOAD_BYTES)["max_request_body_size"] == 5 * 2**30 + MULTIPART_OVERHEAD


def test_the_api_names_the_row_limit_with_a_400(world, settings):
    settings.DPPORTAL_MAX_ROWS = 999
    api = world.client(None).post("/api/datasets/", {"file": csv_file(_text(1000))}, **world.api(world.owner))
    assert api.status_code == 400
    assert "more than 999 data rows (the row limit)" in api.json()["error"]
