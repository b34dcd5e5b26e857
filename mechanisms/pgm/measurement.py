"""Measuring marginals of the private table (``fit`` only): the table as public cells, a marginal's
exact counts, and its counts plus discrete Gaussian noise through :class:`~mechanisms.noise.Noise`.

Privacy of one measurement (replace-one neighbours, n public): replacing one record moves one count
from one cell of a marginal to another, so the count vector changes by (+1, -1): L2 sensitivity
sqrt(2). Discrete Gaussian noise with standard deviation sigma on a vector of L2 sensitivity D is
D^2 / (2 sigma^2)-zCDP (Canonne, Kamath & Steinke 2020), so one marginal measured with sigma costs
rho = 1 / sigma^2. Everything after the noisy counts (estimation, sampling) is post-processing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..noise import Noise

MARGINAL_L2_SENSITIVITY = math.sqrt(2.0)  # replace-one: one count -1, another +1
MARGINAL_RHO_PER_INV_VAR = MARGINAL_L2_SENSITIVITY**2 / 2  # rho = this / sigma^2 = 1 / sigma^2
QUALITY_L1_SENSITIVITY = 2.0  # replace-one: || x - xhat ||_1 moves by at most 2 (per unit weight)

Clique = tuple[str, ...]


def rho_of_measurement(sigma: float) -> float:
    """zCDP cost of one marginal measured with discrete Gaussian noise of std ``sigma`` (see above)."""
    return MARGINAL_RHO_PER_INV_VAR / sigma**2


def sigma_for_rho(rho: float) -> float:
    """Noise std of one marginal measurement that costs exactly ``rho`` (inverse of the above)."""
    return math.sqrt(MARGINAL_RHO_PER_INV_VAR / rho)


# ------------------------------------------------------------------------------------------------
# The private table as cells
# ------------------------------------------------------------------------------------------------


class CellTable:
    """Cell indices of the private table (n x d, int) and exact marginal counts (fit only)."""

    def __init__(self, cells: np.ndarray, names: Sequence[str], sizes: Sequence[int]):
        cells = np.asarray(cells)
        # int64, or kept in the one- or two-byte type of TableSource.cells() (10M x 42 cells: 420 MB, not 3.4 GB)
        compact = cells.dtype in (np.uint8, np.uint16)
        self.cells = cells if compact else cells.astype(np.int64, copy=False)
        self.names = list(names)
        self.sizes = dict(zip(self.names, (int(s) for s in sizes)))
        self.index = {name: j for j, name in enumerate(self.names)}
        self._cache: dict[Clique, np.ndarray] = {}
        # one contiguous array per column: a marginal's flat index is built by multiply-add on them, about
        # 10x faster than np.ravel_multi_index on the row-major int64 matrix (1M rows, a triple: 3 ms against 30 ms)
        small = self.cells.size == 0 or int(self.cells.max(initial=0)) < 2**31
        dtype = self.cells.dtype if compact else np.int32 if small else np.int64
        self._columns = np.ascontiguousarray(self.cells.T, dtype=dtype)

    @property
    def n(self) -> int:
        return int(self.cells.shape[0])

    def shape(self, clique: Clique) -> tuple[int, ...]:
        return tuple(self.sizes[a] for a in clique)

    def counts(self, clique: Clique) -> np.ndarray:
        """Exact counts of the marginal on ``clique`` (flattened in the clique's attribute order)."""
        if clique not in self._cache:
            shape = self.shape(clique)
            size = int(np.prod(shape))
            dtype = np.int32 if size < 2**31 else np.int64
            flat = np.zeros(self.n, dtype=dtype)
            for a, k in zip(clique, shape):  # the C-order flat index, as np.ravel_multi_index
                flat *= k
                flat += self._columns[self.index[a]]
            self._cache[clique] = np.bincount(flat, minlength=size).astype(np.int64)
        return self._cache[clique]


def measure(noise: Noise, counts: np.ndarray, sigma: float) -> np.ndarray:
    """Counts plus discrete Gaussian noise of std ``sigma`` (rho = 1 / sigma^2 under replace-one)."""
    return noise.gaussian_int(counts, scale=sigma).astype(np.float64)


@dataclass
class Measurement:
    """A noisy marginal: ``values`` estimate ``weights * counts(clique)`` with noise std ``sigma``."""

    clique: Clique
    values: np.ndarray
    sigma: float
    weights: np.ndarray | None = None  # None: the identity query


class Measurements:
    """Noisy measurements so far. Repeated identity measurements of one clique are pooled:
    y = sum(y_i / s_i^2) / sum(1 / s_i^2), s = sum(1 / s_i^2)^(-1/2) minimises the same squared loss
    up to a constant, so the estimate is unchanged and the compiled estimator is reused."""

    def __init__(self):
        self.items: list[Measurement] = []

    def add(self, m: Measurement) -> None:
        for i, old in enumerate(self.items):
            if old.clique == m.clique and old.weights is None and m.weights is None:
                w_old, w_new = old.sigma**-2, m.sigma**-2
                values = (old.values * w_old + m.values * w_new) / (w_old + w_new)
                self.items[i] = Measurement(m.clique, values, (w_old + w_new) ** -0.5)
                return
        self.items.append(m)

    @property
    def cliques(self) -> list[Clique]:
        return [m.clique for m in self.items]

    def noisy_queries(self, names: Sequence[str], sizes: Sequence[int], cell_map=None) -> list:
        """Every measurement as a :class:`~mechanisms.base.NoisyQuery` on the schema's public cells:
        a record adds ``weights[k]`` (1 for the identity query) to the flat index k of its cell in the
        clique's marginal. ``cell_map`` turns the schema's cell matrix into the cells the marginals were
        counted on (MST's compressed domains); ``sizes`` are those cells' sizes."""
        from ..base import NoisyQuery

        index = {a: j for j, a in enumerate(names)}
        out = []
        for m in self.items:
            cols = [index[a] for a in m.clique]
            shape = tuple(int(sizes[j]) for j in cols)

            def flat(cells, cols=cols, shape=shape):
                cells = cell_map(cells) if cell_map is not None else cells
                return np.ravel_multi_index(tuple(cells[:, j] for j in cols), shape)

            out.append(
                NoisyQuery(np.asarray(m.values, float), float(m.sigma), "gaussian", cells=flat, weights=m.weights)
            )
        return out

    def to_mbi(self, mbi) -> list:
        out = []
        for m in self.items:
            if m.weights is None:
                out.append(mbi.LinearMeasurement(m.values, m.clique, stddev=m.sigma))
            else:
                out.append(
                    mbi.LinearMeasurement(m.values, m.clique, stddev=m.sigma, query=mbi.WeightedQuery(m.weights))
                )
        return out
