"""The tables release (crosstabs) end to end, the tables of a fitted baseline, MST or AIM release, the exact
intervals of discrete noise, the steward's table list, and the command line."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from mechanisms import registry
from mechanisms.noise import Noise
from mechanisms.schema import Column, Schema
from mechanisms.source import TableSource
from mechanisms.synthesizers.baseline import Baseline
from mechanisms.tables import TablesRelease, measured_tables, parse_tables
from mechanisms.tables.cells import (
    discrete_gaussian_half_width,
    discrete_gaussian_sd,
    discrete_laplace_half_width,
    discrete_laplace_sd,
)
from tests.mechanisms.npz import through_npz

SCHEMA = Schema(
    columns=(
        Column("a", "categorical", categories=("x", "y", "z")),
        Column("b", "categorical", categories=("p", "q")),
        Column("c", "integer", lower=0, upper=7),
        Column("d", "continuous", lower=0, upper=1, bins=4),
    )
)
CELL_KEYS = {"values", "noisy", "estimate", "se", "lo", "hi"}


def _raw(n=2000, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.choice(3, n, p=[0.7, 0.28, 0.02])
    b = np.where(rng.random(n) < 0.8, (a > 0).astype(int), rng.integers(0, 2, n))
    c = np.clip(2 * a + rng.integers(0, 3, n), 0, 7)
    return pd.DataFrame(
        {
            "a": np.array(["x", "y", "z"])[a],
            "b": np.array(["p", "q"])[b],
            "c": c.astype(str),
            "d": rng.random(n).round(3).astype(str),
        }
    )


def _true(raw: pd.DataFrame, columns: list[str], spec) -> np.ndarray:
    cells = SCHEMA.to_cells(SCHEMA.prepare(raw))
    idx = [spec.cell_map(SCHEMA, c)[cells[:, SCHEMA.names.index(c)]] for c in columns]
    shape = [spec.size(SCHEMA, c) for c in columns]
    return np.bincount(np.ravel_multi_index(idx, shape), minlength=math.prod(shape)).astype(float)


def _column(table: dict, key: str) -> np.ndarray:
    return np.array([c[key] for c in table["cells"]], dtype=float)


def test_the_tables_release_publishes_the_contract_with_exact_consistent_tables():
    raw = _raw()
    mech = TablesRelease(SCHEMA, epsilon=1.0, delta=1e-6, tables="a,b;b,c/2", noise=Noise.seeded(0))
    out = mech.fit(TableSource.from_frame(SCHEMA, raw)).tables()
    assert {"tables", "epsilon", "delta"} <= set(out) and (out["epsilon"], out["delta"]) == (1.0, 1e-6)
    ab, bc = out["tables"]
    assert ab["columns"] == ["a", "b"] and bc["columns"] == ["b", "c"]
    assert all(set(cell) == CELL_KEYS for t in out["tables"] for cell in t["cells"])
    assert ab["noise"]["distribution"] == "gaussian" and ab["noise"]["sigma"] == pytest.approx(ab["cells"][0]["se"])
    assert [c["values"] for c in bc["cells"][:3]] == [["p", "0-1"], ["p", "2-3"], ["p", "4-5"]]
    shared_b = (_column(ab, "noisy").reshape(3, 2).sum(0), _column(bc, "noisy").reshape(2, 4).sum(1))
    assert np.abs(shared_b[0] - shared_b[1]).max() < 3e-6  # the JSON rounds to 6 decimals
    assert all(abs(_column(t, "noisy").sum() - 2000) < 1e-4 for t in out["tables"])
    for t in out["tables"]:
        noisy, se = _column(t, "noisy"), _column(t, "se")
        assert np.allclose(_column(t, "lo"), noisy - 1.96 * se, atol=1e-3)
        truth = _true(raw, t["columns"], mech.spec)
        assert np.abs(noisy - truth).max() < 5 * se[0]
    assert mech.privacy_cost().details["replace_one_rho_of_plan"] == pytest.approx(
        mech.privacy_cost().details["zcdp_rho"]
    )


def test_non_negative_tables_come_from_one_model_and_the_synthetic_file_reproduces_them():
    """A rare category (2%) at epsilon 0.3: some unbiased cells are negative; the non-negative tables are the
    Private-PGM model's (consistent, total n) and a file of n rows drawn from it matches them within 2 counts per
    cell (the model's counts are not whole: rows are drawn with stratified rounding; 1.0-1.3 measured)."""
    raw = _raw()
    mech = TablesRelease(SCHEMA, epsilon=0.3, delta=1e-6, tables="a,b;a,c", nonnegative=True, noise=Noise.seeded(1))
    out = mech.fit(TableSource.from_frame(SCHEMA, raw)).tables()
    ab, ac = out["tables"]
    assert min(_column(ab, "noisy").min(), _column(ac, "noisy").min()) < 0
    for t in (ab, ac):
        est = _column(t, "estimate")
        assert est.min() >= 0 and abs(est.sum() - 2000) < 1e-3 and _column(t, "lo").min() >= 0
    assert (
        np.abs(_column(ab, "estimate").reshape(3, 2).sum(1) - _column(ac, "estimate").reshape(3, 8).sum(1)).max() < 1e-3
    )
    syn = mech.sample(2000)
    got = _true(syn, ["a", "c"], mech.spec)
    assert np.abs(got - _column(ac, "estimate")).max() <= 2


def test_the_summary_round_trip_gives_the_same_tables():
    mech = TablesRelease(SCHEMA, epsilon=1.0, delta=1e-6, tables="a,b;d", noise=Noise.seeded(2))
    mech.fit(TableSource.from_frame(SCHEMA, _raw()))
    back = TablesRelease.from_summary(
        SCHEMA, through_npz(mech.summary()), epsilon=1.0, delta=1e-6, params={"tables": "a,b;d"}
    )
    assert back.tables() == mech.tables() == measured_tables(back)  # one call for every kind of release


@pytest.mark.parametrize(
    "text, problem",
    [
        ("a,e", "'e' is not a kept column"),
        ("a,b,c,d", "at most 3 columns"),
        ("c/2,a;c,b", "two resolutions"),
        ("a/2", "only numeric columns"),
        ("a,b;b,a", "named twice"),
        ("a,;", "empty table"),
    ],
)
def test_a_bad_table_list_is_refused_naming_the_problem(text, problem):
    with pytest.raises(ValueError, match=problem):
        parse_tables(text, SCHEMA)
    with pytest.raises(ValueError, match=problem):
        TablesRelease(SCHEMA, epsilon=1.0, delta=1e-6, tables=text)


def test_it_is_registered_and_needs_a_delta():
    assert registry.get(TablesRelease.name) is TablesRelease
    with pytest.raises(ValueError, match="delta"):
        TablesRelease(SCHEMA, epsilon=1.0, tables="a")


def test_discrete_intervals_are_the_exact_quantiles():
    k = np.arange(-3000, 3001)
    for sigma in (0.7, 1.0, 3.0, 12.5):
        p = np.exp(-(k**2) / (2 * sigma**2))
        p /= p.sum()
        t = discrete_gaussian_half_width(sigma)
        assert p[np.abs(k) <= t].sum() >= 0.95 > p[np.abs(k) <= t - 1].sum()
        assert discrete_gaussian_sd(sigma) == pytest.approx(math.sqrt((k**2 * p).sum()), rel=1e-9)
    assert discrete_gaussian_half_width(1.0) == 2  # +-1.96 sigma would round to 1 and cover 88%
    for scale in (0.5, 2.0, 8.0):
        p = np.exp(-np.abs(k) / scale)
        p /= p.sum()
        t = discrete_laplace_half_width(scale)
        assert p[np.abs(k) <= t].sum() >= 0.95 > p[np.abs(k) <= t - 1].sum()
        assert discrete_laplace_sd(scale) == pytest.approx(math.sqrt((k**2 * p).sum()), rel=1e-9)


def test_the_baselines_tables_cover_the_true_counts_at_the_stated_rate():
    """40 seeded baseline fits (4 one-way tables, 18 cells each): the noisy counts' exact 95% intervals cover
    0.93-0.99 of the true counts (discrete intervals cover at least 95%); the model estimate sums to n."""
    raw = _raw()
    source = TableSource.from_frame(SCHEMA, raw)
    truths = {c: _true(raw, [c], parse_tables("", SCHEMA)) for c in SCHEMA.names}
    hits = total = 0
    for seed in range(40):
        mech = Baseline(SCHEMA, epsilon=0.5, delta=1e-6, noise_type="gaussian", noise=Noise.seeded(seed)).fit(source)
        out = measured_tables(mech)
        for t in out["tables"]:
            truth = truths[t["columns"][0]]
            hits += int(((_column(t, "lo") <= truth) & (truth <= _column(t, "hi"))).sum())
            total += truth.size
            assert abs(_column(t, "estimate").sum() - 2000) < 1e-3
    assert 0.93 <= hits / total <= 0.99
    assert out["tables"][0]["noise"] == {"distribution": "discrete_gaussian", "sigma": mech.scale}


def test_measured_tables_need_a_fitted_release():
    with pytest.raises(ValueError, match="fitted release"):
        measured_tables(Baseline(SCHEMA, epsilon=1.0))


@pytest.mark.parametrize(
    "name, params", [("mst", {"iters": 200}), ("aim", {"max_rounds": 12, "iters": 50, "final_iters": 50})]
)
def test_mst_and_aim_publish_every_measured_marginal_with_the_models_answer(name, params):
    """AIM at 12 rounds measures some marginals twice (pooled) and MST merges the 2% category: those intervals
    are the normal approximation, and say so; a marginal measured once has the exact discrete interval."""
    cls = registry.get(name)
    mech = cls(SCHEMA, epsilon=1.0, delta=1e-6, noise=Noise.seeded(0), **params)
    out = measured_tables(mech.fit(TableSource.from_frame(SCHEMA, _raw())))
    assert [t["columns"] for t in out["tables"][:4]] == [["a"], ["b"], ["c"], ["d"]]
    assert len(out["tables"]) == len(mech.measurements.items) > 4
    for t, m in zip(out["tables"], mech.measurements.items):
        assert t["noise"] == {"distribution": "discrete_gaussian", "sigma": m.sigma}
        assert abs(_column(t, "estimate").sum() - 2000) < 1e-3
        assert np.all(_column(t, "lo") <= _column(t, "noisy")) and np.all(_column(t, "noisy") <= _column(t, "hi"))
    pooled = [t for t in out["tables"] if "normal approximation" in t["interval"]]
    if name == "aim":
        selected = [tuple(c) for c, _ in mech.selected]
        twice = {c for c in selected if selected.count(c) > 1 or len(c) == 1}
        assert {tuple(t["columns"]) for t in pooled} == twice and twice
    else:  # MST: the columns whose rare values were merged (a sum of noises in the merged cell)
        merged = {m.clique for m in mech.measurements.items if m.weights is not None}
        assert {tuple(t["columns"]) for t in pooled} == merged and merged


def test_the_command_line_prints_the_tables_json(tmp_path):
    data, schema = tmp_path / "t.csv", tmp_path / "s.json"
    _raw(500).to_csv(data, index=False)
    schema.write_text(SCHEMA.to_json())
    cmd = [sys.executable, "-m", "mechanisms", "tables", "--data", str(data), "--schema", str(schema)]
    cmd += ["--epsilon", "1", "--seed", "0", "--json"]
    done = subprocess.run(cmd + ["--table", "a,b", "--table", "b,c"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert [t["columns"] for t in out["tables"]] == [["a", "b"], ["b", "c"]] and out["delta"] == 1e-6
    assert out["privacy"]["differentially_private"] is False  # seeded: tests only
    bad = subprocess.run(cmd + ["--table", "a,zz"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "'zz' is not a kept column" in bad.stderr


class _NoiseOff(Noise):
    def __init__(self):
        super().__init__(secure=False, seed=0)

    def gaussian_float(self, values, *, scale):
        return np.asarray(values, dtype=np.float64)


def test_the_noisy_queries_are_the_residual_coordinates_each_record_contributes_to():
    """For the risk report's implementation check: with the noise off, every released residual coordinate is
    the sum of the records' dense contributions, and its scale is the residual's noise std."""
    raw = _raw(300)
    mech = TablesRelease(SCHEMA, epsilon=1.0, delta=1e-6, tables="a,b;c/2", noise=_NoiseOff())
    queries = mech.measure(TableSource.from_frame(SCHEMA, raw))
    prepared = SCHEMA.prepare(raw)
    assert [q.scale for q in queries] == list(mech.residuals.sigmas.values())
    for q in queries:
        assert q.noise == "gaussian" and np.allclose(q.dense(prepared).sum(axis=0), q.values, atol=1e-9)


def test_tables_whose_model_would_be_too_large_are_refused_before_any_budget():
    """Three 2-way tables in a cycle on 300-category columns join into one 27M-cell clique (206 MiB)."""
    cats = tuple(f"v{i}" for i in range(300))
    wide = Schema(columns=tuple(Column(c, "categorical", categories=cats) for c in "abc"))
    TablesRelease(wide, epsilon=1.0, delta=1e-6, tables="a,b;b,c").check_plan(1000)  # a chain: 2 x 90,000 cells
    with pytest.raises(ValueError, match=r"206 MiB .* above the limit of 80 MiB"):
        TablesRelease(wide, epsilon=1.0, delta=1e-6, tables="a,b;b,c;a,c").check_plan(1000)
