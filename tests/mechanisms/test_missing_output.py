"""Missing categorical values come out of a synthetic CSV as empty cells, as they went in, not as the
text "(missing)"; the evaluation reads them back as the missing category."""

from __future__ import annotations

import io

import pandas as pd

from mechanisms.evaluation import tables
from mechanisms.io import write_synthetic_csv
from mechanisms.draft import draft_schema
from mechanisms.schema import MISSING_CATEGORY
from mechanisms.source import read_raw_csv

RAW = pd.DataFrame({"city": ["Paris", "", "Lyon", "?", "Paris", ""], "n": ["1", "2", "3", "4", "5", "6"]})


def test_the_draft_declares_the_missing_category():
    col = draft_schema(RAW).column("city")
    assert MISSING_CATEGORY in col.categories and col.other == MISSING_CATEGORY


def test_missing_values_are_written_as_empty_cells_and_read_back_as_missing():
    schema = draft_schema(RAW).confirmed()
    prepared = schema.prepare(RAW)
    assert (prepared["city"] == MISSING_CATEGORY).sum() == 3  # "" and "?" are both missing
    buf = io.StringIO()
    write_synthetic_csv(prepared, buf)
    text = buf.getvalue()
    assert "(missing)" not in text
    assert [line.split(",")[0] for line in text.splitlines()[1:5]] == ["Paris", "", "Lyon", ""]
    back = tables.prepare_table(schema, read_raw_csv(io.StringIO(text)), synthetic=True)
    assert back["city"].tolist() == prepared["city"].tolist()


def test_a_category_that_merely_contains_the_word_is_left_alone():
    buf = io.StringIO()
    write_synthetic_csv(pd.DataFrame({"c": ["(missing) data", "x"]}), buf)
    assert "(missing) data" in buf.getvalue()
