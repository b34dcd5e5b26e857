"""Positive-part James-Stein shrinkage of the noisy measurements toward independence (mechanisms.pgm.shrink):
the noise energy it assumes, noise-only relations dropped, strong ones kept, (keys, a, b) marginals."""

import numpy as np
import pytest

from mechanisms.pgm import shrink
from mechanisms.pgm.measurement import Measurement, Measurements

SIGMA = 80.0
ROWS = np.array([0.76, 0.24])  # a skewed yes/no label
COLS = np.array([0.3, 0.2, 0.15, 0.1, 0.08, 0.07, 0.05, 0.05])


def independent_table(n: float = 15_000.0) -> np.ndarray:
    return n * np.outer(ROWS, COLS)


def related_table(n: float = 15_000.0) -> np.ndarray:
    """The label's share ranges 5% - 70% across the columns' values (income by education, say)."""
    share = np.linspace(0.05, 0.7, COLS.size)
    return n * np.stack([COLS * (1 - share), COLS * share])


def mean_factor(table: np.ndarray, seeds: int = 300) -> float:
    rng = np.random.default_rng(7)
    factors = [shrink.shrink_pair(table + rng.normal(0, SIGMA, table.shape), SIGMA)[1] for _ in range(seeds)]
    return float(np.mean(factors))


def test_noise_df_is_the_interactions_expected_noise_energy():
    """Large counts (first order exact): E ||r||^2 / sigma^2 matches noise_df within 3%; the uniform-margin
    count (a - 1)(b - 1) misses it by more than 20% on these skewed margins."""
    x = independent_table(1e7)
    rng = np.random.default_rng(0)
    energy = [
        np.sum(np.square((y := x + rng.normal(0, SIGMA, x.shape)) - shrink._independent(y))) / SIGMA**2
        for _ in range(2000)
    ]
    df = shrink.noise_df(x.shape, x.sum(axis=1), x.sum(axis=0))
    assert np.mean(energy) == pytest.approx(df, rel=0.03)
    assert abs(np.mean(energy) - (2 - 1) * (COLS.size - 1)) > 0.2 * df


def test_noise_only_relation_is_dropped_and_halved_df_is_caught(monkeypatch):
    """A label independent of the column: the mean factor is below 0.15 (measured 0.09: a relation of noise size
    is mostly dropped). The broken variant that assumes half the noise energy keeps 0.36: caught."""
    assert mean_factor(independent_table()) < 0.15
    right = shrink.noise_df
    monkeypatch.setattr(shrink, "noise_df", lambda *a: right(*a) / 2)
    assert mean_factor(independent_table()) > 0.3


def test_strong_relation_is_kept():
    """P(label | value) of the shrunk table is within 0.02 of the noisy table's for every value; s >= 0.95."""
    rng = np.random.default_rng(1)
    x = related_table()
    for _ in range(20):
        y = x + rng.normal(0, SIGMA, x.shape)
        out, s = shrink.shrink_pair(y, SIGMA)
        assert s >= 0.95
        np.testing.assert_allclose(out[1] / out.sum(axis=0), y[1] / y.sum(axis=0), atol=0.02)


def test_margins_are_kept():
    rng = np.random.default_rng(2)
    y = independent_table() + rng.normal(0, SIGMA, (2, COLS.size))
    out, _ = shrink.shrink_pair(y, SIGMA)
    np.testing.assert_allclose(out.sum(axis=0), y.sum(axis=0), rtol=1e-9)
    np.testing.assert_allclose(out.sum(axis=1), y.sum(axis=1), rtol=1e-9)


def given_table(n: float = 15_000.0) -> np.ndarray:
    """(label, a, b): a and b strongly related (b mostly equals a), both independent of the label."""
    k = 5
    ab = np.full((k, k), 0.02 / (k - 1)) + np.eye(k) * (0.98 - 0.02 / (k - 1))
    ab /= ab.sum()
    return n * ROWS[:, None, None] * ab[None]


def label_dependence(table: np.ndarray, cells: np.ndarray) -> tuple[float, float]:
    """Mean |P(label | a) - P(label)| and mean |P(label | a, b) - P(label)| over the (a, b) cells of ``cells``."""
    share = table[1].sum() / table.sum()
    ka = table.sum(axis=2)
    return float(np.abs(ka[1] / ka.sum(axis=0) - share).mean()), float(
        np.abs(table[1][cells] / table.sum(axis=0)[cells] - share).mean()
    )


def test_given_keys_drops_the_labels_noise_and_keeps_the_pair():
    """(label, a, b) with a, b related and independent of the label, 50 draws: the label's dependence on a and
    on (a, b) (the diagonal cells, where the rows are) is less than half the noisy table's on average, the
    3-way factor is below 0.3 on average, and the (a, b) relation is kept (the diagonal share within 0.01)."""
    rng = np.random.default_rng(3)
    x = given_table()
    diagonal = np.eye(5, dtype=bool)
    noisy, shrunk, factors = [], [], []
    for _ in range(50):
        y = x + rng.normal(0, SIGMA, x.shape)
        out, s = shrink.shrink_given(y, SIGMA)
        factors.append(s)
        ab_in, ab_out = y.sum(axis=0), out.sum(axis=0)
        assert np.trace(ab_out) / ab_out.sum() == pytest.approx(np.trace(ab_in) / ab_in.sum(), abs=0.01)
        noisy.append(label_dependence(y, diagonal))
        shrunk.append(label_dependence(out, diagonal))
    assert np.mean(factors) < 0.3
    assert np.all(np.mean(shrunk, axis=0) < 0.5 * np.mean(noisy, axis=0))


def test_measurements_shrunk_where_the_key_sits_anywhere():
    """shrink_measurements: 1-way and weighted measurements are kept as they are, a pair is shrunk, and a
    (a, key, b) marginal gives the same values as the (key, a, b) one, transposed."""
    rng = np.random.default_rng(4)
    sizes = {"key": 2, "a": 5, "b": 5, "c": 8}
    cube = given_table() + rng.normal(0, SIGMA, (2, 5, 5))
    pair = independent_table() + rng.normal(0, SIGMA, (2, 8))
    one = rng.normal(100, SIGMA, 8)
    log = Measurements()
    log.add(Measurement(("c",), one, SIGMA))
    log.add(Measurement(("a",), one[:5], SIGMA, np.ones(5)))
    log.add(Measurement(("key", "c"), pair.ravel(), SIGMA))
    log.add(Measurement(("key", "a", "b"), cube.ravel(), SIGMA))
    log.add(Measurement(("a", "key", "b"), np.transpose(cube, (1, 0, 2)).ravel(), SIGMA))
    out, factors = shrink.shrink_measurements(log, sizes, ("key",))
    assert out.items[0] is log.items[0] and out.items[1] is log.items[1]
    assert set(factors) == {("key", "c"), ("key", "a", "b"), ("a", "key", "b")}
    np.testing.assert_allclose(out.items[2].values, shrink.shrink_pair(pair, SIGMA)[0].ravel())
    first = out.items[3].values.reshape(2, 5, 5)
    moved = np.transpose(out.items[4].values.reshape(5, 2, 5), (1, 0, 2))
    np.testing.assert_allclose(moved, first, rtol=1e-12)
    assert all(m.sigma == SIGMA for m in out.items)
    assert not np.allclose(first, cube)  # it did shrink


def test_mst_fits_the_shrunk_measurements_and_publishes_the_raw_ones():
    """MST with shrink=true, same seed as without: the same noisy measurements are published (post-processing
    touches only what Private-PGM fits), and the model differs (it fitted the shrunk ones)."""
    from mechanisms.noise import Noise
    from mechanisms.runner import build
    from mechanisms.source import TableSource
    from tests.mechanisms.synthesizers.test_mst_key_columns import DELTA, EPS, N, SCHEMA, _raw

    fits = []
    for on in (False, True):
        params = {"key_columns": "y", "iters": 100, "shrink": on}
        mech = build("mst", SCHEMA, epsilon=EPS, delta=DELTA, params=params, noise=Noise.seeded(5), n=N)
        fits.append(mech.fit(TableSource.from_frame(SCHEMA, _raw())))
    raw, shrunk = fits
    assert [m.clique for m in raw.measurements.items] == [m.clique for m in shrunk.measurements.items]
    for a, b in zip(raw.measurements.items, shrunk.measurements.items):
        np.testing.assert_array_equal(a.values, b.values)
    assert not np.allclose(raw.model.marginal(("y", "x")), shrunk.model.marginal(("y", "x")))
