"""Suggested bounds a statistician would accept: natural domains where the name and the values make them
obvious (weeks 0-52, month 1-12, a percentage 0-100, hours per week 0-99), else the data's minimum and
maximum (a top-coded age stays at its top code), and a top code seen as a point mass suggested as a
special value. All suggestions from the data, for the steward to confirm."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mechanisms.draft import draft_schema, natural_domain, top_code

RNG = np.random.default_rng(0)


def census_like(n: int = 2000) -> pd.DataFrame:
    age = np.minimum(RNG.integers(0, 100, n), 90)  # top-coded at 90: 10% of the rows pile there
    weeks = np.where(RNG.random(n) < 0.5, 52, RNG.integers(0, 52, n))
    gains = np.where(RNG.random(n) < 0.9, 0, RNG.integers(100, 41_310, n))
    gains[:48] = 99_999  # the top code: 48 rows far above the rest
    losses = np.where(RNG.random(n) < 0.95, 0, RNG.integers(150, 3_900, n))
    pct = RNG.integers(3, 98, n)
    return pd.DataFrame(
        {
            "age": age.astype(str),
            "weeks worked in year": weeks.astype(str),
            "capital_gains": gains.astype(str),
            "capital losses": losses.astype(str),
            "pct_employed": pct.astype(str),
            "month": RNG.integers(1, 13, n).astype(str),
        }
    )


def test_natural_domains_and_tight_bounds_put_no_value_outside_what_the_data_holds():
    raw = census_like()
    d = draft_schema(raw)
    bounds = {c.name: (c.lower, c.upper) for c in d.kept}
    assert bounds["weeks worked in year"] == (0, 52)  # not 0-60
    assert bounds["age"] == (0, 90)  # the top code is the upper bound, not 100
    assert bounds["pct_employed"] == (0, 100)  # values 3-97: the natural domain of a percentage
    assert bounds["month"] == (1, 12)
    assert bounds["capital_gains"] == (0, 99_999)
    assert bounds["capital losses"] == (0, float(raw["capital losses"].astype(int).max()))  # the real maximum
    for c in d.kept:  # no suggested bound beyond the data but a natural domain's end
        values = raw[c.name].astype(float)
        assert c.lower <= values.min() and values.max() <= c.upper


def test_a_top_code_seen_as_a_point_mass_is_a_special_value_and_a_plain_maximum_is_not():
    d = draft_schema(census_like())
    gains = d.column("capital_gains")
    assert 99_999 in gains.special and 0 in gains.special
    assert d.column("capital losses").special == (0,)
    smooth = pd.Series(np.arange(1000, dtype=float) * 7.0)
    assert top_code(smooth) is None  # one row per value: no point mass
    gap = pd.Series([0.0] * 500 + list(np.linspace(10, 5000, 300)) + [20_000.0] * 30)
    assert top_code(gap) == 20_000  # not nines, but far above the next value
    near = pd.Series([0.0] * 500 + list(np.linspace(10, 5000, 300)) + [5_100.0] * 30)
    assert top_code(near) is None  # a pile just above the rest: a mode, not a top code


@pytest.mark.parametrize(
    "name, lo, hi, integer, expected",
    [
        ("weeks_worked", 0, 52, True, (0, 52, "weeks in a year")),
        ("WKS-WORKED weeks", 2, 40, True, (0, 52, "weeks in a year")),
        ("hours-per-week", 1, 99, True, (0, 99, "hours per week")),
        ("hours per week", 1, 120, True, (0, 168, "hours per week")),
        ("birth month", 1, 12, True, (1, 12, "month of the year")),
        ("day", 1, 31, True, (1, 31, "day of the month")),
        ("weekday", 0, 6, True, (0, 6, "day of the week")),
        ("share %", 0.5, 99.5, False, (0, 100, "a percentage")),
        ("weeks", 0, 60, True, None),  # values outside the domain: not that domain
        ("months_employed", 0, 400, True, None),  # a duration, not a month
        ("month", 1.5, 11.5, False, None),  # fractional: not a month number
        ("income", 0, 50, True, None),
    ],
)
def test_natural_domains_need_the_name_and_the_values(name, lo, hi, integer, expected):
    assert natural_domain(name, lo, hi, integer=integer) == expected


def test_a_broken_rounding_outward_would_be_caught():
    # the draft's weeks and age bounds rounded outward to 1-2-5 steps (the suggestion this replaces)
    def outward(lo, hi):
        return (0, 60) if hi == 52 else (0, 100)

    d = draft_schema(census_like())
    assert (d.column("weeks worked in year").lower, d.column("weeks worked in year").upper) != outward(0, 52)
    assert (d.column("age").lower, d.column("age").upper) != outward(0, 90)


def test_a_narrow_code_named_like_a_percentage_keeps_its_own_range():
    assert natural_domain("installment_rate_pct_income", 1, 4, integer=True) is None  # a 1-4 rate class
    raw = pd.DataFrame({"installment_rate_pct_income": [str(1 + i % 4) for i in range(200)]})
    col = draft_schema(raw).column("installment_rate_pct_income")
    assert (col.lower, col.upper) == (1, 4)
