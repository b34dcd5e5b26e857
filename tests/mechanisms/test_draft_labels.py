"""Labels stay verbatim in drafts: a missing marker that a file uses as a category (a census extract's "NA"
code beside its "?" for missing) is suggested as a category, and missing cells map to the missing
category, never to the column's "other" category."""

from __future__ import annotations

import pandas as pd

from mechanisms.draft import draft_schema
from mechanisms.schema import MISSING_CATEGORY, Column, Schema

MARKERS = ("", "?", "NA")


def census_like() -> pd.DataFrame:
    """400 rows: "?" is the file's missing marker (two columns), "NA" a code of hispanic origin (76 rows)."""
    n = 400
    hisp = ["All other"] * 200 + ["Mexican"] * 100 + ["NA"] * 76 + ["Cuban"] * 24
    state = ["?"] * 74 + ["Utah"] * 200 + ["Ohio"] * 120 + ["Wyoming"] * 6
    migration = ["?"] * 150 + ["Nonmover"] * 250
    weeks = ["NA"] * 4 + [str(i % 53) for i in range(n - 4)]  # a number column: "NA" stays missing there
    return pd.DataFrame({"hispanic_origin": hisp, "state_prev": state, "migration": migration, "weeks": weeks})


def test_a_second_marker_among_a_text_columns_values_is_a_category_and_the_files_marker_is_missing():
    raw = census_like()
    draft = draft_schema(raw, missing_markers=MARKERS)
    hisp = draft.column("hispanic_origin")
    assert "NA" in hisp.categories and MISSING_CATEGORY not in hisp.categories and hisp.other is None
    state = draft.column("state_prev")
    assert MISSING_CATEGORY in state.categories and "?" not in state.categories
    weeks = draft.column("weeks")
    assert weeks.kind == "integer" and weeks.fill is not None  # "NA" in a number column: missing
    assert draft.missing_output == "?"  # the marker the file uses for missing values
    prepared = draft.confirmed().prepare(raw)
    assert (prepared["hispanic_origin"] == "NA").sum() == 76  # verbatim, not the missing category
    assert (prepared["state_prev"] == MISSING_CATEGORY).sum() == 74


def test_a_file_that_writes_missing_one_way_reads_that_marker_as_missing():
    raw = pd.DataFrame({"job": ["clerk", "NA", "nurse", "clerk"] * 50, "city": ["Paris", "NA", "Lyon", "Nice"] * 50})
    draft = draft_schema(raw, missing_markers=MARKERS)
    assert "NA" not in draft.column("job").categories and MISSING_CATEGORY in draft.column("job").categories
    assert draft.missing_output == "NA"


def test_missing_cells_map_to_the_missing_category_when_declared_and_a_declared_marker_stays_a_label():
    col = Column("state", "categorical", categories=("Ohio", "NA", MISSING_CATEGORY, "(other)"), other="(other)")
    schema = Schema(columns=(col,), missing_markers=MARKERS)
    raw = pd.DataFrame({"state": ["Ohio", "?", "", "NA", "Wyoming"]})
    assert schema.prepare(raw)["state"].tolist() == ["Ohio", MISSING_CATEGORY, MISSING_CATEGORY, "NA", "(other)"]
    without = Schema(columns=(Column("state", "categorical", categories=("Ohio", "(other)"), other="(other)"),))
    assert without.prepare(raw)["state"].tolist() == ["Ohio", "(other)", "(other)", "(other)", "(other)"]
