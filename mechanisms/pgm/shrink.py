"""Shrinking the noisy measurements' interactions toward independence before Private-PGM fits them.

Post-processing of the noisy measurements only: no data access and no privacy cost. A measured pair table
``y = x + e`` (discrete Gaussian noise of known std sigma per cell) is split into its independence fit within
its own margins and the interaction left over,

    yhat = outer(row sums, column sums) / total      (clipped at 0),     r = y - yhat,

and the interaction is shrunk by the positive-part James-Stein factor (James & Stein 1961; the positive-part
estimator, Baranchik 1964):

    s = max(0, 1 - sigma^2 df / ||r||^2),            y' = yhat + s r.

``df`` is the noise energy the interaction holds, E ||r||^2 / sigma^2 when x is independent. To first order in
the noise, r = A e B with A = I - p 1^T, B = I - 1 q^T (p, q the row and column shares), so

    df = tr(A^T A) tr(B B^T) = (a - 2 + a ||p||^2) (b - 2 + b ||q||^2),

which is (a - 1)(b - 1) for uniform margins and up to about twice each factor for skewed ones (a 76/24 label:
1.27, not 1). A pair whose interaction is noise only has ||r||^2 near sigma^2 df and s near 0 (the model
gets the margins' independence); a real relation many noise-sizes strong keeps s near 1. With the constant
df the estimator still dominates the raw interaction in squared error wherever df < 2 (p - 2), p the number of
interaction cells (p >= 5 for independent-like margins).

A measured ``(keys, a, b)`` marginal is shrunk the same way toward a independent of b given the keys, within
its own margins: its (keys, a) and (keys, b) margins (noise std sigma sqrt(|b|) and sigma sqrt(|a|) per cell)
are first shrunk as pairs toward independence of the keys, the target is
t'[k, a, b] = m'_ka m'_kb / m_k, and the conditional interaction r = y - m_ka m_kb / m_k (df summed over the
key slices) is shrunk by its own factor: y' = t' + s r. Every shrunk table keeps its measured 1-way margins
(and a pair its row and column sums) up to the clipping at 0.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from .measurement import Measurement, Measurements


def noise_df(table_shape: tuple[int, int], rows: np.ndarray, cols: np.ndarray) -> float:
    """E ||r||^2 / sigma^2 for a table of ``table_shape`` whose true counts are independent with row sums
    ``rows`` and column sums ``cols`` (first order in the noise; see the module docstring)."""
    a, b = table_shape
    total = float(np.sum(rows))
    if total <= 0:
        return float((a - 1) * (b - 1))
    p = np.clip(np.asarray(rows, float), 0, None)
    q = np.clip(np.asarray(cols, float), 0, None)
    p = p / p.sum() if p.sum() > 0 else np.full(a, 1 / a)
    q = q / q.sum() if q.sum() > 0 else np.full(b, 1 / b)
    return float((a - 2 + a * p.dot(p)) * (b - 2 + b * q.dot(q)))


def _independent(y: np.ndarray) -> np.ndarray:
    """outer(row sums, column sums) / total, clipped at 0 (zeros where the total is not positive)."""
    rows, cols, total = y.sum(axis=1), y.sum(axis=0), y.sum()
    if total <= 0:
        return np.zeros_like(y)
    return np.clip(np.outer(rows, cols) / total, 0, None)


def shrink_factor(r: np.ndarray, sigma: float, df: float) -> float:
    """The positive-part James-Stein factor max(0, 1 - sigma^2 df / ||r||^2)."""
    energy = float(np.sum(np.square(r)))
    if energy <= 0:
        return 0.0
    return max(0.0, 1.0 - sigma**2 * df / energy)


def shrink_pair(y: np.ndarray, sigma: float) -> tuple[np.ndarray, float]:
    """A noisy a x b table with its interaction shrunk toward independence; returns (y', s)."""
    y = np.asarray(y, dtype=np.float64)
    if y.ndim != 2 or min(y.shape) < 2:
        return y.copy(), 1.0
    yhat = _independent(y)
    r = y - yhat
    s = shrink_factor(r, sigma, noise_df(y.shape, y.sum(axis=1), y.sum(axis=0)))
    return yhat + s * r, s


def shrink_given(y: np.ndarray, sigma: float) -> tuple[np.ndarray, float]:
    """A noisy K x a x b table (K the key cells, flattened) shrunk toward a independent of b given the keys,
    the (keys, a) and (keys, b) margins shrunk as pairs first; returns (y', s of the conditional interaction)."""
    y = np.asarray(y, dtype=np.float64)
    k, a, b = y.shape
    m_ka, m_kb, m_k = y.sum(axis=2), y.sum(axis=1), y.sum(axis=(1, 2))
    shrunk_ka = shrink_pair(m_ka, sigma * math.sqrt(b))[0] if k > 1 else m_ka
    shrunk_kb = shrink_pair(m_kb, sigma * math.sqrt(a))[0] if k > 1 else m_kb
    inv = np.divide(1.0, m_k, out=np.zeros(k), where=m_k > 0)
    target = np.clip(m_ka, 0, None)[:, :, None] * np.clip(m_kb, 0, None)[:, None, :] * inv[:, None, None]
    shrunk = np.clip(shrunk_ka, 0, None)[:, :, None] * np.clip(shrunk_kb, 0, None)[:, None, :] * inv[:, None, None]
    r = y - target
    df = np.array([noise_df((a, b), m_ka[j], m_kb[j]) if m_k[j] > 0 else 0.0 for j in range(k)])
    if k == 1:
        s = shrink_factor(r, sigma, float(df.sum()))
        return shrunk + s * r, s
    # the relation of a and b the key cells share (each key cell's share of it in proportion to its rows), and
    # what differs between key cells (the 3-way interaction), each shrunk by its own noise energy
    w = np.clip(m_k, 0, None)
    w = w / w.sum() if w.sum() > 0 else np.full(k, 1 / k)
    common = w[:, None, None] * r.sum(axis=0)[None]
    differs = r - common
    s_common = shrink_factor(common, sigma, float(df.sum() * w.dot(w)))
    s = shrink_factor(differs, sigma, float(df.sum() * (1 + w.dot(w)) - 2 * w.dot(df)))
    return shrunk + s_common * common + s * differs, s


def shrink_measurements(
    measurements: Measurements, sizes: Mapping[str, int], keys: Sequence[str] = ()
) -> tuple[Measurements, dict]:
    """A copy of ``measurements`` with every identity-query pair shrunk toward independence
    (:func:`shrink_pair`) and every (keys, a, b) marginal toward a independent of b given the keys it holds
    (:func:`shrink_given`); 1-way, weighted and other measurements unchanged, each with its sigma. Returns the
    copy and each shrunk clique's factor s (post-processing of the noisy measurements)."""
    out, factors = Measurements(), {}
    keys = tuple(keys)
    for m in measurements.items:
        clique = tuple(m.clique)
        shape = tuple(int(sizes[c]) for c in clique)
        given = [c for c in clique if c in keys]
        rest = [c for c in clique if c not in keys]
        if m.weights is not None or len(clique) < 2:
            out.items.append(m)
            continue
        y = np.asarray(m.values, dtype=np.float64).reshape(shape)
        if len(clique) == 2:
            values, s = shrink_pair(y, m.sigma)
        elif given and len(rest) == 2:
            order = [clique.index(c) for c in given + rest]
            cube = np.transpose(y, order)
            kshape = cube.shape[: len(given)]
            flat, s = shrink_given(cube.reshape(int(np.prod(kshape)), *cube.shape[len(given) :]), m.sigma)
            values = np.transpose(flat.reshape(cube.shape), np.argsort(order))
        else:
            out.items.append(m)
            continue
        factors[clique] = s
        out.items.append(Measurement(m.clique, values.ravel(), m.sigma))
    return out, factors
