"""Non-negative least squares on noisy counts with a known total (post-processing of DP measurements)."""

from __future__ import annotations

import numpy as np


def nonnegative_counts(y: np.ndarray, total: float) -> np.ndarray:
    """The counts x >= 0 with sum(x) = ``total`` closest to the noisy counts ``y`` in least squares: the
    Euclidean projection onto the scaled simplex (Duchi, Shalev-Shwartz, Singer & Chandra, ICML 2008),
    x = max(y - tau, 0) with the one tau that gives the total. A cell whose noisy count is below tau gets
    nothing: cells the measurements say are empty receive no mass, where clipping negatives and rescaling
    would give every positive noise draw some. With equal noise on every cell this is the maximum-likelihood
    answer under the constraints. ``total`` <= 0 gives zeros. Post-processing: no privacy cost."""
    y = np.asarray(y, dtype=np.float64).ravel()
    if total <= 0 or y.size == 0:
        return np.zeros(y.size)
    u = np.sort(y)[::-1]
    excess = np.cumsum(u) - float(total)
    k = np.arange(1, y.size + 1)
    positive = np.nonzero(u - excess / k > 0)[0]
    if not positive.size:  # a total too small beside the counts for float arithmetic: all on the largest cell
        out = np.zeros(y.size)
        out[int(np.argmax(y))] = float(total)
        return out
    last = positive[-1]
    return np.maximum(y - excess[last] / (last + 1), 0.0)


def nonnegative_shares(y: np.ndarray, total: float) -> np.ndarray:
    """:func:`nonnegative_counts` as probabilities (uniform when the total is not positive)."""
    x = nonnegative_counts(y, total)
    s = x.sum()
    return x / s if s > 0 else np.full(np.asarray(y).size, 1.0 / max(np.asarray(y).size, 1))


def nonincreasing_fit(y: np.ndarray) -> np.ndarray:
    """The non-increasing sequence closest to ``y`` in least squares (isotonic regression by pool adjacent
    violators): neighbouring values that rise are pooled into their mean. One pass over the values (bins,
    never records)."""
    y = np.asarray(y, dtype=np.float64).ravel()
    means: list[float] = []
    sizes: list[int] = []
    for v in y:
        means.append(float(v))
        sizes.append(1)
        while len(means) > 1 and means[-2] < means[-1]:
            m, s = means.pop(), sizes.pop()
            means[-1] = (means[-1] * sizes[-1] + m * s) / (sizes[-1] + s)
            sizes[-1] += s
    return np.repeat(means, sizes)


HEAPED_KEPT_SHARE = 0.5  # kept bins under this share of the span from the first kept bin to the last: heaps


def merged_fit(y: np.ndarray, kept: np.ndarray, mode: int) -> np.ndarray:
    """The noisy counts of a numeric column's ordered bins with the bins not ``kept`` (merged at noise level)
    fitted rising before ``mode`` and falling after it among themselves (:func:`unimodal_fit` with ``free``),
    unless the kept bins say the column heaps on a few values: when fewer than ``HEAPED_KEPT_SHARE`` of the bins
    from the first kept one to the last are kept (hours a week kept at 15, 20, 25, ..., 40, 45, 50, 55, 60),
    the counts are returned as they are, since a rising-then-falling fit would pool the few real values
    between the heaps (70 hours: 140 rows) with their empty neighbours into a flat plateau over every merged
    value. A smooth column (ages kept 20-60 without a gap) keeps the fit, which pools the noise of its tails;
    the fit's negative values are cut by scaling the positive ones to the same sum, so that the non-negative
    fit that follows (:func:`nonnegative_counts`, whose threshold takes an equal amount off every value)
    keeps a thin tail's shape instead of cutting its smallest bins first. Post-processing of noisy counts
    and of the support chosen from them."""
    y = np.asarray(y, dtype=np.float64).ravel()
    kept = np.asarray(kept, dtype=bool).ravel()
    where = np.flatnonzero(kept)
    if where.size >= 2 and where.size < HEAPED_KEPT_SHARE * (where[-1] - where[0] + 1):
        return y
    fit = unimodal_fit(y, mode, free=~kept)
    free = fit[~kept]
    positive = np.maximum(free, 0.0)
    if positive.sum() > 0 and free.sum() > 0:  # negatives cut by scaling: a thin tail keeps its shape
        fit[~kept] = positive * (free.sum() / positive.sum())
    return fit


def unimodal_fit(y: np.ndarray, mode: int, free: np.ndarray | None = None) -> np.ndarray:
    """The least-squares fit of ``y`` rising up to index ``mode`` and falling after it (isotonic regression on
    each side). For the ordered bins of a numeric column it pools the noise of neighbouring bins: a lone noisy
    bin far in a tail is averaged with its empty neighbours instead of standing out. With ``free`` (a mask) only
    those entries are fitted, in their order, rising before ``mode`` and falling after it, and the others are
    returned as they are: the bins merged at noise level are pooled with each other, never with a kept bin (a
    spike such as 40 hours a week, 45% of the rows, pooled with its empty neighbours would pour its rows into
    41-44). Post-processing."""
    y = np.asarray(y, dtype=np.float64).ravel()
    if y.size == 0:
        return y
    mode = int(min(max(mode, 0), y.size - 1))
    if free is not None:
        free = np.asarray(free, dtype=bool).ravel()
        out = y.copy()
        before = np.flatnonzero(free & (np.arange(y.size) < mode))
        after = np.flatnonzero(free & (np.arange(y.size) >= mode))
        out[before] = nonincreasing_fit(y[before][::-1])[::-1]
        out[after] = nonincreasing_fit(y[after])
        return out
    left = nonincreasing_fit(y[: mode + 1][::-1])[::-1]
    right = nonincreasing_fit(y[mode:])
    out = np.concatenate([left, right[1:]])
    out[mode] = max(left[-1], right[0])
    return out
