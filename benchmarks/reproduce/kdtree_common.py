"""Shared pieces of the KD-tree benchmarks: the G.1 mixture data, public schemas, and the RKHS distance.

The G.1 data follows Balog et al. 2018's generator (matejbalog/RKHS-private-database, ``src/data.py``),
re-implemented: numpy legacy seed 0, C = 10 component means
~ N(100·1, 200² I) (200 and 30 are STANDARD DEVIATIONS), weights ∝ 1/k, memberships by ``choice``, then
one N(mean, 30² I) draw per row in row order.

Metric: Balog's RKHS distance with k(x, y) = exp(-γ‖x - y‖²), γ = 1e-4 / D, between the data's kernel
mean and Σ w_m k(z_m, ·):  Δ = sqrt(wᵀK_zz w - 2 wᵀ k̄_zx + mean K_xx), k̄_zx over ALL n rows.
mean K_xx: the reference values stored with Balog's data for D = 2, 5 (computed on all rows); for other
D an estimate on a fixed 10,000-row subsample (stated wherever used).
"""

from __future__ import annotations

import os
import time

import numpy as np
import pandas as pd

from mechanisms.schema import Column, Schema  # noqa: E402

from mechanisms.source import TableSource  # noqa: E402

G1_BOUNDS = (-800.0, 1000.0)  # public box for the G.1 data (round numbers, every D; a few rows clip in D = 30)
G1_MEAN_KXX = {2: 0.2121599, 5: 0.1672985}  # Balog's stored references (all 100,000 rows)
OUT_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "out")


def g1_mixture(n: int = 100_000, d: int = 2) -> np.ndarray:
    rs = np.random.RandomState(0)
    means = rs.normal(loc=100.0 * np.ones(d), scale=200.0, size=(10, d))
    w = 1.0 / np.arange(1, 11)
    member = rs.choice(range(10), size=n, p=w / w.sum())
    return means[member] + 30.0 * rs.standard_normal((n, d))  # row by row == one (n, d) draw


def numeric_schema(d: int, lower: float, upper: float) -> Schema:
    return Schema(columns=tuple(Column(f"x{j}", "continuous", lower=lower, upper=upper) for j in range(d)))


def numeric_source(schema: Schema, X: np.ndarray) -> TableSource:
    """A TableSource over an in-memory numeric array already inside the public box.

    The prepared frame is installed directly (what ``Schema.prepare`` would produce after parsing
    strings), so timings measure the mechanism, not CSV parsing; clipping is applied here.
    """
    cols = schema.kept
    frame = pd.DataFrame({c.name: np.clip(X[:, j], c.lower, c.upper) for j, c in enumerate(cols)})
    src = TableSource(schema, frame=frame)
    src._prepared = frame
    return src


def rbf_cross_mean(Z: np.ndarray, X: np.ndarray, gamma: float, chunk: int = 2_000_000) -> np.ndarray:
    """Row means over X of exp(-γ‖z - x‖²) for every z (chunked)."""
    out = np.zeros(len(Z))
    zz = (Z**2).sum(1)
    step = max(1, chunk // max(len(Z), 1))
    for s in range(0, len(X), step):
        Xc = X[s : s + step]
        d2 = zz[:, None] + (Xc**2).sum(1)[None, :] - 2.0 * Z @ Xc.T
        out += np.exp(-gamma * np.maximum(d2, 0.0)).sum(1)
    return out / len(X)


def mean_kxx(X: np.ndarray, gamma: float, *, d: int, subsample: int = 10_000) -> tuple[float, str]:
    if d in G1_MEAN_KXX and len(X) == 100_000:
        return G1_MEAN_KXX[d], "Balog reference (all rows)"
    rs = np.random.RandomState(1)
    S = X[rs.choice(len(X), size=min(subsample, len(X)), replace=False)]
    return float(rbf_cross_mean(S, S, gamma).mean()), f"{len(S)}-row subsample"


def rkhs_distance(Z: np.ndarray, w: np.ndarray, X: np.ndarray, kxx: float, gamma: float) -> float:
    w = np.asarray(w, float)
    w = w / w.sum()
    zz = (Z**2).sum(1)
    Kzz = np.exp(-gamma * np.maximum(zz[:, None] + zz[None, :] - 2 * Z @ Z.T, 0.0))
    val = w @ Kzz @ w - 2.0 * w @ rbf_cross_mean(Z, X, gamma) + kxx
    return float(np.sqrt(max(val, 0.0)))


def timer() -> callable:
    t0 = time.perf_counter()
    return lambda: time.perf_counter() - t0
