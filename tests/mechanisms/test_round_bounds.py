"""Suggested numeric bounds are rounded outward to round numbers: a hurried
confirmation does not publish the data's exact minimum and maximum."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mechanisms.draft import draft_schema, round_bounds, round_step


@pytest.mark.parametrize(
    "lo, hi, integer, expected",
    [
        (17, 90, True, (0, 100)),  # the documented example: ages
        (0, 1_234_567, False, (0, 1_500_000)),
        (1950, 2020, True, (1940, 2020)),
        (-5, 35, False, (-20, 40)),
        (0.12, 0.87, False, (0.0, 1.0)),
        (52000.5, 61000, False, (52000, 62000)),
    ],
)
def test_documented_examples(lo, hi, integer, expected):
    assert round_bounds(lo, hi, integer=integer) == expected


def test_small_integer_scales_keep_their_codes():
    assert round_bounds(1, 5, integer=True) == (1, 5)  # a 1-5 scale: widening adds empty cells only
    assert round_bounds(0, 7, integer=True) == (0, 7)


def test_steps_are_one_two_five_numbers_at_most_half_the_range():
    assert [round_step(r) for r in (73, 70, 40, 4, 1.2e6, 0.75)] == [20, 20, 20, 2, 500_000, 0.2]


def test_random_ranges_contain_the_data_lie_on_the_step_and_stay_under_twice_the_range():
    rng = np.random.default_rng(0)
    for _ in range(2000):
        lo = float(rng.normal(0, 10 ** rng.uniform(-3, 6)))
        hi = lo + float(10 ** rng.uniform(-3, 6))
        a, b = round_bounds(lo, hi, integer=False)
        step = round_step(hi - lo)
        assert a <= lo and b >= hi
        assert b - a < 2 * (hi - lo) + 1e-9 * max(1, abs(a), abs(b))
        for v in (a, b):
            assert abs(v / step - round(v / step)) < 1e-6


def test_the_draft_no_longer_suggests_the_exact_extremes():
    raw = pd.DataFrame({"age": ["17", "34", "90", "55"], "income": ["1234.5", "88000", "15000", "?"]})
    d = draft_schema(raw)
    age, income = d.column("age"), d.column("income")
    assert (age.lower, age.upper) == (0, 100)
    assert income.lower <= 1234.5 and income.upper >= 88000 and (income.lower, income.upper) != (1234.5, 88000)
    assert income.fill == income.lower  # the suggested fill is a bound, not a data value


def test_a_broken_rounding_that_keeps_the_extremes_would_be_caught():
    def exact(lo, hi, integer):
        return float(lo), float(hi)

    assert exact(17, 90, True) != round_bounds(17, 90, integer=True)
