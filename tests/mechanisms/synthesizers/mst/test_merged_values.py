"""MST's merged values (mechanisms/synthesizers/mst/, mechanisms/pgm/nonneg.py): sampling undoes the 3-sigma merge
with non-negative least squares on the merged values' own noisy counts, so a money column's tail keeps its mean
and 99th percentile; the uniform draw it replaces is caught spreading rows over the whole log range."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mechanisms.noise import Noise
from mechanisms.pgm.nonneg import nonnegative_counts, nonnegative_shares, unimodal_fit
from mechanisms.runner import build
from mechanisms.schema import Column, Schema
from mechanisms.source import TableSource
from tests.mechanisms.npz import through_npz

N = 3000
SCHEMA = Schema(
    columns=(
        Column("amount", "integer", lower=0, upper=100_000, bins=40, scale="log", special=(0,)),
        Column("group", "categorical", categories=("a", "b", "c")),
        Column("flag", "categorical", categories=("y", "n")),
    )
)


def test_nonnegative_counts_is_the_least_squares_fit_with_the_total_and_drops_cells_below_its_threshold():
    rng = np.random.default_rng(0)
    for _ in range(50):
        y = rng.normal(0, 10, 12) + rng.choice([0, 40], 12)
        total = float(rng.uniform(1, 200))
        x = nonnegative_counts(y, total)
        assert np.all(x >= 0) and x.sum() == pytest.approx(total)
        # KKT: x = max(y - tau, 0) with one tau, so every kept cell is y - tau and every dropped one has y <= tau
        tau = (y - x)[x > 0]
        assert np.ptp(tau) < 1e-9 and np.all(y[x == 0] <= tau[0] + 1e-9)
        # no feasible point is closer to y (random feasible points, including clip-and-rescale)
        clipped = np.clip(y, 0, None)
        others = [clipped * total / clipped.sum()] + [rng.dirichlet(np.ones(12)) * total for _ in range(20)]
        assert all(((x - y) ** 2).sum() <= ((o - y) ** 2).sum() + 1e-9 for o in others)
    assert nonnegative_counts(np.array([-1.0, -2.0]), 0).tolist() == [0.0, 0.0]
    assert nonnegative_shares(np.array([-1.0, -2.0]), 0).tolist() == [0.5, 0.5]


def test_the_unimodal_fit_pools_a_lone_tail_spike_with_its_empty_neighbours():
    y = np.array([0.0, 5, 60, 90, 70, 2, -3, 1, 41, -8, 0, -2])  # a noise spike of 41 far in the tail
    f = unimodal_fit(y, 3)
    assert np.all(np.diff(f[:4]) >= 0) and np.all(np.diff(f[3:]) <= 0)
    assert f[3] == 90 and f[8] == f[5] < 15  # the spike pooled with the bins between it and the bulk
    shares = nonnegative_shares(f[5:], 20.0)  # the tail as merged values
    assert shares[3] <= 0.25 and shares[0] == shares[3] and shares[4:].sum() == 0
    assert nonnegative_shares(y[5:], 20.0)[3] == 1.0  # while the raw counts give the spike all the tail's rows


def _raw(seed=0) -> pd.DataFrame:
    """85% zeros; the rest between 1,000 and 3,000: every bin above 3,000 is empty."""
    rng = np.random.default_rng(seed)
    amount = np.where(rng.random(N) < 0.85, 0, rng.integers(1000, 3000, N))
    group = rng.choice(["a", "b", "c"], N)
    return pd.DataFrame({"amount": amount.astype(str), "group": group, "flag": rng.choice(["y", "n"], N)})


def _fit(seed):
    mech = build("mst", SCHEMA, epsilon=1.0, delta=1e-6, params={"iters": 300}, noise=Noise(secure=False, seed=seed))
    return mech.fit(TableSource.from_frame(SCHEMA, _raw()))


def test_merged_values_keep_the_tail_and_a_uniform_draw_is_caught():
    real = _raw()["amount"].astype(float)
    mech = _fit(1)
    assert not mech.supports[0].all()  # the empty tail bins were merged
    out = mech.sample(N)["amount"].astype(float)
    assert abs(out.mean() / real.mean() - 1) < 0.5
    assert np.quantile(out, 0.99) < 1.5 * np.quantile(real, 0.99)
    assert (out > 10_000).mean() < 0.002  # the empty far tail gets (next to) nothing
    # the shares survive the stored summary
    stored = through_npz(mech.summary())
    loaded = type(mech).from_summary(
        SCHEMA, stored, epsilon=1.0, delta=1e-6, params={"iters": 300}, noise=Noise(secure=False, seed=2)
    )
    again = loaded.sample(N)["amount"].astype(float)
    assert abs(again.mean() / real.mean() - 1) < 0.5

    # broken variant: merged values drawn uniformly (the rows of the merged cell spread over the log range)
    mech.merged_shares = None
    uniform = mech.sample(N)["amount"].astype(float)
    assert np.quantile(uniform, 0.99) > 3 * np.quantile(real, 0.99) or uniform.mean() > 1.5 * real.mean()
