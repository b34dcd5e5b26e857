"""Tests for mechanisms/synthesizers/kdtree/ (Kreačić et al. UAI 2023, Algorithms 1-5).

Tolerances are stated per test; all randomness is seeded (``Noise.seeded``), so every check is
deterministic, and each statistical check is one that a wrong law would fail.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mechanisms.synthesizers import kdtree
from mechanisms.synthesizers.kdtree import (
    CellGrid,
    KDTreeAdaptive,
    KDTreeGrid,
    binomial,
    conditioned_dlap,
    count_threshold,
    dlap_tail,
    sample_empty_cells,
)
from mechanisms.noise import Noise
from mechanisms.runner import build, run
from mechanisms.schema import Column, Schema
from mechanisms.source import TableSource
from tests.audit import audit_scalar
from tests.mechanisms.npz import through_npz


def numeric_schema(d: int, lower=0.0, upper=1.0) -> Schema:
    return Schema(columns=tuple(Column(f"x{j}", "continuous", lower=lower, upper=upper) for j in range(d)))


def source(schema: Schema, X) -> TableSource:
    X = np.asarray(X, dtype=float)
    return TableSource.from_frame(
        schema, pd.DataFrame({c.name: X[:, j].astype(str) for j, c in enumerate(schema.kept)})
    )


def mixed_frame(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.normal(0, 1, n)
    return pd.DataFrame({"a": a.astype(str), "k": rng.integers(0, 5, n).astype(str), "c": np.where(a > 0, "hi", "lo")})


MIXED = Schema(
    columns=(
        Column("a", "continuous", lower=-4, upper=4),
        Column("k", "integer", lower=0, upper=4),
        Column("c", "categorical", categories=("hi", "lo", "never")),
    )
)


# -- discrete Laplace tail formulas ------------------------------------------------------------------


def test_tail_and_conditioned_draws_match_the_discrete_laplace():
    noise = Noise.seeded(1)
    scale, T = 2.0, 3
    x = noise.laplace_int(np.zeros(400_000, dtype=np.int64), scale=scale)
    # P[X >= T]: empirical within 4 standard errors of the closed form
    p = dlap_tail(scale, T)
    assert abs(np.mean(x >= T) - p) < 4 * math.sqrt(p * (1 - p) / len(x))
    # conditioned draws: same law as X | X >= T (two-sample chi-square on the first few values)
    cond = conditioned_dlap(Noise.seeded(2), 20_000, scale=scale, T=T)
    ref = x[x >= T]
    assert cond.min() >= T
    bins = np.arange(T, T + 8)
    a = np.array([np.sum(cond == b) for b in bins] + [np.sum(cond >= bins[-1] + 1)])
    b = np.array([np.sum(ref == v) for v in bins] + [np.sum(ref >= bins[-1] + 1)])
    assert stats.chi2_contingency(np.vstack([a, b]))[1] > 1e-3


def test_count_threshold_rounds_up_and_is_positive():
    assert count_threshold(0.0) == 1 and count_threshold(2.1) == 3 and count_threshold(3.0) == 3


def test_binomial_beyond_64_bits_uses_an_accurate_law():
    rng = np.random.default_rng(0)
    draws = np.array([binomial(rng, 10**40, 1e-38) for _ in range(2000)])  # mean 100
    assert abs(draws.mean() - 100) < 4 * math.sqrt(100 / 2000)
    assert binomial(rng, 0, 0.5) == 0 and binomial(rng, 10, 0.0) == 0


def test_binomial_beyond_the_numpy_limit_has_the_exact_law_not_a_poisson_approximation(monkeypatch):
    """The >= 2^62-trial path (Poissonisation: distinct trials hit by Poisson-many uniform points), run at
    a small size where it can be compared: Binomial(50, 0.3) has variance 10.5; the old Poisson(15)
    approximation (a delta of up to p, not pure DP) had variance 15 and fails the chi-square test."""
    monkeypatch.setattr(kdtree, "EXACT_BINOMIAL_LIMIT", 10)
    rng = np.random.default_rng(1)
    draws = np.array([binomial(rng, 50, 0.3) for _ in range(4000)])
    assert abs(draws.var() - 10.5) < 1.0
    pmf = stats.binom.pmf(np.arange(51), 50, 0.3)
    edges = [0, 11, 13, 14, 15, 16, 17, 19, 51]  # bins with expected counts well above 5
    observed = [np.sum((draws >= a) & (draws < b)) for a, b in zip(edges, edges[1:])]
    expected = [pmf[a:b].sum() * len(draws) for a, b in zip(edges, edges[1:])]
    assert stats.chisquare(observed, expected)[1] > 1e-3


# -- implicit empty cells ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["rank", "rejection"])
def test_empty_cells_are_uniform_distinct_and_never_occupied(monkeypatch, path):
    _force_path(monkeypatch, path)
    grid = CellGrid([5, 4])
    occupied_cells = np.array([[0, 0], [1, 2], [4, 3]])
    occupied = np.sort(grid.keys(occupied_cells))
    rng = np.random.default_rng(3)
    freq = np.zeros(20)
    for _ in range(3000):
        cells = sample_empty_cells(rng, grid, occupied, 5)
        keys = grid.keys(cells)
        assert len(np.unique(keys)) == 5 and not np.isin(keys, occupied).any()
        freq[keys] += 1
    free = np.setdiff1d(np.arange(20), occupied)
    assert freq[occupied].sum() == 0
    assert stats.chisquare(freq[free])[1] > 1e-3  # uniform over the 17 free cells


def test_multi_word_keys_identify_cells_of_a_huge_grid():
    grid = CellGrid([10**4] * 10)  # 10^40 cells: three int64 words
    assert grid.total == 10**40 and len(grid.words) == 3
    c = np.array([[1] * 10, [1] * 9 + [2], [1] * 10])
    k = grid.keys(c)
    assert k[0] == k[2] and k[0] != k[1]


def _force_path(monkeypatch, path: str) -> None:
    """Run the rejection sampler on a small (one-word) grid, where the exact rank path is the default."""
    if path == "rejection":
        monkeypatch.setattr(kdtree, "_empty_by_rank", kdtree._empty_by_rejection)


def test_dense_occupation_of_a_large_grid_never_fails_and_leaves_the_occupied_cells_alone():
    """On grids above 16 x 2^20 cells with fewer than a quarter free, the old sampler
    raised "grid too densely occupied": whether a release failed depended on the data (one replaced record
    could flip it). The path is now chosen from the grid alone and draws from the complement exactly."""
    grid = CellGrid([4097, 4096])  # 16,781,312 cells > 16 x 2^20
    occupied = np.arange(13_000_000, dtype=np.int64)  # 77% occupied: fewer than a quarter free
    cells = sample_empty_cells(np.random.default_rng(0), grid, occupied, 2000)
    keys = grid.keys(cells)
    assert len(np.unique(keys)) == 2000 and keys.min() >= 13_000_000


def test_rank_mapping_picks_exactly_the_free_cells_in_order():
    grid = CellGrid([7, 3])
    occupied = np.array([0, 1, 5, 6, 7, 20])  # both ends of the index range occupied
    everything = kdtree._empty_by_rank(np.random.default_rng(0), grid, occupied, 15)
    assert sorted(grid.keys(everything).tolist()) == sorted(set(range(21)) - set(occupied.tolist()))


def _implicit_vs_explicit(monkeypatch, path):
    """Grid on 40 cells with 4 occupied; threshold 2: compare the implicit empty cells with Algorithm 4."""
    _force_path(monkeypatch, path)
    schema = numeric_schema(1)
    X = np.repeat([[0.01], [0.26], [0.51], [0.76]], 50, axis=0)  # cells 0, 10, 20, 30 of 40
    src = source(schema, X)
    src.frame()
    runs, eps = 1500, 1.0
    number, weights, hits = [], [], np.zeros(40)
    for seed in range(runs):
        m = KDTreeGrid(schema, epsilon=eps, noise=Noise.seeded(seed), width=1 / 40, threshold=2)
        m.fit(src)
        rel = m.released
        empty = ~np.isin(rel.coords[:, 0], [0, 10, 20, 30])  # the occupied cells (count 50 each)
        assert empty.sum() == m.diagnostics["released_empty_cells"]
        assert np.all(np.diff(rel.coords[:, 0]) > 0)  # canonical order: position does not tell empty cells
        number.append(int(empty.sum()))
        weights.extend(rel.weights[empty].tolist())
        hits[rel.coords[empty, 0]] += 1
    # Algorithm 4, explicitly: DLap(2/ε) on each of the 36 empty cells, keep those >= 2
    noise = Noise.seeded(10**6)
    eta = noise.laplace_int(np.zeros((runs, 36), dtype=np.int64), scale=2 / eps)
    exp_number = (eta >= 2).sum(1)
    exp_weights = eta[eta >= 2]
    return np.array(number), np.array(weights), hits, exp_number, exp_weights


@pytest.mark.parametrize("path", ["rank", "rejection"])
def test_implicit_empty_cells_agree_in_law_with_explicit_algorithm_4(monkeypatch, path):
    number, weights, hits, exp_number, exp_weights = _implicit_vs_explicit(monkeypatch, path)
    # number of surviving empty cells: Binomial(36, p); means within 4 standard errors, KS on the laws
    p = dlap_tail(2.0, 2)
    se = math.sqrt(36 * p * (1 - p) / len(number))
    assert abs(number.mean() - 36 * p) < 4 * se and abs(exp_number.mean() - 36 * p) < 4 * se
    assert stats.ks_2samp(number, exp_number).pvalue > 1e-3
    # their weights: the same conditioned law
    top = 7
    a = [np.sum(weights == v) for v in range(2, top)] + [np.sum(weights >= top)]
    b = [np.sum(exp_weights == v) for v in range(2, top)] + [np.sum(exp_weights >= top)]
    assert stats.chi2_contingency(np.vstack([a, b]))[1] > 1e-3
    # never an occupied cell, uniform over the 36 empty ones
    occupied = [0, 10, 20, 30]
    assert hits[occupied].sum() == 0
    assert stats.chisquare(np.delete(hits, occupied))[1] > 1e-3


def test_adaptive_tree_matches_a_brute_force_algorithm_3():
    """Tiny tree (d = 1, h = 2, h'-h = 3, low τ so empty nodes DO split): compare with an explicit
    recursive implementation of Algorithms 2-3 + Algorithm 1 that noises every node and every leaf."""
    schema = numeric_schema(1)
    X = np.concatenate([np.full(30, 0.1), np.full(6, 0.6)])[:, None]
    src = source(schema, X)
    src.frame()
    eps, h, L, tau, t = 2.0, 2, 3, 1.5, 2.0
    runs = 1500
    impl, empty_splits = [], 0
    for seed in range(runs):
        m = KDTreeAdaptive(
            schema, epsilon=eps, noise=Noise.seeded(seed), levels_independent=h, levels_adaptive=L, tau=tau, threshold=t
        )
        m.fit(src)
        impl.append((int(m.config["leaves"]), len(m.released.weights), int(m.released.weights.sum())))
        empty_splits += m.diagnostics["empty_nodes_split"] > 0
    dec_scale, cnt_scale = 2 * L / (eps / 2), 2 / (eps / 2)
    rng = np.random.default_rng(99)

    def dlap(scale, size=None):
        q = -math.expm1(-1 / scale)
        return rng.geometric(q, size) - rng.geometric(q, size)

    def leaves(lo, hi, depth):
        count = int(np.sum((X[:, 0] >= lo) & ((X[:, 0] < hi) | (hi == 1.0))))
        if depth >= h + L or (depth >= h and count + dlap(dec_scale) <= tau):
            return [count]
        mid = (lo + hi) / 2
        return leaves(lo, mid, depth + 1) + leaves(mid, hi, depth + 1)

    brute = []
    for _ in range(runs):
        counts = np.array(leaves(0.0, 1.0, 0))
        noisy = counts + dlap(cnt_scale, len(counts))
        kept = noisy[noisy >= count_threshold(t)]
        brute.append((len(counts), len(kept), int(kept.sum())))
    impl, brute = np.array(impl), np.array(brute)
    assert empty_splits > 100  # empty nodes did split in many runs: the implicit path was exercised
    for j in range(3):
        assert stats.ks_2samp(impl[:, j], brute[:, j]).pvalue > 1e-3, j


# -- privacy -----------------------------------------------------------------------------------------


def _count_release_draws(mech: KDTreeGrid):
    """k independent releases of two cells' counts through the mechanism's own noise + threshold code."""
    T = count_threshold(0.5)

    def draw(ca, cb):
        def g(k):
            v = mech._noisy_counts(np.tile([ca, cb], k), mech.epsilon).reshape(k, 2)
            v = np.where(v >= T, v, 0)
            return v[:, 0] - v[:, 1]

        return g

    # D: counts (6, 5); D': one record moved from the first cell to the second
    return draw(6, 5), draw(5, 6)


class HalfScaleGrid(KDTreeGrid):
    """Mutant: half the discrete Laplace scale (sensitivity taken as 1 instead of 2): really 2ε-DP."""

    def _count_scale(self, eps_counts):
        return super()._count_scale(eps_counts) / 2


def test_counts_release_passes_a_dp_audit_and_a_half_scale_mutant_is_caught():
    schema = numeric_schema(1)
    honest = KDTreeGrid(schema, epsilon=1.0, noise=Noise.seeded(11))
    assert audit_scalar(*_count_release_draws(honest)) <= 1.0
    mutant = HalfScaleGrid(schema, epsilon=1.0, noise=Noise.seeded(12))
    assert audit_scalar(*_count_release_draws(mutant)) > 1.0


def test_noise_scales_follow_the_sensitivity_derivations():
    m = KDTreeAdaptive(
        numeric_schema(2), epsilon=1.0, noise=Noise.seeded(0), split=0.25, levels_independent=2, levels_adaptive=4
    )
    m.fit(source(numeric_schema(2), np.random.default_rng(0).random((500, 2))))
    c = m.privacy_cost()
    assert c.guarantee == "pure" and c.delta == 0
    assert c.details["epsilon_partition"] + c.details["epsilon_counts"] <= 1.0 + 1e-12
    assert m.config["decision_scale"] == pytest.approx(2 * 4 / 0.25)
    assert m.config["count_scale"] == pytest.approx(2 / 0.75)


def test_a_record_outside_the_bounds_is_clipped_and_never_widens_the_box():
    schema = numeric_schema(1, lower=0.0, upper=10.0)
    X = np.concatenate([np.full(200, 5.0), [1e9]])[:, None]
    for cls, kw in ((KDTreeGrid, {"width": 0.1}), (KDTreeAdaptive, {"levels_independent": 3, "levels_adaptive": 2})):
        m = cls(schema, epsilon=100.0, noise=Noise.seeded(0), threshold=1, **kw)
        m.fit(source(schema, X))
        s = m.sample(2000)["x0"]
        assert s.min() >= 0.0 and s.max() <= 10.0
        lo, width = m._cell_bounds(m.released.coords, m.released.depth)
        assert (lo + width).max() <= 1.0 + 1e-12  # cells lie inside the public box
        assert m.released.weights.sum() == 201  # the outlier counted in the last cell (ε = 100: exact)


# -- utility sanity ----------------------------------------------------------------------------------


def test_with_negligible_noise_the_grid_releases_the_true_histogram():
    schema = numeric_schema(2)
    X = np.random.default_rng(5).random((1000, 2))
    m = KDTreeGrid(schema, epsilon=100.0, noise=Noise.seeded(0), width=0.25, threshold=1)
    m.fit(source(schema, X))
    true = np.histogram2d(X[:, 0], X[:, 1], bins=4, range=[[0, 1], [0, 1]])[0]
    got = np.zeros((4, 4))
    got[m.released.coords[:, 0], m.released.coords[:, 1]] = m.released.weights
    assert np.array_equal(got, true)


def test_adaptive_refines_where_the_data_is_dense():
    schema = numeric_schema(2)
    rng = np.random.default_rng(1)
    X = np.vstack([0.2 + 0.01 * rng.standard_normal((20000, 2)), rng.random((2000, 2))]).clip(0, 1)
    m = KDTreeAdaptive(schema, epsilon=5.0, noise=Noise.seeded(1), levels_independent=2, levels_adaptive=10)
    m.fit(source(schema, X))
    rel = m.released
    deep = rel.depth[(rel.coords[:, 0] / 2.0 ** m._splits(rel.depth)[:, 0]) < 0.25]
    assert deep.max() >= 10  # leaves near the dense spot are much deeper than h = 2
    syn = m.sample(20000)
    frac_near = np.mean((np.abs(syn["x0"] - 0.2) < 0.1) & (np.abs(syn["x1"] - 0.2) < 0.1))
    assert abs(frac_near - 20000 / 22000) < 0.05


def test_mixed_table_keeps_declared_categories_and_integer_values():
    for cls, kw in ((KDTreeGrid, {"width": 0.125}), (KDTreeAdaptive, {})):  # grid: a cell edge at a = 0
        m = cls(MIXED, epsilon=1.0, noise=Noise.seeded(3), **kw)
        m.fit(TableSource.from_frame(MIXED, mixed_frame()))
        s = m.sample(2000)
        assert set(s["c"]) <= {"hi", "lo", "never"} and set(s["k"]) <= set(range(5))
        assert s["a"].between(-4, 4).all()
        # the category/sign correlation of the data survives (a > 0 <=> c = hi)
        assert np.mean((s["a"] > 0) == (s["c"] == "hi")) > 0.8


def test_grid_with_1e40_cells_runs_and_samples_empty_cells_implicitly():
    schema = numeric_schema(10)
    rng = np.random.default_rng(2)
    X = rng.random((4, 10))[rng.integers(0, 4, 4000)]  # ~1000 rows per atom: above Theorem 5's t = 737
    J = 10**40
    t = 2.0 * math.log(J / 60)  # about 37 surviving empty cells expected at ε = 1
    m = KDTreeGrid(schema, epsilon=1.0, noise=Noise.seeded(4), width=1e-4, threshold=t)
    m.fit(source(schema, X))
    assert m.config["cells"] == str(J)
    rel = m.released
    assert 10 <= m.diagnostics["released_empty_cells"] <= 80
    keys = CellGrid([10**4] * 10).keys(rel.coords)
    assert len(np.unique(keys)) == len(keys)
    assert len(m.sample(100)) == 100
    # the default (Theorem 5) threshold keeps empty cells out altogether
    m = KDTreeGrid(schema, epsilon=1.0, noise=Noise.seeded(4), width=1e-4)
    m.fit(source(schema, X))
    assert m.diagnostics["released_empty_cells"] == 0 and len(m.released.weights) > 0


def test_default_parameters_follow_the_theorems():
    m = KDTreeGrid(numeric_schema(2), epsilon=1.0, noise=Noise.seeded(0))
    cfg = m._resolve(100_000)
    w = (16 * math.sqrt(2 * math.e) * math.log(20) / 1e5) ** (1 / 3)  # Theorem 3 minimiser
    assert cfg["bins_per_axis"] == math.ceil(1 / w)
    assert cfg["threshold"] == pytest.approx(8 * math.log(cfg["bins_per_axis"] ** 2))  # Theorem 5, δ = 1/J
    a = KDTreeAdaptive(numeric_schema(3), epsilon=2.0, noise=Noise.seeded(0))
    cfg = a._resolve(50_000)
    h, L = cfg["levels_independent"], cfg["levels_adaptive"]
    assert L == 9  # three rounds over three axes, >= 8
    assert cfg["tau"] == pytest.approx(2 * L / 1.0 * math.log((2**h + 50_000 * L) / 0.05))  # Lemma 10


def test_bad_parameters_are_refused_with_the_value():
    with pytest.raises(ValueError, match="split"):
        KDTreeAdaptive(numeric_schema(1), epsilon=1.0, split=1.5)
    with pytest.raises(ValueError, match="expected empty cells"):  # refused at build time, before any data
        build("kdtree-grid", numeric_schema(10), epsilon=1.0, params={"width": 1e-4, "threshold": 0})
    with pytest.raises(ValueError, match="expected empty cells"):
        build(
            "kdtree-adaptive",
            numeric_schema(10),
            epsilon=1.0,
            params={"levels_independent": 200, "levels_adaptive": 10, "tau": 0},
        )


# -- contract: summary round trip, runner -------------------------------------------------------------


@pytest.mark.parametrize("name", ["kdtree-grid", "kdtree-adaptive"])
def test_summary_round_trip_and_runner(name):
    mech = build(name, MIXED, epsilon=1.0, params={"placement": "center"}, noise=Noise.seeded(5))
    release = run(mech, TableSource.from_frame(MIXED, mixed_frame()), rows=500)
    assert len(release.synthetic) == 500 and list(release.synthetic.columns) == ["a", "k", "c"]
    again = type(mech).from_summary(
        MIXED, through_npz(mech.summary()), epsilon=1.0, params={"placement": "center"}, noise=Noise.seeded(6)
    )
    assert np.array_equal(again.released.coords, mech.released.coords)
    assert np.array_equal(again.released.weights, mech.released.weights)
    s = again.sample(300)
    assert len(s) == 300
    report = release.report()["mechanism_report"]
    assert report["released_cells"] == len(mech.released.weights)
    assert not set(report) & {"nonempty_cells", "nonempty_leaves", "released_empty_cells"}  # not DP: never reported
    assert "n_empty" not in mech.summary()
