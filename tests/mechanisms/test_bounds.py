"""Private bounds (mechanisms/bounds.py): exact checks without noise, the sensitivity and threshold
arithmetic, a seeded statistical check with its tolerance, and broken variants that must be caught."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from mechanisms import bounds as B
from mechanisms.noise import Noise


def test_the_grid_is_round_numbers_fixed_before_any_data():
    assert 0.0 in B.EDGES and 100.0 in B.EDGES and 0.002 in B.EDGES and -5e6 in B.EDGES and 1.5 not in B.EDGES
    assert np.all(np.diff(B.EDGES) > 0) and B.N_BINS == len(B.EDGES) + 1


def test_bin_counts_by_hand():
    counts = B.bin_counts(np.array([17.0, 19.9, 20.0, 90.0, -3.0, 1e12]))
    i = lambda v: int(np.searchsorted(B.EDGES, v, side="right"))  # noqa: E731
    assert counts[i(17)] == 2 and i(17) == i(19.9)  # [10, 20)
    assert counts[i(20)] == 1 and counts[i(90)] == 1 and counts[i(-3)] == 1
    assert counts[-1] == 1 and counts.sum() == 6  # beyond the grid: the open-ended top bin


def test_without_noise_the_bounds_are_the_edges_around_the_data():
    counts = B.bin_counts(np.array([17.0, 34, 55, 90]))
    assert B.bounds_from_noisy(counts, 1) == (10.0, 100.0)
    assert B.coverage(counts, 10.0, 100.0) == 1.0 and B.coverage(counts, 50.0, 100.0) == 0.5
    assert B.bounds_from_noisy(np.zeros(B.N_BINS), 1) is None


def test_outer_bins_give_their_finite_edge():
    top = np.zeros(B.N_BINS, dtype=int)
    top[-1] = 5
    lo, hi = B.bounds_from_noisy(top, 1)
    assert hi == B.EDGES[-1] and lo == B.EDGES[-2]
    bottom = np.zeros(B.N_BINS, dtype=int)
    bottom[0] = 5
    assert B.bounds_from_noisy(bottom, 1) == (B.EDGES[0], B.EDGES[1])


def test_missing_markers_and_non_numbers_are_not_counted():
    cells = pd.Series(["1", "?", "", "x", "inf", " 2.5 "])
    assert B.numeric_values(cells, ["", "?"]).tolist() == [1.0, 2.5]


def test_scale_and_threshold_follow_the_derivation():
    # 2 columns at epsilon 0.2: 0.1 each, scale 2 / 0.1 = 20; t = ceil(20 ln(bins / (0.05 / 2)))
    chunks = [pd.DataFrame({"a": ["1"] * 10, "b": ["2"] * 10})]
    res = B.estimate_bounds(chunks, ["a", "b"], epsilon=0.2, noise=Noise.seeded(0), markers=[""])
    assert res["epsilon_per_column"] == pytest.approx(0.1) and res["scale"] == pytest.approx(20.0)
    assert res["threshold"] == math.ceil(res["scale"] * math.log(B.N_BINS / 0.025))


def test_a_broken_sensitivity_of_one_would_be_caught():
    """Under replace-one a count vector changes by 2 in L1; a scale of 1/epsilon halves the noise."""
    res = B.estimate_bounds([pd.DataFrame({"a": ["1"]})], ["a"], epsilon=1.0, noise=Noise.seeded(0), markers=[""])
    assert res["scale"] == pytest.approx(2.0) and res["scale"] != pytest.approx(1.0)


def test_seeded_estimates_cover_the_bulk_of_ages_and_incomes():
    """10,000 ages 17-90 and incomes 0-250k at epsilon 1 (0.5 per column): over 20 seeds the bounds
    are round numbers around the data (tolerance: the edges of the bins next to the extremes)."""
    rng = np.random.default_rng(1)
    ages = np.clip(rng.normal(40, 13, 10_000).round(), 17, 90).astype(int)
    income = np.clip(rng.lognormal(10.5, 0.6, 10_000), 0, 250_000).round(2)
    frame = pd.DataFrame({"age": ages.astype(str), "income": income.astype(str)})
    for seed in range(20):
        res = B.estimate_bounds(
            [frame.iloc[:5000], frame.iloc[5000:]],
            ["age", "income"],
            epsilon=1.0,
            noise=Noise.seeded(seed),
            markers=[""],
        )["columns"]
        assert (res["age"]["lower"], res["age"]["upper"]) == (10.0, 100.0), res
        assert res["income"]["lower"] in (2_000.0, 5_000.0, 10_000.0), res
        assert res["income"]["upper"] in (100_000.0, 200_000.0), res
        assert res["age"]["reliable"] and res["income"]["coverage"] > 0.95


def test_too_few_values_for_the_epsilon_give_no_estimate():
    res = B.estimate_bounds(
        [pd.DataFrame({"a": ["5", "6", "7"]})], ["a"], epsilon=0.01, noise=Noise.seeded(0), markers=[""]
    )
    assert res["columns"]["a"] == {"lower": None, "upper": None, "coverage": None, "reliable": False}


def test_values_spread_over_thin_bins_are_flagged_unreliable():
    """A tall spike at 0 and the rest spread thinly: only the spike passes the threshold, and the
    bounds [0, 0.001] would hold a fraction of the values: flagged, not offered."""
    counts = np.zeros(B.N_BINS, dtype=int)
    zero_bin = int(np.searchsorted(B.EDGES, 0.0, side="right"))
    counts[zero_bin] = 600
    counts[zero_bin + 12 : zero_bin + 30] = 150  # values from 1 to 1e6, 150 per bin
    lo, hi = B.bounds_from_noisy(counts, 300)
    assert (lo, hi) == (0.0, 0.001) and B.coverage(counts, lo, hi) < B.MIN_COVERAGE


def test_the_secure_backend_runs_through_opendp():
    frame = pd.DataFrame({"a": [str(v) for v in range(1, 2001)]})
    noise = Noise.secure_backend()
    res = B.estimate_bounds([frame], ["a"], epsilon=2.0, noise=noise, markers=[""])
    assert noise.draws == B.N_BINS
    lo, hi = res["columns"]["a"]["lower"], res["columns"]["a"]["upper"]
    assert lo is not None and lo <= 150 and hi >= 1500


@pytest.mark.parametrize(
    "kw, message", [({"epsilon": 0}, "epsilon must be positive"), ({"epsilon": 1, "beta": 1.5}, "beta must lie in")]
)
def test_bad_arguments_are_named(kw, message):
    with pytest.raises(ValueError, match=message):
        B.estimate_bounds([], ["a"], noise=Noise.seeded(0), markers=[""], **kw)


def test_the_column_from_an_estimate_uses_its_bounds_and_fixed_rules_only():
    age = B.column_from_estimate("age", "integer", {"lower": 0.0, "upper": 100.0, "coverage": 0.99})
    assert (age.lower, age.upper, age.bins, age.fill, age.special, age.scale) == (0, 100, 101, 0, (), "linear")
    income = B.column_from_estimate("income", "continuous", {"lower": 0.0, "upper": 200_000.0})
    assert (income.bins, income.fill, income.special, income.scale, income.decimals) == (20, 0, (0,), "log", None)
    year = B.column_from_estimate("year", "integer", {"lower": 1000.0, "upper": 5000.0})
    assert (year.bins, year.special, year.scale, year.fill) == (20, (), "linear", 1000)
    with pytest.raises(ValueError, match="numeric columns"):
        B.column_from_estimate("job", "categorical", {"lower": 0.0, "upper": 1.0})
