"""The baseline's noisy histograms fitted non-negative with the public n (mechanisms/pgm/nonneg.py): values the
noisy counts say are empty get at most the few rows the total leaves over, where clipping negatives (the broken
variant) draws every positive noise spike; the public n survives the stored summary."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mechanisms.noise import Noise
from mechanisms.runner import build
from mechanisms.schema import Column, Schema
from mechanisms.source import TableSource
from tests.mechanisms.npz import through_npz

SCHEMA = Schema(columns=(Column("code", "categorical", categories=tuple(f"c{i}" for i in range(60))),))
N = 2000


def _fit():
    raw = pd.DataFrame({"code": np.where(np.arange(N) % 2 == 0, "c0", "c1")})  # two values, 58 empty
    mech = build("baseline", SCHEMA, epsilon=0.2, noise=Noise(secure=False, seed=4))
    return mech.fit(TableSource.from_frame(SCHEMA, raw))


def test_values_the_noisy_counts_say_are_empty_get_almost_no_rows_and_clipping_is_caught(monkeypatch):
    mech = _fit()
    assert mech.measured_rows == N
    # discrete Laplace scale 10 on 58 empty values: their positive draws hold about 290 rows; the fit leaves
    # them only what the two real values' noisy counts fall short of n by (tens of rows)
    assert (~mech.sample(N)["code"].isin(["c0", "c1"])).mean() < 0.04
    loaded = type(mech).from_summary(
        SCHEMA, through_npz(mech.summary()), epsilon=0.2, noise=Noise(secure=False, seed=5)
    )
    assert loaded.measured_rows == N and (~loaded.sample(N)["code"].isin(["c0", "c1"])).mean() < 0.04

    # broken variant: negatives clipped and the rest rescaled, so every positive noise draw is a value
    def clipped(y, total):
        w = np.clip(np.asarray(y, float), 0, None)
        return w / w.sum()

    monkeypatch.setattr("mechanisms.synthesizers.baseline.nonnegative_shares", clipped)
    assert (~mech.sample(N)["code"].isin(["c0", "c1"])).mean() > 0.08
