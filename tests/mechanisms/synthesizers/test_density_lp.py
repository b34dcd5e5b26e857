"""Tests for mechanisms/synthesizers/density_lp/ (Bojkovic & Loh / Boedihardjo et al. LP reweighting)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import sparse

import mechanisms.synthesizers.density_lp as dlp
from mechanisms.noise import Noise
from mechanisms.runner import build, run
from mechanisms.schema import Column, Schema
from mechanisms.source import TableSource
from tests.audit import audit_scalar
from tests.mechanisms.npz import through_npz


def cat_schema(sizes: list[int]) -> Schema:
    return Schema(
        columns=tuple(
            Column(name=f"c{j}", kind="categorical", categories=tuple(f"v{i}" for i in range(k)))
            for j, k in enumerate(sizes)
        )
    )


def cat_frame(schema: Schema, cells: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame(
        {c.name: np.asarray(c.categories, dtype=object)[cells[:, j]] for j, c in enumerate(schema.kept)}
    )


def numeric_schema(p: int, bins: int = 5) -> Schema:
    return Schema(
        columns=tuple(Column(name=f"x{j}", kind="continuous", lower=0.0, upper=1.0, bins=bins) for j in range(p))
    )


# -- test functions and sensitivity ------------------------------------------------------------------


def test_design_matrix_is_sparse_with_one_indicator_per_table():
    sizes = [3, 2, 4]
    tables = dlp.marginal_tables(3, 2)
    assert tables == [(0,), (1,), (2,), (0, 1), (0, 2), (1, 2)]
    pts = np.array([[0, 0, 0], [2, 1, 3], [1, 0, 2]])
    A = dlp.design_matrix(pts, sizes, tables)
    assert sparse.issparse(A) and A.shape == (3 + 2 + 4 + 6 + 12 + 8, 3)
    assert np.all(np.asarray(A.sum(axis=0)).ravel() == len(tables))
    # the marginal counts of a table equal the row sums of the matrix over the points
    counts = dlp.marginal_counts(pts, sizes, tables)
    assert np.array_equal(counts, np.asarray(A.sum(axis=1)).ravel().astype(int))


def test_marginal_count_sensitivity_is_two_per_table_under_replacement():
    rng = np.random.default_rng(0)
    sizes = [3, 4, 2, 5]
    tables = dlp.marginal_tables(4, 2)
    cells = np.column_stack([rng.integers(0, s, 50) for s in sizes])
    base = dlp.marginal_counts(cells, sizes, tables)
    worst = 0
    for _ in range(200):
        other = cells.copy()
        other[rng.integers(50)] = [rng.integers(0, s) for s in sizes]
        worst = max(worst, int(np.abs(dlp.marginal_counts(other, sizes, tables) - base).sum()))
    assert worst <= dlp.COUNT_SENSITIVITY_PER_TABLE * len(tables)
    # a record replaced by one that differs in every column attains the bound
    other = cells.copy()
    other[0] = (cells[0] + 1) % np.array(sizes)
    assert np.abs(dlp.marginal_counts(other, sizes, tables) - base).sum() == 2 * len(tables)


# -- the LP ------------------------------------------------------------------------------------------


def test_lp_without_noise_and_empirical_reference_recovers_marginals_exactly():
    rng = np.random.default_rng(1)
    sizes = [3, 4, 2, 3]
    tables = dlp.marginal_tables(4, 2)
    cells = np.column_stack([rng.integers(0, s, 400) for s in sizes])
    uniq, counts = np.unique(cells, axis=0, return_counts=True)
    means = dlp.marginal_counts(uniq, sizes, tables, weights=counts) / len(cells)
    A = dlp.design_matrix(uniq, sizes, tables)  # mu = the empirical distribution
    h, t_star, info = dlp.solve_density_lp(A, means)
    assert t_star <= 1e-7  # solver tolerance
    assert np.max(np.abs(A @ h - means)) <= 1e-7
    assert abs(h.sum() - 1) < 1e-12 and np.all(h >= 0)


def test_lp_error_is_the_max_deviation_it_reports():
    rng = np.random.default_rng(2)
    sizes = [2, 3]
    tables = dlp.marginal_tables(2, 2)
    pts = np.array([[0, 0], [1, 2], [0, 1]])  # cannot express every target
    targets = rng.random(int(dlp.table_offsets(sizes, tables)[-1])) / 3
    A = dlp.design_matrix(pts, sizes, tables)
    h, t_star, _ = dlp.solve_density_lp(A, targets)
    assert t_star == pytest.approx(np.max(np.abs(A @ h - targets)), abs=1e-7)
    assert t_star > 0.01


@pytest.mark.slow
def test_twenty_column_two_way_schema_solves_sparse(monkeypatch):
    schema = cat_schema([4] * 20)
    rng = np.random.default_rng(3)
    cells = np.column_stack([rng.integers(0, 4, 3000) for _ in range(20)])
    cells[:, 1] = cells[:, 0]  # a strong correlation the LP must reproduce
    dense_calls = []
    monkeypatch.setattr(sparse.csr_matrix, "toarray", lambda self, *a, **k: dense_calls.append(self.shape))
    monkeypatch.setattr(sparse.csc_matrix, "toarray", lambda self, *a, **k: dense_calls.append(self.shape))
    mech = dlp.DensityLP(schema, epsilon=50.0, noise=Noise.seeded(3), m=2000)  # auto: product
    mech.fit(TableSource.from_frame(schema, cat_frame(schema, cells)))
    rep = mech.report()
    assert rep["functions"] == 20 * 4 + 190 * 16 and rep["tables"] == 210
    assert rep["reference"] == "product"
    assert rep["lp_nonzeros"] <= 2 * 2000 * 211 + 2000 + 2 * rep["lp_rows"]  # sparse: ~ m * T, not |F| * m
    assert not any(shape[0] >= rep["functions"] for shape in dense_calls)
    out = mech.sample(4000)
    agree = np.mean(out["c0"].to_numpy() == out["c1"].to_numpy())
    assert agree > 0.8  # independent columns would agree 25% of the time


# -- perturbed histogram (Algorithm 2): audit ----------------------------------------------------------


def _histogram_llr_draws(counts: np.ndarray, c_d: np.ndarray, c_d2: np.ndarray, epsilon: float, seed: int):
    noise = Noise.seeded(seed)

    def draw(k: int) -> np.ndarray:
        y = dlp.perturbed_histogram(np.tile(counts, (k, 1)), epsilon=epsilon, noise=noise)
        return (np.abs(y - c_d2) - np.abs(y - c_d)).sum(axis=1)  # log-likelihood ratio statistic

    return draw


def _audit_histogram(epsilon: float) -> float:
    d = np.array([5, 3, 2])
    d2 = np.array([4, 4, 2])  # one record moved from cell 0 to cell 1
    return audit_scalar(
        _histogram_llr_draws(d, d, d2, epsilon, 10),
        _histogram_llr_draws(d2, d, d2, epsilon, 11),
        pilot=20_000,
        n=60_000,
    )


def test_perturbed_histogram_passes_its_epsilon_audit():
    assert _audit_histogram(1.0) <= 1.0


def test_perturbed_histogram_audit_catches_half_noise(monkeypatch):
    monkeypatch.setattr(dlp, "HISTOGRAM_SENSITIVITY", 1)  # mutant: scale 1/eps instead of 2/eps
    assert _audit_histogram(1.0) > 1.0


# -- Bernstein lattice release (Algorithm 3): scale and audit ---------------------------------------------


def test_bernstein_scale_is_the_stated_lattice_scale_when_kernels_are_wide():
    n, k, h = 100, 6, 0.8
    s_f = 1 / math.sqrt(2 * math.pi) / (n * h)  # S(F) = K(0) / (n h^p), p = 1
    assert dlp.bernstein_sensitivity(n=n, dim=1, lattice=k, bandwidth=h) == pytest.approx(s_f * (k + 1))
    s_f2 = 1 / (2 * math.pi) / (n * h * h)
    assert dlp.bernstein_sensitivity(n=n, dim=2, lattice=k, bandwidth=h) <= s_f2 * (k + 1) ** 2


def test_bernstein_sensitivity_bounds_the_kde_change():
    rng = np.random.default_rng(4)
    for dim, k, h in [(1, 8, 0.05), (2, 5, 0.1), (2, 4, 0.6)]:
        x = rng.random((20, dim))
        base = dlp.kde_on_lattice(x, lattice=k, bandwidth=h)
        bound = dlp.bernstein_sensitivity(n=20, dim=dim, lattice=k, bandwidth=h)
        worst = 0.0
        for _ in range(100):
            x2 = x.copy()
            x2[0] = rng.random(dim)
            worst = max(worst, np.abs(dlp.kde_on_lattice(x2, lattice=k, bandwidth=h) - base).sum())
        assert worst <= bound


def _bernstein_llr_draws(x: np.ndarray, f_d: np.ndarray, f_d2: np.ndarray, scale: float, seed: int):
    noise = Noise.seeded(seed)
    values = dlp.kde_on_lattice(x, lattice=4, bandwidth=0.02)

    def draw(k: int) -> np.ndarray:
        y = noise.laplace_float(np.tile(values.ravel(), (k, 1)), scale=scale)
        return (np.abs(y - f_d2) - np.abs(y - f_d)).sum(axis=1) / scale

    return draw


def _audit_bernstein(epsilon: float) -> float:
    x = np.array([[0.0], [0.5], [0.5], [1.0]])
    x2 = x.copy()
    x2[0] = 0.25  # kernels of x and x' sit on different lattice points: the bound is nearly tight
    sens = dlp.bernstein_sensitivity(n=4, dim=1, lattice=4, bandwidth=0.02)
    scale = dlp.laplace_scale(sensitivity=sens, epsilon=epsilon)
    f_d = dlp.kde_on_lattice(x, lattice=4, bandwidth=0.02).ravel()
    f_d2 = dlp.kde_on_lattice(x2, lattice=4, bandwidth=0.02).ravel()
    assert np.abs(f_d - f_d2).sum() > 0.99 * sens
    return audit_scalar(
        _bernstein_llr_draws(x, f_d, f_d2, scale, 20),
        _bernstein_llr_draws(x2, f_d, f_d2, scale, 21),
        pilot=20_000,
        n=60_000,
    )


def test_bernstein_lattice_release_passes_its_epsilon_audit():
    assert _audit_bernstein(1.0) <= 1.0


def test_bernstein_lattice_audit_catches_half_noise(monkeypatch):
    real = dlp.bernstein_sensitivity
    monkeypatch.setattr(dlp, "bernstein_sensitivity", lambda **kw: real(**kw) / 2)
    assert _audit_bernstein(1.0) > 1.0


def test_bernstein_estimate_follows_a_smooth_density():
    rng = np.random.default_rng(5)
    x = rng.beta(2, 5, size=(20_000, 1))
    values = dlp.kde_on_lattice(x, lattice=40, bandwidth=0.05)
    dens = dlp.bernstein_grid_density(values, order=2, grid=20).ravel()
    centres = (np.arange(20) + 0.5) / 20
    truth = 30 * centres * (1 - centres) ** 4
    assert np.max(np.abs(dens - truth)) < 0.3  # peak of the beta(2,5) density is 2.46


# -- the mechanism end to end -------------------------------------------------------------------------


@pytest.mark.parametrize("reference", ["uniform", "histogram", "product"])
def test_fit_summary_round_trip_and_sample(reference):
    schema = cat_schema([3, 2, 4])
    rng = np.random.default_rng(6)
    cells = np.column_stack([rng.integers(0, s, 500) for s in (3, 2, 4)])
    mech = build("density-lp", schema, epsilon=2.0, params={"reference": reference, "m": 300}, noise=Noise.seeded(6))
    release = run(mech, TableSource.from_frame(schema, cat_frame(schema, cells)), 200)
    assert len(release.synthetic) == 200 and list(release.synthetic.columns) == ["c0", "c1", "c2"]
    assert release.report()["mechanism_report"]["t_star"] >= 0
    again = dlp.DensityLP.from_summary(
        schema, through_npz(mech.summary()), epsilon=2.0, params={"reference": reference}, noise=Noise.seeded(7)
    )
    rows = again.sample(100)
    assert set(rows["c2"]) <= set(schema.column("c2").categories)
    cost = mech.privacy_cost()
    assert cost.guarantee == "pure" and cost.epsilon == 2.0
    assert cost.details["epsilon_reference"] + cost.details["epsilon_marginals"] <= 2.0


def test_bernstein_reference_on_numeric_data_samples_in_bounds():
    schema = numeric_schema(2)
    rng = np.random.default_rng(8)
    x = rng.beta(2, 3, size=(2000, 2))
    raw = pd.DataFrame({"x0": x[:, 0].astype(str), "x1": x[:, 1].astype(str)})
    mech = dlp.DensityLP(schema, epsilon=4.0, noise=Noise.seeded(8), reference="bernstein", m=500)
    mech.fit(TableSource.from_frame(schema, raw))
    out = mech.sample(1000)
    assert out.to_numpy().min() >= 0 and out.to_numpy().max() <= 1
    assert abs(out["x0"].mean() - 0.4) < 0.08  # beta(2,3) mean
    assert mech.report()["bernstein_scale"] > 0
    again = dlp.DensityLP.from_summary(
        schema, through_npz(mech.summary()), epsilon=4.0, params={"reference": "bernstein"}
    )
    assert len(again.sample(10)) == 10


def test_budget_split_and_uniform_spends_all_on_the_lp():
    schema = cat_schema([2, 2])
    uni = dlp.DensityLP(schema, epsilon=1.0, reference="uniform", noise=Noise.seeded(0))
    assert (uni.eps_mu, uni.eps_lp) == (0.0, 1.0)
    hist = dlp.DensityLP(schema, epsilon=1.0, reference="histogram", split=0.25, noise=Noise.seeded(0))
    assert hist.eps_mu == pytest.approx(0.25) and hist.eps_mu + hist.eps_lp <= 1.0
    assert dlp.DensityLP(schema, epsilon=1.0, noise=Noise.seeded(0)).reference == "histogram"  # auto, tiny domain


def test_default_m_follows_the_theorems_and_the_cap():
    schema = cat_schema([2, 2, 2])
    hist = dlp.DensityLP(schema, epsilon=1.0, reference="histogram", noise=Noise.seeded(0))
    n_f = 6 + 12
    assert hist.m == math.ceil(2 * n_f / (0.5**2 * 0.25))
    uni = dlp.DensityLP(schema, epsilon=1.0, reference="uniform", noise=Noise.seeded(0))
    assert uni.m == min(math.ceil(8 * n_f / (0.5**2 * 0.25)), dlp.M_CAP)
    big = dlp.DensityLP(cat_schema([10] * 12), epsilon=1.0, noise=Noise.seeded(0))
    assert big.reference == "product" and big.m == dlp.M_CAP


def test_bad_settings_fail_before_reading_data():
    with pytest.raises(ValueError, match="categorical"):
        dlp.DensityLP(cat_schema([2, 2]), epsilon=1.0, reference="bernstein")
    with pytest.raises(ValueError, match="cells"):
        dlp.DensityLP(cat_schema([50] * 5), epsilon=1.0, reference="histogram")
    with pytest.raises(ValueError, match="at most 3 columns"):
        dlp.DensityLP(numeric_schema(4), epsilon=1.0, reference="bernstein")
    with pytest.raises(ValueError, match="lattice"):
        dlp.DensityLP(numeric_schema(3), epsilon=1.0, reference="bernstein", lattice=100)
    with pytest.raises(ValueError, match="degree"):
        dlp.DensityLP(cat_schema([2, 2]), epsilon=1.0, degree=4)


def test_tie_break_keeps_the_max_error_and_lowers_the_total_error():
    rng = np.random.default_rng(9)
    sizes = [3, 3, 3]
    tables = dlp.marginal_tables(3, 2)
    pts = np.column_stack([rng.integers(0, 3, 12) for _ in sizes])
    targets = dlp.marginal_counts(np.column_stack([rng.integers(0, 3, 300) for _ in sizes]), sizes, tables) / 300
    targets = targets + rng.laplace(0, 0.02, len(targets))
    A = dlp.design_matrix(pts, sizes, tables)
    h1, t1, _ = dlp.solve_density_lp(A, targets)
    h2, t2, _ = dlp.solve_density_lp(A, targets, tie_break=True)
    assert t2 == pytest.approx(t1, rel=1e-5)
    assert np.max(np.abs(A @ h2 - targets)) <= t1 * (1 + 1e-5)
    assert np.abs(A @ h2 - targets).sum() <= np.abs(A @ h1 - targets).sum() + 1e-9


@pytest.mark.parametrize("reference", ["histogram", "product", "uniform"])
def test_progress_and_privacy_details_do_not_depend_on_the_data(reference):
    schema = cat_schema([3, 2, 4])
    rng = np.random.default_rng(10)
    cells = np.column_stack([np.zeros(200, dtype=int), rng.integers(0, 2, 200), np.zeros(200, dtype=int)])
    other = cells.copy()
    other[0] = [2, 1, 3]  # one record replaced by one in otherwise empty cells

    def trace(c):
        seen = []
        mech = dlp.DensityLP(
            schema,
            epsilon=1.0,
            noise=Noise.seeded(1),
            reference=reference,
            m=200,
            progress=lambda f, s: seen.append((f, s)),
        )
        mech.fit(TableSource.from_frame(schema, cat_frame(schema, c)))
        return seen, mech.privacy_cost().details

    assert trace(cells) == trace(other)
