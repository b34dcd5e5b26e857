"""Small, exactly checkable metrics of two histograms, two samples or one table (NOT PRIVATE: the
inputs are raw data; see the package docstring)."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pandas as pd

from ..schema import Schema


def tvd(p: np.ndarray, q: np.ndarray) -> float:
    """Total variation distance between two histograms (counts or probabilities, same cells)."""
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    if p.shape != q.shape:
        raise ValueError(f"histograms must have the same cells, got shapes {p.shape} and {q.shape}")
    sp, sq = p.sum(), q.sum()
    if sp <= 0 or sq <= 0:
        raise ValueError(f"histograms must have positive mass, got sums {sp} and {sq}")
    return float(0.5 * np.abs(p / sp - q / sq).sum())


def cramers_v(table: np.ndarray) -> float:
    """Cramér's V of a contingency table (no bias correction). 0 when a margin has one level."""
    t = np.asarray(table, dtype=float)
    t = t[t.sum(axis=1) > 0][:, t.sum(axis=0) > 0]
    r, c = t.shape
    if min(r, c) < 2:
        return 0.0
    n = t.sum()
    expected = np.outer(t.sum(axis=1), t.sum(axis=0)) / n
    chi2 = float(((t - expected) ** 2 / expected).sum())
    return float(math.sqrt(min(1.0, chi2 / (n * (min(r, c) - 1)))))


def correlation_ratio(codes: np.ndarray, values: np.ndarray) -> float:
    """Correlation ratio eta of a numeric variable on a categorical one (0 if values are constant)."""
    codes = np.asarray(codes, dtype=np.int64)
    values = np.asarray(values, dtype=float)
    total = float(((values - values.mean()) ** 2).sum())
    if total <= 0:
        return 0.0
    counts = np.bincount(codes)
    sums = np.bincount(codes, weights=values)
    seen = counts > 0
    means = sums[seen] / counts[seen]
    between = float((counts[seen] * (means - values.mean()) ** 2).sum())
    return float(math.sqrt(min(1.0, between / total)))


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson correlation; 0 when either variable is constant (undefined)."""
    x = np.asarray(x, dtype=float) - np.mean(x)
    y = np.asarray(y, dtype=float) - np.mean(y)
    den = math.sqrt(float((x * x).sum()) * float((y * y).sum()))
    return float((x * y).sum() / den) if den > 0 else 0.0


def gaussian_mmd2(X: np.ndarray, Y: np.ndarray, *, bandwidth: float) -> float:
    """Unbiased MMD^2 with k(x, y) = exp(-|x - y|^2 / (2 bandwidth^2)) (Gretton et al. 2012)."""
    if bandwidth <= 0:
        raise ValueError(f"bandwidth must be positive, got bandwidth={bandwidth}")
    m, n = len(X), len(Y)
    if m < 2 or n < 2:
        raise ValueError(f"MMD needs at least 2 rows per side, got {m} and {n}")
    g = 1.0 / (2.0 * bandwidth**2)
    kxx = np.exp(-g * sq_dists(X, X))
    kyy = np.exp(-g * sq_dists(Y, Y))
    kxy = np.exp(-g * sq_dists(X, Y))
    return float(
        (kxx.sum() - np.trace(kxx)) / (m * (m - 1)) + (kyy.sum() - np.trace(kyy)) / (n * (n - 1)) - 2.0 * kxy.mean()
    )


def rff_mmd2(X: np.ndarray, Y: np.ndarray, *, bandwidth: float, features: int, rng: np.random.Generator) -> float:
    """MMD^2 estimate with random Fourier features of the same Gaussian kernel (Rahimi & Recht 2007)."""
    if bandwidth <= 0:
        raise ValueError(f"bandwidth must be positive, got bandwidth={bandwidth}")
    d = X.shape[1]
    W = rng.normal(scale=1.0 / bandwidth, size=(d, features)).astype(np.float32)
    b = rng.uniform(0.0, 2.0 * math.pi, size=features).astype(np.float32)

    def mean_embedding(Z: np.ndarray) -> np.ndarray:
        acc = np.zeros(features, dtype=np.float64)
        for start in range(0, len(Z), 10_000):
            acc += np.cos(Z[start : start + 10_000].astype(np.float32) @ W + b).sum(axis=0)
        return acc * math.sqrt(2.0 / features) / len(Z)

    diff = mean_embedding(X) - mean_embedding(Y)
    return float(diff @ diff)


def sq_dists(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    d = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * A @ B.T
    return np.maximum(d, 0.0)


def pmse(scores: np.ndarray, is_synthetic: np.ndarray) -> float:
    """pMSE = mean (p_hat - c)^2 with c the synthetic share (Snoke et al. 2018)."""
    c = float(np.mean(is_synthetic))
    return float(np.mean((np.asarray(scores, dtype=float) - c) ** 2))


def association_matrix(schema: Schema, frame: pd.DataFrame, cells: np.ndarray) -> np.ndarray:
    """Pearson (numeric-numeric), Cramér's V (categorical-categorical), eta (mixed); 1 on the diagonal."""
    cols = schema.kept
    d = len(cols)
    M = np.eye(d)
    values = {c.name: frame[c.name].to_numpy(dtype=float) for c in cols if c.is_numeric}
    for i, j in combinations(range(d), 2):
        ci, cj = cols[i], cols[j]
        if ci.is_numeric and cj.is_numeric:
            v = pearson(values[ci.name], values[cj.name])
        elif not ci.is_numeric and not cj.is_numeric:
            ki, kj = ci.n_cells, cj.n_cells
            table = np.bincount(cells[:, i] * kj + cells[:, j], minlength=ki * kj).reshape(ki, kj)
            v = cramers_v(table)
        elif ci.is_numeric:
            v = correlation_ratio(cells[:, j], values[ci.name])
        else:
            v = correlation_ratio(cells[:, i], values[cj.name])
        M[i, j] = M[j, i] = v
    return M
