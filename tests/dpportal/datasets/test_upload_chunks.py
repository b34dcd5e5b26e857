"""Big uploads in bounded memory: the draft reads a bounded sample, the schema-fit check reads the file in
chunks and agrees with the one-shot reading, and the limits answer with a clear message."""

from __future__ import annotations

import csv
import io
import re

import numpy as np
import pytest

from dpportal.datasets import services
from dpportal.datasets.models import Dataset
from dpportal.datasets.services import SchemaRejected, check_chunk_rows, confirm_schema
from dpportal.datasets import upload
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


def test_the_draft_reads_a_bounded_uniform_sample(personas, settings, monkeypatch):
    """The draft sees at most the sample's rows, drawn from the whole file (a category held only by the second
    half of the rows is suggested; a prefix would never see it), and only suggestions come of it."""
    settings.DPPORTAL_DRAFT_SAMPLE_CELLS = 2 * 200
    seen = []
    real = upload.draft_schema
    monkeypatch.setattr(upload, "draft_schema", lambda raw, **kw: seen.append(raw.copy()) or real(raw, **kw))
    text = _text(1000)
    lines = text.splitlines(keepends=True)
    text = "".join(lines[:501] + [line.replace(line.split(",")[1].strip(), "Rome") for line in lines[501:]])
    d = _upload(personas.owner, text)
    assert len(seen[0]) == 200 and list(seen[0].columns) == ["age", "city"]
    assert "Rome" in {c["name"]: c.get("categories") for c in d.schema_draft["columns"]}["city"]
    assert 60 < (seen[0]["city"] == "Rome").sum() < 140  # 100 expected (hypergeometric sd 6.3)


def _records(n: int) -> str:
    return "".join(f"{i},x\n" for i in range(n))


@pytest.mark.parametrize("broken", [False, True])
def test_the_sample_is_uniform_over_the_whole_file(broken, monkeypatch):
    """Every record is kept with probability k/N: 300 samples of 100 of 5,000 records put 3,000 draws in each
    tenth of the file (sd 52; allowed 250). A prefix (the first k records) is caught."""
    if broken:
        monkeypatch.setattr(upload.math, "log1p", lambda x: -1e-300)  # skips to the end: the first k kept
    tenths = np.zeros(10, dtype=int)
    limits = upload.Limits(10**9, 10**6, 10, 100)
    for seed in range(300):
        reader = csv.reader(io.StringIO(_records(5000)))
        counts, sample = upload._sample_and_count(reader, 2, limits, 100, np.random.default_rng(seed))
        rows = [line.split(",") for line in sample.decode().splitlines()]
        assert counts == {2: 5000} and len({r[0] for r in rows}) == 100
        tenths += np.bincount([int(r[0]) // 500 for r in rows], minlength=10)
    uniform = bool(np.all(np.abs(tenths - 3000) < 250))
    assert uniform is not broken, tenths


class _SortedDraws:
    """A broken generator: its draws come sorted, so the first records get the smallest keys (a prefix)."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def random(self, size=None):
        return np.sort(self.rng.random(size)) if size is not None else self.rng.random()


@pytest.mark.parametrize("broken", [False, True])
def test_the_unquoted_scan_samples_uniformly_and_counts_like_the_csv_module(broken, tmp_path):
    """The numpy pass over a file without quotes: the same tally as the csv module, and each record kept with
    probability k/N (300 samples of 100 of 5,000 records: 3,000 draws a tenth, sd 52, allowed 250); sorted
    keys (a prefix) are caught."""
    path = tmp_path / "t.csv"
    path.write_text("i,x\n" + _records(5000).replace("\n", "\r\n", 7) + "\n\n")  # CRLF lines and blank ones
    limits = upload.Limits(10**9, 10**6, 10, 100)
    tenths = np.zeros(10, dtype=int)
    for seed in range(300):
        rng = _SortedDraws(seed) if broken else np.random.default_rng(seed)
        counts, sample = upload._scan_unquoted(path, "utf-8-sig", ",", 2, limits, 100, rng)
        rows = [line.split(",") for line in sample.decode().splitlines()]
        assert counts == {2: 5000} and len({r[0] for r in rows}) == 100 and all(r[1] == "x" for r in rows)
        tenths += np.bincount([int(r[0]) // 500 for r in rows], minlength=10)
    uniform = bool(np.all(np.abs(tenths - 3000) < 250))
    assert uniform is not broken, tenths


def test_the_unquoted_scan_hands_what_only_the_csv_module_can_tell_to_it(tmp_path):
    path = tmp_path / "t.csv"
    limits = upload.Limits(10**9, 10**6, 10, 5)
    for text in ('a,b\n1,"2"\n', "a,b\n1,2\r3,4\n", "a,b\n1,123456\n"):
        path.write_text(text)
        assert upload._scan_unquoted(path, "utf-8-sig", ",", 2, limits, 10, None) is None, text


@pytest.mark.parametrize("quoted", [False, True])
@pytest.mark.parametrize(
    "tail, message",
    [
        ("1,Nice,3\n", "row 700 (line 701) has 3 fields, the header has 2"),
        ("1," + "N" * 30 + "\n", "row 700 (line 701) has a field longer than the limit of 20 characters"),
        ('1,"Nice\n', "row 700 (line 704) has a field longer than the limit of 20 characters"),
    ],
)
def test_a_bad_row_past_the_sample_is_named(personas, settings, tail, message, quoted):
    """Past the draft's sample the records are tallied in C (csv module, quoted files) or numpy (unquoted): an
    irregular one is named by the record-by-record reading, with its row and line."""
    settings.DPPORTAL_DRAFT_SAMPLE_CELLS = 2 * 10
    text = "age,city\n" + ('1,"Nice"\n' if quoted else "1,Nice\n") * 699 + tail + "2,Lyon\n" * 300
    with pytest.raises(upload.UploadError, match=re.escape(message)):
        store_upload(
            csv_file(text), owner=personas.owner, name="x", markers=[""], limits=upload.Limits(10**7, 5000, 5, 20)
        )
    assert Dataset.objects.count() == 0


def test_the_row_limit_past_the_sample_and_blank_lines(personas, settings):
    settings.DPPORTAL_DRAFT_SAMPLE_CELLS = 2 * 10
    limits = upload.Limits(10**7, 1000, 5, 20)
    with pytest.raises(upload.UploadError, match="more than 1,000 data rows"):
        store_upload(csv_file("a,b\n" + "1,2\n" * 1001), owner=personas.owner, name="x", markers=[""], limits=limits)
    d = store_upload(csv_file("a,b\n" + "1,2\n\n" * 1000), owner=personas.owner, name="x", markers=[""], limits=limits)
    assert d.n_rows == 1000 and d.schema_draft is not None


def test_the_limits_are_10m_rows_and_5_gib_in_django_and_waitress(settings):
    assert settings.DPPORTAL_MAX_ROWS == 10_000_000
    assert settings.DPPORTAL_MAX_UPLOAD_BYTES == 5 * 2**30
    assert options(settings.DPPORTAL_MAX_UPLOAD_BYTES)["max_request_body_size"] == 5 * 2**30 + MULTIPART_OVERHEAD


def test_the_api_names_the_row_limit_with_a_400(world, settings):
    settings.DPPORTAL_MAX_ROWS = 999
    api = world.client(None).post("/api/datasets/", {"file": csv_file(_text(1000))}, **world.api(world.owner))
    assert api.status_code == 400
    assert "more than 999 data rows (the row limit)" in api.json()["error"]
