"""Public schema: validation, per-record preparation, encodings, drafting."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mechanisms.draft import draft_schema
from mechanisms.schema import Column, Schema, SchemaError, SchemaMismatch


def _schema():
    return Schema(
        columns=(
            Column("age", "integer", lower=0, upper=100, bins=10, fill=0),
            Column("income", "continuous", lower=0.0, upper=1000.0, bins=4),
            Column("colour", "categorical", categories=("red", "blue", "other"), other="other"),
            Column("id", "excluded"),
        )
    )


def test_it_rejects_inverted_bounds_naming_the_column():
    with pytest.raises(SchemaError, match="'x': upper must exceed lower"):
        Column("x", "continuous", lower=5, upper=1)


def test_it_rejects_duplicate_column_names():
    with pytest.raises(SchemaError, match="duplicate"):
        Schema(columns=(Column("a", "excluded"), Column("a", "categorical", categories=("x",))))


def test_prepare_clips_out_of_bound_values_and_never_widens_the_box():
    raw = pd.DataFrame(
        {
            "age": ["150", "-3", "?"],
            "income": ["5000", "1e9", "10"],
            "colour": ["red", "green", ""],
            "id": ["1", "2", "3"],
        }
    )
    p = _schema().prepare(raw)
    assert p["age"].tolist() == [100, 0, 0]  # clipped, missing -> fill
    assert p["income"].tolist() == [1000.0, 1000.0, 10.0]
    assert p["colour"].tolist() == ["red", "other", "other"]
    assert list(p.columns) == ["age", "income", "colour"]  # excluded column dropped


def test_prepare_names_the_problem_when_data_does_not_fit():
    s = Schema(columns=(Column("c", "categorical", categories=("a",)),))
    with pytest.raises(SchemaMismatch, match="'c': 1 value\\(s\\) outside the declared categories"):
        s.prepare(pd.DataFrame({"c": ["a", "b"]}))
    with pytest.raises(SchemaMismatch, match="missing from the data"):
        s.prepare(pd.DataFrame({"d": ["a"]}))
    n = Schema(columns=(Column("x", "continuous", lower=0, upper=1),))
    with pytest.raises(SchemaMismatch, match="not numbers"):
        n.prepare(pd.DataFrame({"x": ["0.5", "abc"]}))
    with pytest.raises(SchemaMismatch, match="no 'fill' declared"):
        n.prepare(pd.DataFrame({"x": ["0.5", "NA"]}))


def test_unit_encoding_round_trips_on_public_bounds():
    s = _schema()
    p = s.prepare(
        pd.DataFrame({"age": ["20", "70"], "income": ["250", "1000"], "colour": ["blue", "red"], "id": ["a", "b"]})
    )
    u = s.to_unit(p)
    np.testing.assert_allclose(u, [[0.2, 0.25, 1], [0.7, 1.0, 0]])
    back = s.from_unit(u)
    assert back["age"].tolist() == [20, 70] and back["colour"].tolist() == ["blue", "red"]
    np.testing.assert_allclose(back["income"], [250, 1000])


def test_cell_encoding_uses_public_bins_and_decodes_inside_the_bin():
    s = _schema()
    p = s.prepare(
        pd.DataFrame(
            {
                "age": ["0", "99", "100"],
                "income": ["0", "499", "1000"],
                "colour": ["red", "blue", "other"],
                "id": ["", "", ""],
            }
        )
    )
    cells = s.to_cells(p)
    assert cells.tolist() == [[0, 0, 0], [9, 1, 1], [9, 3, 2]]
    out = s.from_cells(np.repeat(cells, 200, axis=0), np.random.default_rng(0))
    inc = out["income"].to_numpy().reshape(3, 200)
    assert inc[0].min() >= 0 and inc[0].max() <= 250 and inc[2].min() >= 750


def test_small_integer_ranges_get_one_cell_per_value():
    c = Column("k", "integer", lower=1, upper=5, bins=10)
    assert c.n_cells == 5
    s = Schema(columns=(c,))
    cells = s.to_cells(s.prepare(pd.DataFrame({"k": ["1", "3", "5"]})))
    assert cells[:, 0].tolist() == [0, 2, 4]
    dec = s.from_cells(cells, np.random.default_rng(0))
    assert dec["k"].tolist() == [1, 3, 5]


def test_json_round_trip_and_fingerprint_ignores_draft_flag():
    s = _schema()
    again = Schema.from_json(s.to_json())
    assert again == s
    assert Schema(columns=s.columns, draft=True).fingerprint() == s.fingerprint()
    with pytest.raises(SchemaError, match="not valid JSON"):
        Schema.from_json("{nope")
    with pytest.raises(SchemaError, match="unknown fields"):
        Schema.from_dict({"columns": [{"name": "a", "kind": "excluded", "colour": 1}]})


def test_draft_is_marked_draft_and_suggests_from_data():
    raw = pd.DataFrame({"n": ["1", "5", "9", "?"], "c": ["x", "y", "x", "x"], "f": ["0.5", "1.5", "2.25", "3"]})
    d = draft_schema(raw)
    assert d.draft
    assert d.column("n").kind == "integer" and d.column("n").fill == 1.0
    assert d.column("c").categories == ("x", "y")
    assert d.column("f").kind == "continuous" and d.column("f").lower <= 0.5 and d.column("f").upper >= 3


def test_decoding_integer_cells_never_moves_a_row_into_another_bin():
    # bins of width 1.6 on [1, 17]: edges are not at half-integers, the old decoder rounded across them
    for lower, upper, bins in ((1, 17, 10), (0, 100, 7), (-3, 20, 4), (17, 90, 10)):
        s = Schema(columns=(Column("k", "integer", lower=lower, upper=upper, bins=bins),))
        cells = np.repeat(np.arange(s.kept[0].n_cells), 500)[:, None]
        decoded = s.from_cells(cells, np.random.default_rng(0))
        again = s.to_cells(s.prepare(decoded.astype(str)))
        np.testing.assert_array_equal(again[:, 0], cells[:, 0])
        # and every integer of the range can come out
        assert set(decoded["k"]) == set(range(lower, upper + 1))
