"""Baseline mechanism: exactness without noise, audited histogram noise, summary round trip, CLI."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from mechanisms.synthesizers.baseline import Baseline
from mechanisms.noise import Noise
from mechanisms.schema import Column, Schema
from mechanisms.source import TableSource
from tests.audit import audit_scalar
from tests.mechanisms.npz import through_npz

SCHEMA = Schema(
    columns=(
        Column("c", "categorical", categories=("a", "b", "c")),
        Column("x", "continuous", lower=0, upper=10, bins=5),
    )
)


def _raw(n=300, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {"c": rng.choice(["a", "b", "c"], n, p=[0.6, 0.3, 0.1]), "x": rng.uniform(0, 10, n).round(3).astype(str)}
    )


def test_marginals_are_recovered_at_huge_epsilon():
    raw = _raw(3000)
    mech = Baseline(SCHEMA, epsilon=100.0, noise=Noise.seeded(0)).fit(TableSource.from_frame(SCHEMA, raw))
    true = np.bincount(SCHEMA.to_cells(SCHEMA.prepare(raw))[:, 0], minlength=3)
    assert np.abs(mech.noisy_counts[0] - true).max() <= 10  # scale 2*2/100 = 0.04
    syn = mech.sample(20_000)
    assert abs((syn["c"] == "a").mean() - (raw["c"] == "a").mean()) < 0.02


def test_the_released_histogram_passes_its_audit_and_a_mutant_is_caught():
    """Neighbours: one record replaced (category a -> c). Audit the noisy count of cell 'a'."""
    eps = 1.0
    d = SCHEMA.prepare(pd.DataFrame({"c": ["a"] * 5 + ["b"] * 5, "x": ["1"] * 10}))
    d2 = d.copy()
    d2.loc[0, "c"] = "c"
    per_col = eps / 2
    for factor, should_pass in ((1.0, True), (0.5, False)):
        noise = Noise.seeded(11)
        # The whole histogram of column c has L1 sensitivity 2; the event uses cells a and c jointly:
        # statistic = noisy(a) - noisy(c) moves by 2 under the replacement.
        scale = factor * 2 / per_col

        def draw(frame):
            counts = np.bincount(SCHEMA.to_cells(frame)[:, 0], minlength=3)
            return lambda k: noise.laplace_int(np.tile(counts, (k, 1)), scale=scale) @ np.array([1, 0, -1])

        lb = audit_scalar(draw(d), draw(d2))
        assert (lb <= per_col) == should_pass, (factor, lb)


def test_summary_round_trips_through_npz():
    mech = Baseline(SCHEMA, epsilon=1.0, noise=Noise.seeded(1)).fit(TableSource.from_frame(SCHEMA, _raw()))
    again = Baseline.from_summary(SCHEMA, through_npz(mech.summary()), epsilon=1.0, noise=Noise.seeded(2))
    for a, b in zip(mech.noisy_counts, again.noisy_counts):
        np.testing.assert_array_equal(a, b)
    assert len(again.sample(7)) == 7


def test_it_refuses_a_draft_schema_and_bad_epsilon():
    with pytest.raises(ValueError, match="draft"):
        Baseline(Schema(columns=SCHEMA.columns, draft=True), epsilon=1.0)
    with pytest.raises(ValueError, match="epsilon must be positive"):
        Baseline(SCHEMA, epsilon=0)
    with pytest.raises(ValueError, match="takes no delta"):
        Baseline(SCHEMA, epsilon=1, delta=1e-5)


def test_cli_synthesizes_and_reports(tmp_path):
    data = tmp_path / "d.csv"
    _raw(200).to_csv(data, index=False)
    schema = tmp_path / "s.json"
    schema.write_text(SCHEMA.to_json())
    out = tmp_path / "o.csv"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "mechanisms",
            "synthesize",
            "baseline",
            "--data",
            str(data),
            "--schema",
            str(schema),
            "--epsilon",
            "1",
            "--rows",
            "50",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    rep = json.loads(r.stdout)
    assert rep["epsilon"] == 1.0 and rep["guarantee"] == "pure" and rep["rows"] == 50 and "seconds" in rep
    assert len(pd.read_csv(out)) == 50
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "mechanisms",
            "synthesize",
            "nope",
            "--data",
            str(data),
            "--schema",
            str(schema),
            "--epsilon",
            "1",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert bad.returncode != 0 and bad.stderr.count("\n") == 1 and "unknown mechanism 'nope'" in bad.stderr
