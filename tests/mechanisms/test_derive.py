"""Derived columns: declared identities parsed safely, refused when they cannot hold, checked against the
file, left out of the model and computed exactly in every synthetic row (samples/hospital.csv)."""

from __future__ import annotations

import hashlib
import importlib.util

import numpy as np
import pandas as pd
import pytest

from mechanisms import derive, registry
from mechanisms.draft import draft_schema
from mechanisms.io import export_frame
from mechanisms.noise import Noise
from mechanisms.rules import rule_violations, violations
from mechanisms.runner import build, run
from mechanisms.schema import Schema, SchemaError
from mechanisms.source import TableSource, read_raw_csv
from tests.samples import SAMPLES

HOSPITAL = SAMPLES / "hospital.csv"
STAY_RULE = {"derive": {"column": "discharged", "from": "admitted + stay_days", "unit": "day"}}
DAY = {"kind": "date", "format": "%d/%m/%Y", "bins": 20}
COLUMNS = [
    {"name": "admitted", **DAY, "lower": "2019-01-01", "upper": "2023-12-31"},
    {"name": "discharged", **DAY, "lower": "2019-01-01", "upper": "2024-12-31"},
    {
        "name": "ward",
        "kind": "categorical",
        "categories": ["Cardiology", "General medicine", "Maternity", "Orthopaedics", "Surgery"],
    },
    {"name": "stay_days", "kind": "integer", "lower": 0, "upper": 15, "bins": 16},
]
MONEY = [
    {"name": "wages", "kind": "continuous", "lower": 0, "upper": 1000, "decimals": 2},
    {"name": "bonus", "kind": "integer", "lower": 0, "upper": 100},
    {"name": "total", "kind": "continuous", "lower": 0, "upper": 1100, "decimals": 2},
    {"name": "net-pay", "kind": "continuous", "lower": -100, "upper": 1100, "decimals": 2},
]


def hospital_schema(rules=(STAY_RULE,)) -> Schema:
    return Schema.from_dict({"columns": COLUMNS, "rules": list(rules)})


@pytest.fixture(scope="module")
def raw() -> pd.DataFrame:
    return read_raw_csv(HOSPITAL)


def test_derive_rules_round_trip_through_the_schema_json_in_canonical_form():
    rules = [
        {"derive": {"column": "total", "from": "wages+bonus"}, "name": "total pay"},
        {"derive": {"column": "net-pay", "from": " total -  `bonus` - 5 "}},
    ]
    s = Schema.from_dict({"columns": MONEY, "rules": rules})
    assert [r.to_dict() for r in s.rules] == [
        {"derive": {"column": "total", "from": "wages + bonus"}, "name": "total pay"},
        {"derive": {"column": "net-pay", "from": "total - bonus - 5"}},
    ]
    assert Schema.from_json(s.to_json()) == s and s.rules[1].label == "net-pay = total - bonus - 5"
    assert derive.plan(s)[1].column == "net-pay"  # computed after total, its term


@pytest.mark.parametrize(
    "rule, message",
    [
        ({"column": "total", "from": "wages + "}, "a term is missing"),
        ({"column": "total", "from": "wages * 2"}, r"no column 'wages \* 2'"),
        ({"column": "total", "from": "__import__('os')"}, "no column"),
        ({"column": "total", "from": "`wages + bonus"}, "unclosed backtick"),
        ({"column": "total", "from": "3"}, "names no column"),
        ({"column": "total", "from": "wages + wages"}, "appears twice"),
        ({"column": "total", "from": "total + bonus"}, "computed from itself"),
        ({"column": "bonus", "from": "wages - total"}, "integer column 'bonus' cannot be computed from"),
        ({"column": "total", "from": "wages + bonus + 2000"}, "cannot hold"),
        ({"column": "total", "from": "wages", "extra": 1}, "derive needs an object"),
    ],
)
def test_a_bad_derive_rule_is_refused_naming_the_problem(rule, message):
    with pytest.raises(SchemaError, match=message):
        Schema.from_dict({"columns": MONEY, "rules": [{"derive": rule}]})


@pytest.mark.parametrize(
    "rule, message",
    [
        ({"column": "discharged", "from": "admitted + ward"}, "ward' is categorical"),
        ({"column": "discharged", "from": "stay_days + 3"}, "a date column equals a date plus or minus"),
        ({"column": "stay_days", "from": "discharged + admitted"}, "dates must cancel"),
        ({"column": "discharged", "from": "admitted + stay_days", "unit": "month"}, "unit 'month' must be"),
    ],
)
def test_date_arithmetic_is_typed(rule, message):
    with pytest.raises(SchemaError, match=message):
        hospital_schema([{"derive": rule}])


def test_two_rules_computing_one_column_or_each_other_are_refused():
    cycle = [
        {"derive": {"column": "total", "from": "wages + bonus"}},
        {"derive": {"column": "wages", "from": "total - bonus"}},
    ]
    with pytest.raises(SchemaError, match="computed by two derive rules|from each other"):
        Schema.from_dict({"columns": MONEY, "rules": cycle})
    twice = [STAY_RULE, {"derive": {"column": "stay_days", "from": "discharged - admitted"}}]
    with pytest.raises(SchemaError, match="'discharged' is computed by two derive rules"):
        hospital_schema(twice)


def test_the_file_is_checked_and_the_breaking_rows_counted(raw):
    s = hospital_schema()
    assert not violations(s, s.prepare(raw)).any()
    broken = raw.copy()
    broken.loc[[3, 70, 900], "stay_days"] = "9"
    bad = rule_violations(s.rules[0], s.prepare(broken))
    assert int(bad.sum()) == int((raw.loc[[3, 70, 900], "stay_days"] != "9").sum()) == 3


def test_a_duration_declared_from_dates_is_modelled_and_the_date_computed():
    s = hospital_schema([{"derive": {"column": "stay_days", "from": "discharged - admitted"}}])
    assert derive.plan(s) == [derive.Step("discharged", ((1, "stay_days"), (1, "admitted")), 0)]
    assert derive.model_schema(s).names == ["admitted", "ward", "stay_days"]


def test_the_mechanism_never_reads_the_computed_column(raw):
    """The model is fitted on the other columns: replacing every discharge date (within its bounds)
    leaves the seeded release unchanged, row for row."""
    s = hospital_schema()
    moved = raw.copy()
    moved["discharged"] = "31/12/2024"
    a, b = (
        build("baseline", s, epsilon=1.0, noise=Noise.seeded(3)).fit(TableSource(s, frame=f)).sample(500)
        for f in (raw, moved)
    )
    assert build("baseline", s, epsilon=1.0).schema.names == ["admitted", "ward", "stay_days"]
    pd.testing.assert_frame_equal(a, b)
    assert list(a.columns) == s.names
    plain = hospital_schema([])  # the broken variant: the column modelled, so the output moves with it
    a, b = (
        build("baseline", plain, epsilon=1.0, noise=Noise.seeded(3)).fit(TableSource(plain, frame=f)).sample(500)
        for f in (raw, moved)
    )
    assert not a["discharged"].equals(b["discharged"])


@pytest.mark.parametrize("measure", [False, True])
def test_fit_and_measure_read_the_source_through_the_modelled_schema(raw, measure):
    """The source handed over holds the confirmed schema; whatever reads it inside the mechanism (frame,
    chunks or the encoded cells) sees the modelled columns only."""
    s = hospital_schema()
    mech = build("baseline", s, epsilon=1.0, noise=Noise.seeded(0))
    seen = []
    mech._fit = seen.append  # the mechanism's own fit, replaced: what it would be handed
    mech.measure(TableSource(s, frame=raw)) if measure else mech.fit(TableSource(s, frame=raw))
    assert seen[0].schema.names == ["admitted", "ward", "stay_days"]
    assert seen[0].cells().shape == (len(raw), 3) and list(seen[0].frame().columns) == seen[0].schema.names


def test_a_computed_value_outside_its_bounds_is_redrawn_not_written():
    """discharged's upper bound is lowered to 2023-12-31: late admissions plus long stays fall past it.
    complete() clips them, which breaks the identity, and generation redraws those rows."""
    cols = [dict(c) for c in COLUMNS]
    cols[1]["upper"] = "2023-12-31"
    s = Schema.from_dict({"columns": cols, "rules": [STAY_RULE]})
    late = pd.DataFrame({"admitted": [19720, 19000], "ward": ["Surgery"] * 2, "stay_days": [15, 3]})
    done = derive.complete(s, late)
    assert done["discharged"].tolist() == [19722, 19003] and violations(s, done).tolist() == [True, False]


def tvd(a: pd.Series, b: pd.Series) -> float:
    p, q = a.value_counts(normalize=True), b.value_counts(normalize=True)
    return 0.5 * float(p.sub(q, fill_value=0).abs().sum())


def test_mst_keeps_the_identity_in_every_row_and_the_stays_within_twice_the_floor(raw):
    """MST at epsilon 1 on the 3,000 hospital stays: discharged = admitted + stay_days in 100% of the
    synthetic rows, and the stays read off the synthetic dates within 2x the sampling floor's 1-way TVD
    (floor: two disjoint real halves of 1,500 rows; synthetic: 1,500 rows against one half). The broken
    variant, the same release with the discharge date modelled as a column of its own (an order rule
    admitted <= discharged instead of the identity), is caught by both checks."""
    halves = np.random.default_rng(0).permutation(len(raw))
    real = raw["stay_days"].astype(int)
    half_a, half_b = real.iloc[halves[:1500]], real.iloc[halves[1500:]]
    floor = tvd(half_a, half_b)

    def stays(schema) -> tuple[float, float]:
        mech = build("mst", schema, epsilon=1.0, delta=1e-6, noise=Noise.seeded(1))
        syn = run(mech, TableSource(schema, frame=raw), 1500).synthetic
        stay = syn["discharged"] - syn["admitted"]
        return float((stay == syn["stay_days"]).mean()), tvd(stay, half_b)

    share, gap = stays(hospital_schema())
    assert share == 1.0 and gap <= 2 * floor, (share, gap, floor)
    share, gap = stays(hospital_schema([{"order": ["admitted", "discharged"]}]))
    assert share < 0.2 and gap > 2 * floor, (share, gap, floor)


def test_the_export_writes_computed_dates_in_the_declared_format_and_the_report_says_so(raw):
    s = hospital_schema()
    mech = build("baseline", s, epsilon=1.0, noise=Noise.seeded(0))
    release = run(mech, TableSource(s, frame=raw), 200)
    assert "discharged is computed on every row from the others by the public rule discharged = admitted + " in (
        " ".join(release.report()["caveats"])
    )
    out = export_frame(release.synthetic, s)
    stay = pd.to_datetime(out["discharged"], format="%d/%m/%Y") - pd.to_datetime(out["admitted"], format="%d/%m/%Y")
    assert (stay.dt.days == out["stay_days"]).all()


def test_the_draft_suggests_identities_that_hold_in_every_row(raw):
    d = draft_schema(raw)
    assert [r.to_dict() for r in d.rules] == [STAY_RULE] and d.draft
    broken = raw.copy()
    broken.loc[5, "discharged"] = broken.loc[6, "discharged"]
    assert not [r for r in draft_schema(broken).rules if r.kind == "derive"]
    money = pd.DataFrame(
        {"a": ["1.5", "2.25", "3", "7"], "b": ["10", "20", "30", "41"], "c": ["11.5", "22.25", "33", "48"]}
    )
    assert [r.to_dict() for r in draft_schema(money).rules] == [{"derive": {"column": "c", "from": "a + b"}}]


def test_a_wide_date_gets_the_cells_the_table_resolves(raw):
    """Dates follow the integers' resolution rule: 3,000 rows x 4 columns resolve 45 cells at the reference
    epsilon, so five years of admissions get 45 cells (41 days) instead of 20 (91 days); a range that fits
    gets one cell per unit (months of two years: 24 cells)."""
    d = draft_schema(raw)
    assert d.column("admitted").bins == 45
    months = raw.assign(admitted=[f"202{i % 2}-{1 + i % 12:02d}" for i in range(len(raw))])
    assert draft_schema(months).column("admitted").n_bins == 24


@pytest.mark.parametrize("name", registry.names())
def test_every_mechanism_is_built_on_the_modelled_columns(name):
    """A mechanism's own code (its __init__ included) sees the schema without the computed column."""
    s = hospital_schema()
    cls = registry.get(name)
    if not set(cls.supported_kinds) >= s.kinds:
        pytest.skip(f"{name} does not model {sorted(s.kinds - set(cls.supported_kinds))} columns")
    mech = build(name, s, epsilon=1.0, delta=1e-6 if cls.needs_delta else 0.0)
    assert mech.schema.names == ["admitted", "ward", "stay_days"] and mech.release_schema == s


@pytest.mark.parametrize("name", ["kdtree-grid", "privhp", "density-lp"])
def test_grid_mechanisms_write_the_identity_in_every_row(name, raw):
    s = hospital_schema()
    syn = run(build(name, s, epsilon=1.0, noise=Noise.seeded(0)), TableSource(s, frame=raw), 300).synthetic
    assert list(syn.columns) == s.names and ((syn["discharged"] - syn["admitted"]) == syn["stay_days"]).all()


def test_the_hospital_sample_is_what_its_committed_script_writes():
    spec = importlib.util.spec_from_file_location("make_hospital", SAMPLES / "make_hospital.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.make().to_csv(index=False) == HOSPITAL.read_text()
    assert hashlib.sha256(HOSPITAL.read_bytes()).hexdigest() in (SAMPLES / "README.md").read_text()


@pytest.mark.parametrize(
    "text, message",
    [
        ("wages + " + "1" * 5000, "constants must be at most"),
        (["wages"], "needs an expression"),
        ("wages + " * 2000 + "bonus", "at most 10,000 characters"),
        ("wages - -bonus", "a term is missing"),
        ("wages + \u0663", "no column"),
    ],
)
def test_hostile_expressions_get_a_message_not_a_crash(text, message):
    with pytest.raises(SchemaError, match=message):
        Schema.from_dict({"columns": MONEY, "rules": [{"derive": {"column": "total", "from": text}}]})


def test_a_bad_rule_after_a_good_one_is_named_not_crashed_on():
    rules = [STAY_RULE, {"derive": {"column": "stay_days", "from": "nowhere - admitted"}}]
    with pytest.raises(SchemaError, match="no column 'nowhere'"):
        hospital_schema(rules)
