"""The published form of a table (the tables' JSON contract) and the exact intervals of noisy counts.

A table is ``{"columns": [...], "cells": [{"values": [...], "noisy", "estimate", "se", "lo", "hi"}, ...],
"noise": {...}, "interval": "..."}``, cells in C order over the columns' public cells (the schema's
``cell_labels``). ``interval`` says in words what ``se``, ``lo`` and ``hi`` are for that table.
"""

from __future__ import annotations

import itertools
import math
from typing import Sequence

import numpy as np

from ..schema import Schema

COVERAGE = 0.95
Z95 = 1.959963984540054  # the standard normal's 97.5% quantile
EXACT_SUM_MAX_SCALE = 1e5  # above this noise scale the discrete Gaussian's tail is summed as the normal's


def discrete_gaussian_half_width(sigma: float, coverage: float = COVERAGE) -> int:
    """The smallest integer t with P(|Z| <= t) >= ``coverage`` for Z discrete Gaussian with parameter sigma
    (P[k] proportional to exp(-k^2 / (2 sigma^2))): noisy +- t contains the true count with at least that
    probability. The lattice matters at small sigma (sigma = 1: +-1.96 sigma covers 88%, not 95%)."""
    if sigma > EXACT_SUM_MAX_SCALE:  # continuity-corrected normal: exact to far below a count at this scale
        from scipy.stats import norm

        return max(0, math.ceil(norm.ppf((1 + coverage) / 2) * sigma - 0.5))
    k = np.arange(0, math.ceil(12 * sigma) + 2)
    p = np.exp(-(k.astype(float) ** 2) / (2 * sigma**2))
    mass = np.concatenate([[p[0]], 2 * p[1:]])
    covered = np.cumsum(mass) / mass.sum()
    return int(np.searchsorted(covered, coverage - 1e-15))


def discrete_gaussian_sd(sigma: float) -> float:
    """The standard deviation of the discrete Gaussian with parameter sigma (at most sigma)."""
    if sigma > EXACT_SUM_MAX_SCALE:
        return float(sigma)
    k = np.arange(-math.ceil(12 * sigma) - 1, math.ceil(12 * sigma) + 2).astype(float)
    p = np.exp(-(k**2) / (2 * sigma**2))
    return float(math.sqrt((k**2 * p).sum() / p.sum()))


def discrete_laplace_half_width(scale: float, coverage: float = COVERAGE) -> int:
    """The smallest integer t with P(|Z| <= t) >= ``coverage`` for P[k] proportional to exp(-|k| / scale):
    P(|Z| > t) = 2 q^(t+1) / (1 + q) with q = exp(-1/scale)."""
    q = math.exp(-1.0 / scale)
    t = math.log((1 - coverage) * (1 + q) / 2) / math.log(q) - 1
    return max(0, math.ceil(t - 1e-9))


def discrete_laplace_sd(scale: float) -> float:
    """sqrt(2 q) / (1 - q), q = exp(-1/scale): the discrete Laplace's standard deviation."""
    q = math.exp(-1.0 / scale)
    return math.sqrt(2 * q) / (1 - q)


def labels(schema: Schema, columns: Sequence[str], sizes: Sequence[int] | None = None) -> list[list[str]]:
    """Each cell's labels in C order over ``columns`` (the schema's cell labels)."""
    per = [schema.column(c).cell_labels() for c in columns]
    if sizes is not None:
        per = [p[:k] for p, k in zip(per, sizes)]
    return [list(v) for v in itertools.product(*per)]


def table_json(
    columns: Sequence[str],
    values: list[list[str]],
    *,
    noisy: np.ndarray,
    estimate: np.ndarray,
    se: np.ndarray | float,
    lo: np.ndarray,
    hi: np.ndarray,
    noise: dict,
    interval: str,
    **extra,
) -> dict:
    """One table in the contract's form (floats rounded to 6 significant digits past the point)."""
    size = len(values)
    arrays = [np.broadcast_to(np.asarray(a, dtype=np.float64).ravel(), (size,)) for a in (noisy, estimate, se, lo, hi)]
    cells = [
        {"values": v, "noisy": _num(a), "estimate": _num(b), "se": _num(c), "lo": _num(d), "hi": _num(e)}
        for v, a, b, c, d, e in zip(values, *arrays)
    ]
    return {"columns": list(columns), "cells": cells, "noise": noise, "interval": interval, **extra}


def _num(x: float) -> float | None:
    return None if not math.isfinite(x) else round(float(x), 6)
