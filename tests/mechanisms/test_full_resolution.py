"""Columns at full resolution: special values, per-value integer cells, log bins, codes, decimals, the
exact export, and the statistician's checks of the downloaded file (mechanisms.evaluation.fidelity)."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from mechanisms.evaluation import fidelity
from mechanisms.io import spreadsheet_safe, write_synthetic_csv
from mechanisms.noise import Noise
from mechanisms.runner import build, run
from mechanisms.draft import draft_schema, rare_categories, resolvable_cells
from mechanisms.schema import MISSING_CATEGORY, Column, Schema, SchemaError
from mechanisms.source import TableSource, read_raw_csv


def census(n: int = 4000, seed: int = 7) -> pd.DataFrame:
    """A census-like extract: zero-heavy money, weeks worked with a point mass at 0, an industry code,
    a label starting with '-', '?' as the missing marker."""
    rng = np.random.default_rng(seed)
    gains = np.where(rng.random(n) < 0.9, 0, np.rint(rng.lognormal(8, 1, n)).clip(1, 99_999)).astype(int)
    weeks = np.where(rng.random(n) < 0.45, 0, rng.integers(1, 53, n))
    industry = rng.integers(0, 52, n)
    income = np.where(gains > 5000, "50000+", "- 50000")
    worker = rng.choice(["Private", "Self", "?"], n, p=[0.7, 0.2, 0.1])
    weight = (rng.lognormal(7, 0.6, n)).round(2)
    return pd.DataFrame(
        {
            "capital gains": gains.astype(str),
            "weeks worked": weeks.astype(str),
            "industry code": industry.astype(str),
            "worker": worker,
            "weight": weight.astype(str),
            "income": income,
        }
    )


RAW = census()


def exported(schema: Schema, frame: pd.DataFrame) -> pd.DataFrame:
    buf = io.StringIO()
    write_synthetic_csv(frame, buf, schema)
    buf.seek(0)
    return read_raw_csv(buf, skipinitialspace=False)


# -- the draft suggests a full-resolution column model ---------------------------------------------


def test_the_draft_suggests_per_value_cells_codes_special_values_log_bins_decimals_and_the_marker():
    s = draft_schema(census(12_000))  # 12,000 rows x 6 columns: up to 141 cells per numeric column
    weeks, gains, code, weight = (s.column(n) for n in ("weeks worked", "capital gains", "industry code", "weight"))
    assert weeks.kind == "integer" and weeks.n_cells == int(weeks.upper - weeks.lower) + 1  # one cell per value
    assert code.kind == "categorical" and code.categories[:3] == ("0", "1", "2") and len(code.categories) == 52
    assert gains.special == (0,) and gains.scale == "log" and gains.n_cells == gains.n_bins + 1
    assert weight.kind == "continuous" and weight.decimals == 2
    assert s.missing_output == "?" and s.column("worker").other == MISSING_CATEGORY


def test_rare_categories_are_flagged_with_their_threshold():
    raw = pd.DataFrame({"job": ["a"] * 30 + ["b"] * 3 + ["c"], "x": ["1"] * 34})
    assert rare_categories(raw, draft_schema(raw), k=5) == {"job": ["b", "c"]}


def test_small_tables_get_no_more_cells_than_a_reference_release_resolves():
    weeks = draft_schema(census(1000)).column("weeks worked")
    assert weeks.n_bins == resolvable_cells(1000, 6) == 12  # not one per value: 61 cells of ~16 rows
    assert weeks.special[0] == 0  # its point mass at 0 stays exact


# -- encoding -----------------------------------------------------------------------------------------


def test_special_values_are_cells_of_their_own_and_come_back_exactly():
    col = Column("g", "integer", lower=0, upper=100_000, bins=20, special=(0, 99_999), scale="log")
    schema = Schema(columns=(col,))
    values = np.array([0, 0, 1, 7, 99_999, 50_000, 99_998, 100_000], dtype=float)
    cells = schema.to_cells(pd.DataFrame({"g": values}))[:, 0]
    assert cells[0] == cells[1] == col.n_bins and cells[4] == col.n_bins + 1
    back = schema.from_cells(np.repeat(cells, 500)[:, None], np.random.default_rng(0))["g"].to_numpy()
    assert (back[:1000] == 0).all() and (back[2000:2500] == 99_999).all()
    regular = np.repeat(cells, 500) < col.n_bins
    assert not np.isin(back[regular], (0, 99_999)).any()  # a bin never decodes to a special value
    assert (schema.to_cells(pd.DataFrame({"g": back}))[:, 0] == np.repeat(cells, 500)).all()


def test_integer_log_bins_each_hold_integers_and_decoding_stays_in_the_cell():
    col = Column("g", "integer", lower=0, upper=1_000_000, bins=30, special=(0,), scale="log")
    edges = col.bin_edges()
    assert (np.diff(np.ceil(edges)) >= 1).all() and edges[0] == -0.5 and edges[-1] == 1_000_000.5
    widths = np.diff(edges)
    assert widths[-1] > 100 * widths[1]  # cells grow geometrically
    schema = Schema(columns=(col,))
    cells = np.arange(col.n_cells)[:, None].repeat(200, axis=0)
    back = schema.from_cells(cells, np.random.default_rng(1))
    assert (schema.to_cells(back)[:, 0] == cells[:, 0]).all()


def test_log_scale_unit_encoding_round_trips_and_straddles_zero():
    col = Column("bill", "continuous", lower=-500_000, upper=1_000_000, bins=20, scale="log")
    x = np.array([-500_000, -1234.5, 0.0, 17.25, 80_000, 1_000_000])
    u = col.unit_transform(x)
    assert (np.diff(u) > 0).all() and u[0] == 0 and u[-1] == pytest.approx(1)
    assert np.allclose(col.unit_inverse(u), x, rtol=1e-9, atol=1e-6)


@pytest.mark.parametrize(
    "bad, message",
    [
        (dict(special=(5,), upper=4), "outside"),
        (dict(special=(1.5,)), "integers"),
        (dict(special=(1, 1)), "unique"),
        (dict(scale="cubic"), "scale"),
        (dict(decimals=2), "continuous columns"),
    ],
)
def test_a_bad_numeric_model_is_refused_naming_it(bad, message):
    kw = dict(name="x", kind="integer", lower=0, upper=10) | bad
    with pytest.raises(SchemaError, match=message):
        Column(**kw)


def test_the_schema_json_round_trips_the_new_fields_and_old_schemas_keep_their_fingerprint():
    s = draft_schema(RAW).confirmed()
    assert Schema.from_json(s.to_json()) == s
    plain = Schema(columns=(Column("x", "integer", lower=0, upper=5),))
    assert "special" not in plain.to_json() and "missing_output" not in plain.to_json()


# -- the exported file -----------------------------------------------------------------------------


def test_the_export_writes_labels_verbatim_missing_as_uploaded_and_numbers_as_declared():
    schema = draft_schema(RAW).confirmed()
    out = exported(schema, schema.prepare(RAW))
    assert set(out["income"]) == {"- 50000", "50000+"}
    assert (out["worker"] == "?").mean() == pytest.approx((RAW["worker"] == "?").mean())
    assert out["weight"].str.fullmatch(r"\d+(\.\d{1,2})?").all()
    assert out["capital gains"].str.fullmatch(r"\d+").all()
    rep = fidelity.report(schema, RAW, out, RAW)
    assert rep["synthetic"]["foreign_labels"]["share"] == 0


def test_the_fidelity_check_catches_a_formula_guard_rewriting_labels():
    schema = draft_schema(RAW).confirmed()
    guarded = spreadsheet_safe(exported(schema, schema.prepare(RAW)), schema)
    rep = fidelity.report(schema, RAW, guarded, RAW)
    assert rep["synthetic"]["foreign_labels"]["columns"]["income"]["examples"] == ["'- 50000"]


# -- a release at full resolution passes a statistician's first checks ----------------------------


@pytest.fixture(scope="module")
def released():
    raw = census(6000, seed=11)
    reference, train = raw.iloc[:3000].reset_index(drop=True), raw.iloc[3000:].reset_index(drop=True)
    schema = draft_schema(train).confirmed()
    mech = build("mst", schema, epsilon=1.0, delta=1e-5, noise=Noise.seeded(3), n=len(train))
    rel = run(mech, TableSource.from_frame(schema, train), len(train))
    return schema, reference, train, exported(schema, rel.synthetic)


def test_mst_at_full_resolution_keeps_point_masses_means_and_codes(released):
    schema, reference, train, synthetic = released
    rep = fidelity.report(schema, reference, synthetic, train)
    syn, floor = rep["synthetic"], rep["floor"]
    # This seed measured: special shares 0.009 off, worst mean 0.16, 1-way TVD 0.072 against a floor of 0.040
    # (3,000 real rows). Goals: shares within 0.02, means within 0.5, 1-way within 2.5x the floor.
    assert syn["foreign_labels"]["share"] == 0
    assert syn["special_share_error"] < 0.02
    assert syn["mean_error_worst"]["value"] < 0.5
    assert syn["tvd_1way"] < 2.5 * floor["tvd_1way"]
    gains = next(n for n in rep["numeric"] if n["name"] == "capital gains")
    assert abs(gains["synthetic"]["shares"]["0"] - gains["real"]["shares"]["0"]) < 0.02


def test_the_coarse_column_model_fails_the_same_checks(released):
    """The checks can fail: the former model (10 equal-width bins, no special value) is caught."""
    import dataclasses

    schema, reference, train, _ = released
    coarse = Schema(
        columns=tuple(
            dataclasses.replace(c, bins=10, special=(), scale="linear", decimals=None) if c.is_numeric else c
            for c in schema.columns
        ),
        missing_output="?",
    )
    mech = build("mst", coarse, epsilon=1.0, delta=1e-5, noise=Noise.seeded(3), n=len(train))
    synthetic = exported(coarse, run(mech, TableSource.from_frame(coarse, train), len(train)).synthetic)
    syn = fidelity.report(schema, reference, synthetic, train)["synthetic"]
    assert syn["special_share_error"] > 0.2 and syn["mean_error_worst"]["value"] > 1


def test_the_floor_of_identical_tables_is_zero_and_the_worst_column_is_named():
    schema = draft_schema(RAW).confirmed()
    shifted = RAW.copy()
    shifted["weeks worked"] = "52"
    rep = fidelity.report(schema, RAW, shifted, RAW)
    assert rep["floor"]["tvd_1way"] == 0 and rep["floor"]["unseen_pair_rows"] == 0
    assert rep["worst_column"]["column"] == "weeks worked" and rep["worst_column"]["far_off"]


# -- dates ---------------------------------------------------------------------------------------------


def dated(n: int = 600, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    day = pd.to_datetime("2015-01-01") + pd.to_timedelta(rng.integers(0, 3000, n), unit="D")
    stamp = day + pd.to_timedelta(rng.integers(0, 86_400, n), unit="s")
    return pd.DataFrame(
        {
            "opened": day.strftime("%d/%m/%Y"),
            "seen": stamp.strftime("%Y-%m-%d %H:%M:%S"),
            "kind": rng.choice(["a", "b"], n),
        }
    )


def test_dates_are_a_kind_with_iso_bounds_a_granularity_and_the_upload_format():
    s = draft_schema(dated())
    d = s.to_dict()["columns"][0]
    assert d == {
        "name": "opened",
        "kind": "date",
        "lower": "2015-01-01",
        "upper": "2023-12-31",
        "granularity": "day",
        "format": "%d/%m/%Y",
        "bins": 20,
        "fill": None,
    }  # bounds widened to whole years
    assert s.to_dict()["columns"][1]["granularity"] == "second" and Schema.from_json(s.to_json()) == s


def test_synthetic_dates_are_written_in_the_upload_format_within_the_bounds():
    raw = dated()
    schema = draft_schema(raw).confirmed()
    mech = build("mst", schema, epsilon=1.0, delta=1e-5, noise=Noise.seeded(2), n=len(raw))
    out = exported(schema, run(mech, TableSource.from_frame(schema, raw), 300).synthetic)
    opened = pd.to_datetime(out["opened"], format="%d/%m/%Y", errors="raise")
    assert opened.min() >= pd.Timestamp("2015-01-01") and opened.max() <= pd.Timestamp("2023-12-31")
    assert out["seen"].str.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d").all()
    assert fidelity.report(schema, raw, out, raw)["synthetic"]["foreign_labels"]["share"] == 0


@pytest.mark.parametrize(
    "column, message",
    [
        ({"lower": "2020-13-01"}, "not an ISO date"),
        ({"granularity": "fortnight"}, "granularity must be one of"),
        ({"format": "no percent"}, "strftime pattern"),
        ({"upper": "2019-01-01"}, "upper must exceed lower"),
    ],
)
def test_a_bad_date_column_is_refused_naming_it(column, message):
    d = {
        "name": "d",
        "kind": "date",
        "lower": "2020-01-01",
        "upper": "2024-12-31",
        "granularity": "day",
        "format": "%Y-%m-%d",
    } | column
    with pytest.raises(SchemaError, match=message):
        Schema.from_dict({"columns": [d]})


def test_a_value_not_in_the_date_format_is_named():
    schema = Schema.from_dict(
        {
            "columns": [
                {
                    "name": "d",
                    "kind": "date",
                    "lower": "2020-01-01",
                    "upper": "2024-12-31",
                    "granularity": "day",
                    "format": "%Y-%m-%d",
                }
            ]
        }
    )
    with pytest.raises(ValueError, match=r"not dates in the format '%Y-%m-%d' \(e.g. '31/12/2021'\)"):
        schema.prepare(pd.DataFrame({"d": ["2021-01-01", "31/12/2021"]}))


def test_a_step_is_suggested_for_round_amounts_and_the_output_keeps_it():
    rng = np.random.default_rng(5)
    limits = (rng.integers(1, 80, 5000) * 10_000).astype(str)
    limits[0] = "327680"  # one stray entry does not stop the suggestion
    raw = pd.DataFrame({"limit": limits, "sex": rng.choice(["f", "m"], 5000)})
    schema = draft_schema(raw).confirmed()
    col = schema.column("limit")
    assert col.step == 10_000 and Schema.from_json(schema.to_json()) == schema
    mech = build("mst", schema, epsilon=1.0, delta=1e-5, noise=Noise.seeded(6), n=len(raw))
    out = exported(schema, run(mech, TableSource.from_frame(schema, raw), 2000).synthetic)
    assert (out["limit"].astype(int) % 10_000 == 0).all()
    one_cell_per_step = Column("x", "integer", lower=0, upper=100_000, bins=11, step=10_000)
    assert one_cell_per_step.n_cells == 11 and one_cell_per_step.cell_labels()[1] == "10k"
