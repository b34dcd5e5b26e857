"""Private estimation of numeric bounds, for stewards with no public source of them.

A schema's numeric bounds are public metadata; suggesting them from the data's minimum and maximum
publishes those extremes. This module estimates bounds with differential privacy instead, the way
Google's ``ApproxBounds`` and SmartNoise's ``approx_bounds`` do: a noisy histogram over a
data-INDEPENDENT grid of bins whose edges grow geometrically, thresholded.

Algorithm (per column)
    1. Bins: the edges are the round numbers m * 10^e for m in ``MANTISSAS`` and e in ``EXPONENTS``,
       their negatives, and 0 (``EDGES``; ..., 0.5, 1, 2, 5, 10, 20, 50, ...). The two
       outermost bins are open-ended. The grid is fixed before any data is read.
    2. Counts: each present value is counted in its bin (missing and non-numeric cells count nowhere).
    3. Noise: discrete Laplace noise of scale 2 / epsilon_column on every count
       (``Noise.laplace_int``, OpenDP's exact sampler in production).
    4. Threshold (post-processing): t = ceil(b ln(#bins / beta)) with b the noise scale; a bin whose
       noisy count is at least t counts as occupied. The bounds are the lower edge of the lowest
       occupied bin and the upper edge of the highest (an open-ended outer bin gives its finite edge).
       No occupied bin: no estimate for that column (too few values for this epsilon). The coverage,
       the noisy count inside the bounds over the public row count n, is reported; below ``MIN_COVERAGE`` (values spread
       over many thin bins) the estimate is flagged unreliable and not offered for the schema.

Privacy
    Neighbouring tables differ in one replaced record; the row count n is public. Replacing a record
    changes one value per column: at most one count goes down by 1 and one goes up by 1, so a column's
    count vector has L1 sensitivity 2, and discrete Laplace noise of scale 2 / epsilon_column makes it
    epsilon_column-DP. The columns are estimated with epsilon / k each, k the number of columns:
    epsilon-DP in total by basic composition. Thresholding and reading off edges are post-processing.

Accuracy (stated, not hidden)
    An empty bin passes the threshold with probability at most exp(-t / b) = beta / #bins, so with
    probability at least 1 - beta no empty bin is reported. A bin needs roughly t records (about
    2 ln(#bins / beta) / epsilon_column) to be seen: tails thinner than that are clipped by the bounds,
    which is the usual aim of DP bounds. The bounds are round numbers of the grid, so they can be
    loose: values far from zero (years around 2000) get bounds like 1000 to 5000; give public bounds
    for such columns.
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from .accounting import EpsilonDeltaEvent, PrivacyCost
from .draft import DRAFT_BINS, MAX_VALUE_CELLS
from .noise import Noise, laplace_scale
from .schema import NUMERIC_KINDS, Column

MANTISSAS = (1.0, 2.0, 5.0)  # 1-2-5 in each power of ten: few, full bins (finer bins each hold fewer records
# and fall under the threshold first: on 3,000 rows at epsilon 0.036 per column, 10 mantissas found no bin)
MIN_COVERAGE = 0.9  # an estimate whose bounds hold less than this share of the noisy count is not offered
EXPONENTS = range(-3, 10)  # 0.001 .. 8e9: outside this, values fall in the open-ended outer bins
SENSITIVITY = 2  # L1 change of one column's count vector under replace-one (one -1, one +1)
DEFAULT_BETA = 0.05  # probability that any empty bin is reported as occupied (all columns' bins)


def _edges() -> np.ndarray:
    pos = sorted({round(m * 10.0**e, 12) for e in EXPONENTS for m in MANTISSAS})
    return np.array([-v for v in reversed(pos)] + [0.0] + pos)


EDGES = _edges()  # bin j is [EDGES[j-1], EDGES[j]); bin 0 is (-inf, EDGES[0]); the last is [EDGES[-1], inf)
N_BINS = len(EDGES) + 1


def bin_counts(values: np.ndarray) -> np.ndarray:
    """Counts of ``values`` (finite floats) in the grid's bins (length ``N_BINS``)."""
    idx = np.searchsorted(EDGES, np.asarray(values, dtype=float), side="right")
    return np.bincount(idx, minlength=N_BINS).astype(np.int64)


def numeric_values(cells: pd.Series, markers: Sequence[str]) -> np.ndarray:
    """The finite numbers of a raw string column; missing markers and non-numbers are left out."""
    text = cells.astype(str).str.strip()
    text = text[~text.isin(set(markers))]
    num = pd.to_numeric(text, errors="coerce").to_numpy(dtype=float)
    return num[np.isfinite(num)]


def threshold(*, scale: float, beta: float, bins: int) -> int:
    """Smallest integer t with exp(-t / scale) <= beta / bins (an empty bin passes with at most that)."""
    return int(math.ceil(scale * math.log(bins / beta)))


def bounds_from_noisy(noisy: np.ndarray, t: int) -> tuple[float, float] | None:
    """Post-processing: the outer edges of the occupied bins (noisy count >= t), or None."""
    occupied = np.flatnonzero(np.asarray(noisy) >= t)
    if occupied.size == 0:
        return None
    lo_bin, hi_bin = int(occupied[0]), int(occupied[-1])
    lower = float(EDGES[lo_bin - 1]) if lo_bin > 0 else float(EDGES[0])
    upper = float(EDGES[hi_bin]) if hi_bin < len(EDGES) else float(EDGES[-1])
    if upper <= lower:  # only an open-ended outer bin is occupied: widen it by one bin inward
        if lower == float(EDGES[-1]):
            lower = float(EDGES[-2])
        else:
            upper = float(EDGES[1])
    return lower, upper


def coverage(noisy: np.ndarray, lower: float, upper: float, n: int | None = None) -> float:
    """Post-processing: the noisy count inside [lower, upper] over the public row count ``n`` (missing
    values count as outside, so this errs low), or over the noisy total when ``n`` is not given. Only
    the few bins inside are summed: the noise of the many empty bins does not enter."""
    noisy = np.asarray(noisy)
    first = int(np.searchsorted(EDGES, lower, side="right"))  # the bin that starts at ``lower``
    last = int(np.searchsorted(EDGES, upper, side="left"))  # the bin that ends at ``upper``
    total = n if n else noisy.sum()
    return float(min(max(noisy[first : last + 1].sum() / total, 0.0), 1.0)) if total > 0 else 0.0


def estimate_bounds(
    chunks: Iterable[pd.DataFrame],
    columns: Sequence[str],
    *,
    epsilon: float,
    noise: Noise,
    markers: Sequence[str],
    beta: float = DEFAULT_BETA,
    n: int | None = None,
) -> dict:
    """Estimate bounds of ``columns`` from raw string ``chunks`` with ``epsilon``-DP in total (see the
    module docstring); ``n`` is the public row count (for the coverage). Returns {"columns": {name:
    {"lower", "upper", "coverage", "reliable"}},
    "epsilon_per_column", "scale", "threshold", "beta", "bins"}: everything in it is DP output or public."""
    if not columns:
        raise ValueError("choose at least one column to estimate bounds for")
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be positive and finite, got epsilon={epsilon!r}")
    if not 0 < beta < 1:
        raise ValueError(f"beta must lie in (0, 1), got beta={beta!r}")
    counts = {c: np.zeros(N_BINS, dtype=np.int64) for c in columns}
    for chunk in chunks:  # streaming: one chunk of raw cells at a time
        for c in columns:
            counts[c] += bin_counts(numeric_values(chunk[c], markers))
    eps_col = epsilon / len(columns)
    scale = laplace_scale(sensitivity=SENSITIVITY, epsilon=eps_col)
    t = threshold(scale=scale, beta=beta / len(columns), bins=N_BINS)
    out = {}
    for c in columns:
        noisy = noise.laplace_int(counts[c], scale=scale)
        found = bounds_from_noisy(noisy, t)
        out[c] = {"lower": None, "upper": None, "coverage": None, "reliable": False}
        if found:
            cover = coverage(noisy, *found, n=n)
            out[c] = {
                "lower": found[0],
                "upper": found[1],
                "coverage": round(cover, 4),
                "reliable": cover >= MIN_COVERAGE,
            }
    return {"columns": out, "epsilon_per_column": eps_col, "scale": scale, "threshold": t, "beta": beta, "bins": N_BINS}


def privacy_cost(epsilon: float, result: dict) -> PrivacyCost:
    """The privacy report of one bounds estimate (pure epsilon-DP, replace-one; see the docstring)."""
    return PrivacyCost(
        epsilon=float(epsilon),
        guarantee="pure",
        caveats=(
            "bounds are the edges of a fixed grid of round numbers: they can be loose (values far from zero "
            "get wide bounds); values in bins with fewer records than the threshold fall outside them and "
            "are clipped when the schema is used",
        ),
        details={
            "method": "noisy log-scale histogram, thresholded (ApproxBounds)",
            "epsilon_per_column": result["epsilon_per_column"],
            "discrete_laplace_scale": result["scale"],
            "threshold": result["threshold"],
            "beta": result["beta"],
            "bins": result["bins"],
            "bounds": result["columns"],
        },
        events=(EpsilonDeltaEvent(float(epsilon), label="noisy log-scale histograms, thresholded"),),
    )


ESTIMATE_LOG_RATIO = 1000  # estimated bounds [lower >= 0, upper >= 1000 * max(lower, 1)]: log-spaced bins


def column_from_estimate(name: str, kind: str, estimate: dict) -> Column:
    """The numeric column a steward gets from "use the private estimates": every value in it is the
    estimate's DP output (``lower``, ``upper``) or a fixed rule applied to it, never anything computed
    from the raw data outside the estimate (post-processing: it adds no privacy cost).

    Rules: integer columns whose bounds hold at most ``MAX_VALUE_CELLS`` integers get one cell per value,
    others ``DRAFT_BINS`` bins; 0 is a special value when it lies within the bounds of a binned column
    (zeros are the usual point mass of amounts); bins are log-spaced when the bounds are non-negative and
    span ``ESTIMATE_LOG_RATIO`` times the lower bound (or 1) or more; the fill value of missing numbers is
    the lower bound (whether the column has missing values is not known to this function, so every
    column gets one); no step and no decimals (every digit is written)."""
    if kind not in NUMERIC_KINDS:
        raise ValueError(f"column {name!r}: bounds estimates are for numeric columns, got kind {kind!r}")
    lower, upper = float(estimate["lower"]), float(estimate["upper"])
    if kind == "integer":
        lower, upper = float(math.floor(lower)), float(math.ceil(upper))
    span = int(upper - lower) + 1 if kind == "integer" else 0
    if kind == "integer" and span <= MAX_VALUE_CELLS:
        return Column(name=name, kind=kind, lower=lower, upper=upper, bins=max(span, 1), fill=lower)
    log = lower >= 0 and upper >= ESTIMATE_LOG_RATIO * max(lower, 1.0)
    return Column(
        name=name,
        kind=kind,
        lower=lower,
        upper=upper,
        bins=DRAFT_BINS,
        fill=lower,
        special=(0,) if lower <= 0 <= upper else (),
        scale="log" if log else "linear",
    )
