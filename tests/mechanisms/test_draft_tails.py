"""Drafted numeric columns whose exact values survive a release: one cell per value where the range is small
for the table (hours per week 0-99 at 15,000 rows), the commonest point masses as special values (payments
heap on round amounts), and a long tail of a few rows top-coded where a handful of rows lie beyond."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mechanisms.draft import RARE_K, draft_schema, resolvable_cells, tail_bounds

RNG = np.random.default_rng(0)


def payments(n: int) -> np.ndarray:
    """Zeros, round amounts (1,000-10,000) and a lognormal rest with a long thin tail (the largest 1.7M)."""
    x = np.rint(np.exp(RNG.normal(8.5, 1.0, n))).astype(np.int64)
    kind = RNG.random(n)
    x[kind < 0.18] = 0
    rounds = np.array([1000, 1500, 2000, 3000, 4000, 5000, 10000])
    pick = (kind >= 0.18) & (kind < 0.33)
    x[pick] = RNG.choice(rounds, int(pick.sum()), p=[0.1, 0.12, 0.3, 0.2, 0.08, 0.12, 0.08])
    x[:3] = [1_684_259, 1_227_082, 873_552]
    return x


def hours_table(n: int, d: int) -> pd.DataFrame:
    raw = pd.DataFrame({f"c{i}": RNG.choice(["a", "b"], n) for i in range(d - 1)})
    raw["hours-per-week"] = np.where(RNG.random(n) < 0.45, 40, RNG.integers(1, 100, n)).astype(str)
    return raw


def test_hours_per_week_get_one_cell_per_value_where_the_table_resolves_them():
    n, d = 9_000, 7  # a reference release resolves 102 cells a column
    assert resolvable_cells(n, d) >= 100
    col = draft_schema(hours_table(n, d)).column("hours-per-week")
    assert (col.lower, col.upper, col.n_bins, col.special) == (0, 99, 100, ())  # every hour written exactly


def test_hours_per_week_get_bins_and_their_point_mass_where_the_table_resolves_fewer_cells():
    n, d = 6_000, 7  # 68 cells a column, as on 15,000 rows of 41 columns: a value's pair with the label is noise
    assert resolvable_cells(n, d) < 100
    col = draft_schema(hours_table(n, d)).column("hours-per-week")
    assert (col.lower, col.upper, col.n_bins, col.special) == (0, 99, 20, (40,))  # 40 (45% of rows) exact


def test_payments_keep_their_round_amounts_exactly_and_their_thin_tail_is_top_coded():
    x = payments(15_000)
    col = draft_schema(pd.DataFrame({"pay_amt": x.astype(str), "y": RNG.choice(["a", "b"], x.size)})).column("pay_amt")
    assert {0, 1000, 1500, 2000, 3000, 5000, 10000} <= set(col.special) and len(col.special) <= 10
    tenth = np.sort(x)[-RARE_K]
    assert tenth <= col.upper < 1.1 * tenth and col.upper < 1_000_000  # not the 1.7M of one record
    assert float(f"{col.upper:.2g}") == col.upper  # two significant digits
    assert (x > col.upper).sum() < RARE_K  # the rows written at the bound
    assert col.scale == "log"


def test_a_top_code_and_a_short_tail_stay_the_bounds():
    gains = pd.Series(np.r_[np.zeros(900), RNG.integers(100, 41_310, 2000), np.full(48, 99_999)])
    assert tail_bounds(gains, 0, 99_999, integer=True) == (0, 99_999)  # the top code is the maximum
    even = pd.Series(RNG.integers(0, 1000, 5000))
    assert tail_bounds(even, 0, 999, integer=True) == (0, 999)  # the extremes are no thin tail
    low = pd.Series(np.r_[RNG.integers(0, 1000, 5000), [-90_000, -50_000, -40_000]])
    lo, hi = tail_bounds(low, -90_000, 999, integer=True)
    assert hi == 999 and 0 <= lo <= 10  # three rows far below 0: the bound where the bulk starts
    assert tail_bounds(pd.Series(np.arange(150.0)), 0, 149, integer=False) == (0, 149)  # too few rows to judge
