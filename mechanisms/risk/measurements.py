"""The implementation check's attack: the informed attacker on a refit's NOISY MEASUREMENTS
(:meth:`~mechanisms.base.Mechanism.noisy_queries`), and the target pairs of its measure-only refits."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy.special import gammaln

CHECK_MAX_COS = 0.3  # the check's pairs: largest |cosine| between two pairs' contribution differences
DENSE_CHUNK_VALUES = 8_000_000  # rows x coordinates per block when summing dense contributions (64 MB)
LAPLACE_EXACT_MAX = 64  # other targets at a Laplace coordinate up to which their coins are summed exactly
MIN_UNTOUCHED = 30  # coordinates no target touches needed to estimate the noise actually present
NOISE_RATIO_FLOOR = 1e-3  # the estimated noise is at least this share of the declared (noise off: 0)


def query_scores(queries, cells: np.ndarray, frame: pd.DataFrame, pairs: np.ndarray, fixed: np.ndarray) -> np.ndarray:
    """The implementation check's statistic per pair (a, b): the log-likelihood ratio of "a is in"
    against "b is in" given the NOISY QUERIES the fit released (:meth:`Mechanism.noisy_queries`: the
    noisy marginals, the noisy embedding), for an attacker who knows every training record but which
    one of each pair is in. The residual r = values - (known records' contributions + half of each
    pair's two) is +d/2 plus noise when a is in, -d/2 when b is, with d = c(a) - c(b); summed over the
    queries (independent noise):

    * Gaussian noise of std s: <r, d> / v, v = s^2 plus the other pairs' coins on that coordinate
      (count queries); for dense ones the other pairs' coins as correlated noise (:func:`_dense_llr`);
    * Laplace noise of scale b, count queries: at a's coordinate and (mirrored) at b's, the exact
      ratio of the two mixtures "noise plus the other targets' coins there" (:func:`_laplace_mixture_llr`).

    s and b are the noise actually present, estimated like an attacker would: for count queries from
    the coordinates no target touches (pure noise there, pooled over the queries in units of their
    declared scale), for a dense query from its residual's variance less the coins'. When the noise is
    as declared this changes nothing; when it is smaller (a bug), the statistic weighs it right.

    This is the most an attacker can learn from the measurements, up to the pairs' interference: on the
    real mechanism the bound it gives stays below the claim (the noise covers it); a mechanism whose
    noise is smaller than claimed shows here first (docs/privacy-model.md)."""
    pairs = np.asarray(pairs)
    a_rows, b_rows = pairs[:, 0], pairs[:, 1]
    T = np.zeros(len(pairs))
    counts, untouched = [], {"laplace": [], "gaussian": []}
    for q in queries:
        values = np.asarray(q.values, float).ravel()
        k = values.size
        if q.cells is not None:
            w = np.ones(k) if q.weights is None else np.asarray(q.weights, float)
            fa, fb = q.cells(cells[a_rows]), q.cells(cells[b_rows])
            ff = q.cells(cells[fixed])
            ta, tb = np.bincount(fa, minlength=k), np.bincount(fb, minlength=k)
            r = values - np.bincount(ff, weights=w[ff], minlength=k) - 0.5 * (ta + tb) * w
            untouched[q.noise].append(r[(ta + tb) == 0] / q.scale)
            counts.append((q, r, w, fa, fb))
        elif q.dense is not None:
            known = np.zeros(k)
            rows = max(DENSE_CHUNK_VALUES // max(k, 1), 1)  # a labeled embedding has features x classes
            for start in range(0, len(fixed), rows):
                known += q.dense(frame.iloc[fixed[start : start + rows]]).sum(axis=0)
            ca, cb = q.dense(frame.iloc[a_rows]), q.dense(frame.iloc[b_rows])
            r = values - known - 0.5 * (ca.sum(axis=0) + cb.sum(axis=0))
            D = ca - cb
            coin = (D**2).sum(axis=0) / 4  # the targets' coins, +-d/2 each, per coordinate
            s2 = q.scale**2 * _noise_ratio(np.mean(r**2) - np.mean(coin), q.scale**2)  # variance ratio
            T += _dense_llr(D, r, s2)
    # the noise actually present, in units of the declared scale, read off the coordinates no target
    # touches (pure noise there): an attacker may estimate it, and a noise smaller than declared shows
    ratio = {
        "laplace": _untouched_ratio(untouched["laplace"], 1),  # mean |z|: b observed / b declared
        "gaussian": _untouched_ratio(untouched["gaussian"], 2),  # mean z^2: a variance ratio
    }
    for q, r, w, fa, fb in counts:
        scale = q.scale * (ratio[q.noise] if q.noise == "laplace" else math.sqrt(ratio[q.noise]))
        k = r.size
        disc = fa != fb
        wa, wb = w[fa], w[fb]
        # the other pairs' coins: each adds +-w/2 at its two coordinates (variance w^2 / 4 each)
        coin = np.bincount(fa, weights=wa**2 / 4, minlength=k) + np.bincount(fb, weights=wb**2 / 4, minlength=k)
        ca, cb = coin[fa] - wa**2 / 4, coin[fb] - wb**2 / 4
        if q.noise == "laplace":
            # exact: the other targets' coins at the coordinate add w (2B - k) / 2, B ~ Binomial(k, 1/2)
            touch = np.bincount(fa, minlength=k) + np.bincount(fb, minlength=k)
            la = _laplace_mixture_llr(r[fa], wa, touch[fa] - 1, scale)
            lb = -_laplace_mixture_llr(r[fb], wb, touch[fb] - 1, scale)
            T += np.where(disc, la + lb, 0.0)
        else:
            va, vb = scale**2 + ca, scale**2 + cb
            T += np.where(disc, r[fa] * wa / va - r[fb] * wb / vb, 0.0)
    return T


def _laplace_mixture_llr(r: np.ndarray, w: np.ndarray, others: np.ndarray, b: float) -> np.ndarray:
    """log p(r | +w/2) - log p(r | -w/2) for r = +-w/2 + w (2B - k) / 2 + Laplace(b) noise, B ~
    Binomial(k, 1/2) the other k targets' coins at the coordinate (k = ``others``, per entry): a
    finite mixture, summed exactly (log-sum-exp) up to k = ``LAPLACE_EXACT_MAX``; beyond, the coins'
    sum and the noise are taken as Gaussian (variance 2 b^2 + k w^2 / 4)."""
    out = np.zeros(len(r))
    kmax = int(min(others.max(initial=0), LAPLACE_EXACT_MAX))
    small = others <= LAPLACE_EXACT_MAX
    if small.any():
        k = others[small][:, None]
        B = np.arange(kmax + 1)[None, :]
        valid = B <= k
        logw = np.where(valid, _log_binom(k, np.minimum(B, k)) - k * math.log(2), -np.inf)
        shift = (w[small][:, None] * (2 * B - k)) / 2
        rr = r[small][:, None]
        wh = w[small][:, None] / 2
        plus = np.logaddexp.reduce(logw - np.abs(rr - wh - shift) / b, axis=1)
        minus = np.logaddexp.reduce(logw - np.abs(rr + wh - shift) / b, axis=1)
        out[small] = plus - minus
    big = ~small
    if big.any():
        out[big] = r[big] * w[big] / (2 * b**2 + others[big] * w[big] ** 2 / 4)
    return out


def _log_binom(n: np.ndarray, k: np.ndarray) -> np.ndarray:
    return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)


def _dense_llr(D: np.ndarray, r: np.ndarray, s2: float) -> np.ndarray:
    """Per pair j, d_j' S_j^-1 r: the Gaussian log-likelihood ratio of its coin when the residual is
    r = D' c / 2 + noise (c the coins, +-1; noise variance ``s2`` per coordinate) and the OTHER pairs'
    coins are counted as noise, S_j = s2 I + sum over i != j of d_i d_i' / 4. Dense contributions of
    different pairs are far from orthogonal (a mean embedding moves alike for many records), so this
    decorrelation matters. With S the same sum over all pairs, G = D D' and Woodbury,
    u = D S^-1 r = (D r - G (4 s2 I + G)^-1 D r) / s2, M = D S^-1 D' = (G - G (4 s2 I + G)^-1 G) / s2,
    and Sherman-Morrison takes pair j back out: d_j' S_j^-1 r = u_j 4 / (4 - M_jj)."""
    G = D @ D.T
    Dr = D @ r
    A = 4 * s2 * np.eye(len(G)) + G
    u = (Dr - G @ np.linalg.solve(A, Dr)) / s2
    M = (G - G @ np.linalg.solve(A, G)) / s2
    return u * 4 / np.maximum(4 - np.diag(M), 1e-12)


def check_pairs(
    queries, cells: np.ndarray, frame: pd.DataFrame, candidates: np.ndarray, n_pairs: int, max_cos: float | None = None
) -> np.ndarray:
    """Target pairs for the implementation check's measure-only refits, fixed before any coin: among
    ``candidates`` (the pool's most vulnerable records), greedily the pair whose contributions differ
    most in units of the noise (||c(a) - c(b)||^2 summed over the queries, each divided by its scale^2:
    the pair's signal-to-noise ratio squared, what :func:`query_scores` sees), then the next whose
    difference is nearly orthogonal to those taken (|cosine| at most ``max_cos``): the other pairs'
    coins are noise for a pair's statistic along shared directions, and a mean embedding moves alike
    for many records (on a table whose records differ mostly in two categorical columns, a handful of
    pairs is all it can tell apart at once). Works on the record kernel K(x, y) = sum over queries of
    <c(x), c(y)> / scale^2; the maps are public (the schema, a refit's public draws)."""
    max_cos = CHECK_MAX_COS if max_cos is None else max_cos
    candidates = np.asarray(candidates)
    m = len(candidates)
    K = np.zeros((m, m))
    for q in queries:
        if q.cells is not None:
            f = q.cells(cells[candidates])
            w = (np.ones(np.asarray(q.values).size) if q.weights is None else np.asarray(q.weights, float))[f]
            K += (f[:, None] == f[None, :]) * np.outer(w, w) / q.scale**2
        elif q.dense is not None:
            X = q.dense(frame.iloc[candidates])
            K += X @ X.T / q.scale**2
    sq = np.diag(K)
    dist = sq[:, None] + sq[None, :] - 2 * K  # ||d||^2 of every candidate pair
    open_ = np.triu(np.ones((m, m), dtype=bool), 1) & (dist > 0)
    taken: list[tuple[int, int]] = []
    while len(taken) < n_pairs and open_.any():
        i, j = divmod(int(np.argmax(np.where(open_, dist, -np.inf))), m)
        taken.append((i, j))
        open_[[i, j], :] = open_[:, [i, j]] = False
        # <d(x, y), d(i, j)> for every candidate pair (x, y): g[x] - g[y], g = K[:, i] - K[:, j]
        g = K[:, i] - K[:, j]
        dot = g[:, None] - g[None, :]
        open_ &= dot**2 <= max_cos**2 * dist * dist[i, j]
    return candidates[np.array(taken, dtype=np.int64).reshape(-1, 2)]


def _untouched_ratio(parts: list[np.ndarray], power: int) -> float:
    """mean |z|^power over the pooled residuals in units of their declared scale, or 1 (as declared)
    when fewer than ``MIN_UNTOUCHED``."""
    z = np.concatenate(parts) if parts else np.zeros(0)
    return _noise_ratio(float(np.mean(np.abs(z) ** power)), 1.0) if z.size >= MIN_UNTOUCHED else 1.0


def _noise_ratio(observed: float, declared: float) -> float:
    """observed / declared, kept within [NOISE_RATIO_FLOOR, 10] (noise off would give 0)."""
    return float(min(max(observed / declared, NOISE_RATIO_FLOOR), 10.0)) if declared > 0 else 1.0
