"""DP synthetic data with KD-trees: Kreačić, Nouri, Potluru, Balch & Veloso, "Differentially Private
Synthetic Data Using KD-Trees", UAI 2023 (``papers/kdtree-dp-synthetic-data.txt``).

Two registry entries:

``kdtree-grid`` (:class:`KDTreeGrid`, Algorithm 1, data-independent binning)
    Cut the PUBLIC box (schema bounds, never the data's range as in the paper's line 4) into cells of
    width ``w`` along every numeric axis; categorical columns are axes whose bins are the categories.
    Noise every cell count with discrete Laplace(2/ε), keep cells whose noisy count reaches the
    threshold t, release (cell, noisy count) pairs.

``kdtree-adaptive`` (:class:`KDTreeAdaptive`, Algorithms 2-3 then Algorithm 1 on the leaves)
    Data-independent halving for ``h`` levels (maximum edge s1), then data-dependent halving: a node
    splits iff count + DLap(2(h'-h)/ε') > τ, for at most h' - h more levels (minimum edge s2).
    The leaves' counts are then released as in Algorithm 1 with ε'' = ε - ε'.

Empty cells are never enumerated (Algorithm 5, Supplementary E.1 and F). For discrete Laplace noise of
scale b (q = e^(-1/b), P[X = k] = (1-q)/(1+q) q^|k|) and an integer T >= 1:

    P[X >= T] = q^T / (1 + q),        X - T | X >= T  ~  Geometric(1 - q) on {0, 1, ...}.

So among K empty cells the number that survive is Binomial(K, q^T/(1+q)); which ones is a uniform
draw without replacement from the complement of the non-empty cells (uniform ranks among the free
cells mapped to cells; rejection as in E.1 only on grids of 2^63 cells or more: the path depends on the
grid, never on the data); their noisy counts are T + Geometric. The same holds for the split decisions of empty nodes in
the adaptive tree: the number of empty nodes that (wrongly) split is Binomial(K, P[X > τ]); we simulate
those splits EXACTLY instead of assuming, as the paper's Lemma 10 / Theorem 11 do, that they never
happen (that assumption would only hold with probability 1 - δ and would break pure DP). Lemma 10's τ
makes them rare, so the implicit bookkeeping stays proportional to the non-empty nodes.

Privacy (neighbouring tables differ in one REPLACED record; n is public):

* Counts release (both classes). For a fixed partition into cells, replacing one record moves one unit
  of count out of one cell and into another: L1 sensitivity 2. Discrete Laplace of scale 2/ε on every
  cell (empty ones included, implicitly) is ε-DP; thresholding is post-processing (Theorem 2).
* Adaptive partition. Consider the vector of counts of every node of the complete tree at the
  data-dependent depths h..h'-1. Each record lies in exactly one node per depth, so replacing it
  changes at most two counts per depth by 1 each: L1 sensitivity 2(h'-h) (Theorem 7's "two paths").
  DLap(2(h'-h)/ε') on every one of them is ε'-DP; the tree is a post-processing of these noisy counts
  (noise of nodes never reached is drawn lazily or not at all, which does not change the law).
  The counts release on the resulting leaves costs ε''; basic composition gives ε' + ε'' = ε (Thm 8).
* Implicit sampling. Which empty cells survive and how many depends on the data only through the set
  of non-empty cells; the implicit draw has exactly the law of the explicit per-cell noise (Lemma 9), so
  the guarantee is that of the explicit algorithm. The noisy counts of surviving empty cells are exact
  OpenDP draws (|Y| - 1 for Y ~ DLap(b) conditioned on Y != 0 is Geometric(1 - q)). The Binomial count
  and the uniform choice of cells use ``noise.private_rng`` (keyed from the OS CSPRNG, a stream separate
  from ``noise.rng``, which draws the published rows, so the rows cannot reveal these choices):
  these are floating-point samplers (numpy's binomial; above 2^62 trials the exact Poissonisation of
  ``binomial``, whose Poisson draw is numpy's). The privacy report states this as a caveat.
* Nothing else leaks: released cells are kept in a canonical order (position does not tell which were
  empty); the numbers of non-empty cells / nodes and of released empty cells are NOT differentially
  private and stay in ``diagnostics`` (tests, benchmarks), out of the summary and the report.

Defaults (documented in ``docs/mechanisms/kdtree.md``; all overridable; all computed from public n, d,
ε, schema, in unit coordinates where each numeric column's public range is [0, 1]):

* w (grid): the minimiser of Theorem 3's bound  8 C J log(1/β)/(εn) + (w/2)√(d/e)  with J = C w^-d,
  i.e. w* = (16 C √(d e) log(1/β) / (ε n))^(1/(d+1)), C = product of category counts, then shrunk
  grid-wise until Theorem 3's condition J < εn / (4 log 1/β) holds.
* t (both): Theorem 5's t = (8/ε) log(1/δ) with δ = min(β, 1/J) (Theorem 5 needs J <= 1/δ); for the adaptive
  tree J is the number of leaves of the released partition (post-processing of the ε'-DP tree).
* h (adaptive): d·log2(1/w*) with w* as above for the counts budget ε'' (s1 = w*).
* h' - h: whole rounds over the numeric axes, at least MIN_ADAPTIVE_LEVELS levels (the paper gives no
  value; G.4 uses h = 30, h' = 60 for d = 30, i.e. one round).
* τ: Lemma 10's bound (2(h'-h)/ε') log((C 2^h + n(h'-h)) / β).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...accounting import EpsilonDeltaEvent, LaplaceEvent, PrivacyCost, split_budget
from ...base import Mechanism, ParamSpec
from ...noise import Noise, laplace_scale
from ...source import TableSource
from . import guide

COUNT_SENSITIVITY = 2  # L1 sensitivity of a histogram over a fixed partition, replace-one
# Refuse parameters for which the expected number of surviving (or splitting) empty cells exceeds
# this: such a release is dominated by noise cells and would not fit in memory anyway.
MAX_EXPECTED_EMPTY = 1_000_000
# numpy's binomial takes int64 trials; above this, Poissonisation (exact in law, see ``binomial``).
EXACT_BINOMIAL_LIMIT = 2**62
DEFAULT_BETA = 0.05  # failure probability δ of Theorems 3/5 and Lemma 10 (a utility knob, NOT privacy)
MIN_ADAPTIVE_LEVELS = 8  # default h' - h is at least this (rounded up to whole rounds over the axes)
MAX_AXIS_SPLITS = 62  # per-axis cell coordinates must fit in int64
PLACEMENTS = ("uniform", "center")


# ------------------------------------------------------------------------------------------------
# Discrete Laplace tails and implicit sampling helpers
# ------------------------------------------------------------------------------------------------


def dlap_tail(scale: float, T: int) -> float:
    """P[X >= T] for X ~ discrete Laplace(scale) and an integer T >= 1: q^T / (1 + q)."""
    if T < 1:
        raise ValueError(f"tail threshold must be an integer >= 1, got T={T!r}")
    return math.exp(-T / scale) / (1.0 + math.exp(-1.0 / scale))


def count_threshold(t: float) -> int:
    """Integer survival threshold: a noisy count survives iff it is >= t and > 0 (Algorithm 1)."""
    return max(int(math.ceil(t)), 1)


def conditioned_dlap(noise: Noise, m: int, *, scale: float, T: int) -> np.ndarray:
    """m draws of X ~ DLap(scale) conditioned on X >= T, from the exact sampler of ``noise``.

    If Y ~ DLap(scale) then |Y| - 1 given Y != 0 has law P[k] = (1-q) q^k, which is the law of X - T
    given X >= T. Zeros are rejected (acceptance 2q/(1+q), about 0.76 at scale 2).
    """
    out: list[np.ndarray] = []
    need = int(m)
    while need > 0:
        y = noise.laplace_int(np.zeros(need + need // 2 + 8, dtype=np.int64), scale=scale)
        y = np.abs(y[y != 0]) - 1
        out.append(y[:need])
        need -= len(out[-1])
    return T + (np.concatenate(out) if out else np.zeros(0, dtype=np.int64))


def binomial(rng: np.random.Generator, trials: int, p: float) -> int:
    """Binomial(trials, p) for a Python-int number of trials (may exceed 64 bits).

    Below EXACT_BINOMIAL_LIMIT numpy's sampler. Above it, Poissonisation, which keeps the exact law
    (a plain Poisson(trials p) would be off by up to p in total variation, Barbour & Hall 1984, i.e. a
    delta): throw K ~ Poisson(lambda) points uniformly on the trials with lambda = -trials log(1 - p).
    Each trial receives Poisson(lambda / trials) points independently, so it is hit with probability
    1 - exp(log(1 - p)) = p, independently of the others: the number of DISTINCT trials hit is
    Binomial(trials, p). Callers keep trials * p <= MAX_EXPECTED_EMPTY, so K stays small.
    """
    trials = int(trials)
    if trials <= 0 or p <= 0.0:
        return 0
    if p >= 1.0:
        return trials
    if trials < EXACT_BINOMIAL_LIMIT:
        return int(rng.binomial(trials, p))
    k = int(rng.poisson(-float(trials) * math.log1p(-p)))
    return len(set(_uniform_below(rng, trials, k)))


def _uniform_below(rng: np.random.Generator, bound: int, k: int) -> list[int]:
    """k independent uniform integers in [0, bound) for a Python-int bound: uniform on [0, 2^bits) from
    62-bit words (the top one narrower), rejecting values >= bound (acceptance above 1/2)."""
    bits = bound.bit_length()
    words = -(-bits // 62)
    top = bits - 62 * (words - 1)
    out: list[int] = []
    while len(out) < k:
        need = k - len(out)
        low = rng.integers(0, 2**62, size=(2 * need + 8, words - 1), dtype=np.int64)
        high = rng.integers(0, 2**top, size=2 * need + 8, dtype=np.int64)
        values = [
            (int(h) << (62 * (words - 1))) + sum(int(w) << (62 * i) for i, w in enumerate(row))
            for h, row in zip(high, low)
        ]
        out += [v for v in values if v < bound][:need]
    return out


PLAN_VALUE_LIMIT = float(2**53)  # largest noise scale / threshold a plan may need (exact in float and int64)


class CellGrid:
    """A product grid given by per-axis sizes; cells are rows of int64 coordinates.

    Keys identify cells for sorting / membership: one int64 when the grid has fewer than 2^63 cells,
    otherwise several int64 words viewed as one fixed-size byte string (so 10^40 cells work).
    """

    def __init__(self, sizes):
        self.sizes = [int(s) for s in sizes]
        if any(s < 1 or s > 2**MAX_AXIS_SPLITS for s in self.sizes):
            raise ValueError(f"axis sizes must be in 1..2^{MAX_AXIS_SPLITS}, got {self.sizes}")
        self.total = math.prod(self.sizes)  # Python int
        self.words: list[list[int]] = [[]]
        prod = 1
        for j, s in enumerate(self.sizes):
            if prod * s >= 2**63:
                self.words.append([])
                prod = 1
            self.words[-1].append(j)
            prod *= s

    def keys(self, coords: np.ndarray) -> np.ndarray:
        coords = np.asarray(coords, dtype=np.int64).reshape(-1, len(self.sizes))
        cols = []
        for axes in self.words:
            key = np.zeros(len(coords), dtype=np.int64)
            for j in axes:
                key = key * self.sizes[j] + coords[:, j]
            cols.append(key)
        if len(cols) == 1:
            return cols[0]
        return np.ascontiguousarray(np.column_stack(cols)).view(np.dtype((np.void, 8 * len(cols)))).ravel()

    def cells_of(self, linear: np.ndarray) -> np.ndarray:
        """Coordinates of cells given by their row-major index (= key on a one-word grid)."""
        return np.column_stack(np.unravel_index(linear, self.sizes)).astype(np.int64).reshape(-1, len(self.sizes))


def _isin_sorted(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    if len(sorted_keys) == 0:
        return np.zeros(len(keys), dtype=bool)
    pos = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return sorted_keys[pos] == keys


def sample_empty_cells(rng: np.random.Generator, grid: CellGrid, occupied: np.ndarray, m: int) -> np.ndarray:
    """m distinct cells drawn uniformly among those whose key is not in ``occupied`` (sorted keys).

    The sampling path depends only on the grid (public: schema and parameters), never on the data: a
    path that fails or slows down when many cells are occupied would let one replaced record flip
    whether a release succeeds (a plain rejection sampler raised "grid too densely
    occupied" on grids above 16 x 2^20 cells with fewer than a quarter free). Grids below 2^63 cells
    (one-word keys, the row-major cell index) draw ranks among the FREE cells and map them to cells
    exactly (:func:`_empty_by_rank`): the complement of the occupied set, in O(m log n), however dense.
    Larger grids reject occupied cells (Supplementary E.1): there at most n < 2^62 of the >= 2^63 cells
    are occupied, so every candidate is accepted with probability above 1/2 whatever the data.
    """
    d = len(grid.sizes)
    if m <= 0:
        return np.zeros((0, d), dtype=np.int64)
    free = grid.total - len(occupied)
    if m > free:
        raise ValueError(f"cannot draw {m} empty cells out of {free}")
    if len(grid.words) == 1:
        return _empty_by_rank(rng, grid, occupied, m)
    return _empty_by_rejection(rng, grid, occupied, m)


def _empty_by_rank(rng: np.random.Generator, grid: CellGrid, occupied: np.ndarray, m: int) -> np.ndarray:
    """Uniform distinct ranks r among the free cells, mapped to the r-th free cell index.

    With occupied indices o_0 < o_1 < ..., the r-th free index (0-based) is r + #{j : o_j - j <= r}
    (o_j - j, the number of free cells below o_j, is non-decreasing, so one ``searchsorted``)."""
    occupied = np.asarray(occupied, dtype=np.int64)
    ranks = rng.choice(grid.total - len(occupied), size=m, replace=False).astype(np.int64)
    below = occupied - np.arange(len(occupied), dtype=np.int64)
    return grid.cells_of(ranks + np.searchsorted(below, ranks, side="right"))


def _empty_by_rejection(rng: np.random.Generator, grid: CellGrid, occupied: np.ndarray, m: int) -> np.ndarray:
    """Per-axis uniform coordinates, rejecting occupied cells and repeats (Supplementary E.1)."""
    d = len(grid.sizes)
    chosen = np.zeros((0, d), dtype=np.int64)
    while len(chosen) < m:
        batch = 2 * (m - len(chosen)) + 16
        cand = np.column_stack([rng.integers(0, s, size=batch, dtype=np.int64) for s in grid.sizes])
        cand = cand[~_isin_sorted(occupied, grid.keys(cand))]
        both = np.concatenate([chosen, cand])
        _, first = np.unique(grid.keys(both), return_index=True)
        first.sort()  # keep earlier picks first: the result is an i.i.d.-then-deduplicated sequence
        chosen = both[first]
    return chosen[:m]


# ------------------------------------------------------------------------------------------------
# Shared mechanism plumbing
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Released:
    """The private summary: released cells, their noisy counts and (adaptive) depths.

    Cells are kept in a canonical order (by depth, then coordinates) so that nothing in the summary
    tells which released cells were empty in the data.
    """

    coords: np.ndarray  # (L, D) int64 cell coordinates
    depth: np.ndarray  # (L,) int64 tree depth (0 for the grid)
    weights: np.ndarray  # (L,) int64 noisy counts (all >= the threshold)

    @classmethod
    def canonical(cls, coords, depth, weights) -> "_Released":
        coords = np.asarray(coords, dtype=np.int64)
        order = np.lexsort(tuple(coords[:, j] for j in range(coords.shape[1] - 1, -1, -1)) + (np.asarray(depth),))
        return cls(coords[order], np.asarray(depth, dtype=np.int64)[order], np.asarray(weights, dtype=np.int64)[order])


def _theorem3_width(*, n: int, d: int, C: int, epsilon: float, beta: float) -> float:
    """Minimiser of Theorem 3's bound in unit coordinates (see module docstring)."""
    return (16.0 * C * math.sqrt(d * math.e) * math.log(1.0 / beta) / (epsilon * n)) ** (1.0 / (d + 1))


def _theorem5_threshold(*, epsilon: float, cells: int, beta: float) -> float:
    """Theorem 5: t = (8/ε) log(1/δ) with δ = min(β, 1/J)."""
    log_inv_delta = max(math.log(1.0 / beta), math.log(cells)) if cells > 1 else math.log(1.0 / beta)
    return 8.0 / epsilon * log_inv_delta


_COMMON_PARAMS = (
    ParamSpec(
        "threshold",
        "float",
        None,
        "Survival threshold t on noisy counts (default: Theorem 5, t = 8/ε_counts · log(1/δ), δ = min(beta, 1/#cells))",
        minimum=0.0,
        optional=True,
    ),
    ParamSpec(
        "beta",
        "float",
        DEFAULT_BETA,
        "Failure probability δ used by the default formulas of "
        "Theorems 3/5 and Lemma 10 (a utility knob; it does not weaken the privacy guarantee)",
        minimum=1e-12,
        maximum=0.5,
    ),
    ParamSpec(
        "placement",
        "choice",
        "uniform",
        "Where synthetic rows go inside their cell: 'uniform' (default) or 'center' (the paper's bin centres)",
        choices=PLACEMENTS,
    ),
)


class _KDBase(Mechanism):
    supported_kinds = frozenset({"continuous", "integer", "categorical"})
    needs_delta = False

    def __init__(self, schema, **kw):
        super().__init__(schema, **kw)
        self._num = [j for j, c in enumerate(schema.kept) if c.is_numeric]
        self._cat = [j for j, c in enumerate(schema.kept) if not c.is_numeric]
        self._cat_sizes = {j: len(schema.kept[j].categories) for j in self._cat}
        self.C = math.prod(self._cat_sizes.values()) if self._cat else 1
        self.released: _Released | None = None
        self.config: dict[str, Any] = {}
        # NOT differentially private: counts of non-empty cells/nodes and of released empty cells, for
        # tests and benchmarks only. Never saved in the summary nor shown in the report.
        self.diagnostics: dict[str, Any] = {}

    # -- geometry ---------------------------------------------------------------------------------
    def check_plan(self, n: int) -> None:
        cfg = self._resolve(n)  # public: n, schema, params; refuses e.g. a grid flooded by empty cells
        # Noise scales, thresholds and noisy counts are int64 / exact floats inside fit: refuse here a
        # budget so small that they would overflow there (epsilon 1e-30 would raise OverflowError in fit,
        # after the budget is spent).
        big = sorted(
            k
            for k, v in cfg.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) > PLAN_VALUE_LIMIT
        )
        if big:
            raise ValueError(
                f"epsilon={self.epsilon:g} is too small for {self.name}: its noise "
                f"{', '.join(f'{k}={cfg[k]:.3g}' for k in big)} would exceed {PLAN_VALUE_LIMIT:.3g}"
            )

    def _cell_bounds(self, coords: np.ndarray, depth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Lower corner and edge length of each cell in to_unit coordinates (categorical: code, 0)."""
        raise NotImplementedError

    def sample(self, n: int) -> pd.DataFrame:
        n = self._check_rows(n)
        rng = self.noise.rng
        rel = self.released
        D = len(self.schema.kept)
        w = rel.weights.astype(float)
        if len(w) == 0 or w.sum() <= 0:
            # nothing survived the threshold: the release carries no information; draw uniformly
            # over the public domain (data-independent)
            X = rng.random((n, D))
            for j in self._cat:
                X[:, j] = rng.integers(0, self._cat_sizes[j], size=n)
            return self.schema.from_unit(X)
        lo, width = self._cell_bounds(rel.coords, rel.depth)
        cum = np.cumsum(w)
        idx = np.minimum(np.searchsorted(cum, rng.random(n) * cum[-1], side="right"), len(w) - 1)
        offset = rng.random((n, D)) if self.params["placement"] == "uniform" else 0.5
        X = lo[idx] + offset * width[idx]
        return self.schema.from_unit(X)

    # -- counts release (Algorithm 1 lines 9-12 with Algorithm 5 for empty cells) -----------------
    def _count_scale(self, eps_counts: float) -> float:
        return laplace_scale(sensitivity=COUNT_SENSITIVITY, epsilon=eps_counts)

    def _noisy_counts(self, counts: np.ndarray, eps_counts: float) -> np.ndarray:
        return self.noise.laplace_int(counts, scale=self._count_scale(eps_counts))

    def _check_expected_empty(self, cells: int, p: float, what: str) -> None:
        if cells * p > MAX_EXPECTED_EMPTY:
            raise ValueError(
                f"{what}: {cells:.3g} cells x P[noise passes] {p:.3g} = {cells * p:.3g} expected empty cells "
                f"would pass (limit {MAX_EXPECTED_EMPTY}); raise the threshold or coarsen the grid"
            )

    # -- summary --------------------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        rel = self.released
        return {"coords": rel.coords, "depth": rel.depth, "weights": rel.weights, "config": self.config}

    def _load_summary(self, summary: dict[str, Any]) -> None:
        D = len(self.schema.kept)
        coords = np.asarray(summary["coords"], dtype=np.int64).reshape(-1, D)
        self.released = _Released(
            coords, np.asarray(summary["depth"], dtype=np.int64), np.asarray(summary["weights"], dtype=np.int64)
        )
        self.config = dict(summary["config"])

    def report(self) -> dict:
        rel = self.released
        out = {"config": self.config}  # public: parameters, and functions of the DP release only
        if rel is not None:
            out.update(released_cells=int(len(rel.weights)), total_noisy_weight=int(rel.weights.sum()))
            if len(rel.weights) == 0:
                out["warning"] = (
                    "no cell reached the threshold: synthetic rows are drawn uniformly over the "
                    "public domain (lower the threshold or coarsen the cells)"
                )
        return out

    def _caveats(self) -> tuple[str, ...]:
        return (
            "which empty cells get a positive noisy count, and how many, is drawn implicitly with numpy's "
            "floating-point Binomial (Poissonised, exact in law, above 2^62 trials) and uniform samplers on a "
            "private Philox stream keyed from the OS CSPRNG, separate from the stream that draws the published "
            "rows; the noisy counts themselves come from the exact discrete Laplace sampler",
            "cells are cut on the public schema bounds (not the data's range as in the paper); values outside "
            "the bounds were clipped by the schema",
        )


# ------------------------------------------------------------------------------------------------
# Algorithm 1: data-independent grid
# ------------------------------------------------------------------------------------------------


class KDTreeGrid(_KDBase):
    """Algorithm 1 (data-independent binning) with implicit empty cells (Algorithm 5, Suppl. E.1)."""

    name = "kdtree-grid"
    title = "KD-tree DP synthetic data: data-independent grid (Algorithm 1)"
    paper = "Kreačić et al., Differentially Private Synthetic Data Using KD-Trees, UAI 2023 (Algorithm 1)"
    # public inputs only (guide.py): accuracy and near-uniform rule, run time, steward help, model quality
    predict_accuracy = staticmethod(guide.predict_accuracy)
    near_uniform = staticmethod(guide.near_uniform)
    runtime_model = guide.GRID_RUNTIME
    steward_help = guide.GRID_HELP
    tstr_measured = guide.GRID_TSTR
    speed_rank = 1
    target_structure = "joint"
    params = (
        ParamSpec(
            "width",
            "float",
            None,
            "Cell width w as a fraction of each numeric column's public range "
            "(default: minimiser of Theorem 3's bound)",
            minimum=1e-18,
            maximum=1.0,
            optional=True,
        ),
        *_COMMON_PARAMS,
    )

    def __init__(self, schema, **kw):
        super().__init__(schema, **kw)
        if self.params["width"] is not None and self.params["threshold"] is not None:
            self._resolve(1)  # n is not needed: refuse a grid flooded by empty cells before any data is read

    def _resolve(self, n: int) -> dict:
        p = self.params
        d = len(self._num)
        beta = p["beta"]
        if p["width"] is not None:
            k = int(math.ceil(1.0 / p["width"] - 1e-9))
        elif d == 0:
            k = 1
        else:
            w = _theorem3_width(n=n, d=d, C=self.C, epsilon=self.epsilon, beta=beta)
            k = max(1, int(math.ceil(1.0 / w - 1e-9)))
            limit = self.epsilon * n / (4.0 * math.log(1.0 / beta))
            while k > 1 and self.C * k**d >= limit:  # Theorem 3's condition J < εn / (4 log 1/β)
                k -= 1
        grid = self._grid(k)
        t = (
            p["threshold"]
            if p["threshold"] is not None
            else _theorem5_threshold(epsilon=self.epsilon, cells=grid.total, beta=beta)
        )
        T = count_threshold(t)
        scale = self._count_scale(self.epsilon)
        p_t = dlap_tail(scale, T)
        self._check_expected_empty(grid.total, p_t, "kdtree-grid")
        return {
            "bins_per_axis": k,
            "cells": str(grid.total),
            "threshold": t,
            "T": T,
            "count_scale": scale,
            "p_empty_survives": p_t,
        }

    def _grid(self, k: int) -> CellGrid:
        return CellGrid([k if c.is_numeric else len(c.categories) for c in self.schema.kept])

    def _fit(self, source: TableSource) -> None:
        cfg = self._resolve(source.n)  # public: n, schema, params
        self.config = cfg
        rng = self.noise.private_rng  # private choices: which empty cells
        X = self.schema.to_unit(source.frame())
        self.progress(0.1, "binning")
        k, grid = cfg["bins_per_axis"], self._grid(cfg["bins_per_axis"])
        coords = X.astype(np.int64)  # categorical codes
        for j in self._num:
            coords[:, j] = np.minimum((X[:, j] * k).astype(np.int64), k - 1)
        keys = grid.keys(coords)
        occupied, first, counts = np.unique(keys, return_index=True, return_counts=True)
        cells = coords[first]
        self.progress(0.4, "noising the non-empty cell counts")  # no data-dependent number in messages
        noisy = self._noisy_counts(counts, self.epsilon)
        keep = noisy >= cfg["T"]
        self.progress(0.8, "sampling surviving empty cells")
        m = binomial(rng, grid.total - len(occupied), cfg["p_empty_survives"])
        empty_cells = sample_empty_cells(rng, grid, occupied, m)
        empty_w = conditioned_dlap(self.noise, m, scale=cfg["count_scale"], T=cfg["T"])
        all_cells = np.concatenate([cells[keep], empty_cells])
        self.released = _Released.canonical(
            all_cells, np.zeros(len(all_cells), dtype=np.int64), np.concatenate([noisy[keep], empty_w])
        )
        self.diagnostics = {"nonempty_cells": int(len(counts)), "released_empty_cells": int(m)}
        self.progress(1.0, "done")

    def _cell_bounds(self, coords, depth):
        k = self.config["bins_per_axis"]
        lo = coords.astype(float)
        width = np.zeros(coords.shape)
        lo[:, self._num] /= k
        width[:, self._num] = 1.0 / k
        return lo, width

    def privacy_cost(self) -> PrivacyCost:
        return PrivacyCost(
            epsilon=self.epsilon,
            delta=0.0,
            guarantee="pure",
            caveats=self._caveats(),
            details={
                "algorithm": "Algorithm 1 (data-independent grid)",
                "count_l1_sensitivity": COUNT_SENSITIVITY,
                "discrete_laplace_scale": self._count_scale(self.epsilon),
                **self.config,
            },
            events=(
                LaplaceEvent(self._count_scale(self.epsilon), COUNT_SENSITIVITY, discrete=True, label="cell counts"),
            ),
        )


# ------------------------------------------------------------------------------------------------
# Algorithms 2-3: adaptive binning, then Algorithm 1 on the leaves
# ------------------------------------------------------------------------------------------------


class KDTreeAdaptive(_KDBase):
    """Algorithms 2-3 (adaptive binning) + Algorithm 1 on the leaves, implicit empty nodes (Sec. 3.2.2)."""

    name = "kdtree-adaptive"
    title = "KD-tree DP synthetic data: adaptive binning (Algorithms 2-3)"
    paper = "Kreačić et al., Differentially Private Synthetic Data Using KD-Trees, UAI 2023 (Algorithms 2-3)"
    # public inputs only (guide.py): accuracy and near-uniform rule, run time, steward help, model quality
    predict_accuracy = staticmethod(guide.predict_accuracy)
    near_uniform = staticmethod(guide.near_uniform)
    runtime_model = guide.ADAPTIVE_RUNTIME
    steward_help = guide.ADAPTIVE_HELP
    tstr_measured = guide.ADAPTIVE_TSTR
    speed_rank = 2
    target_structure = "joint"
    params = (
        ParamSpec(
            "split",
            "float",
            0.5,
            "Fraction ε'/ε of the budget spent on the adaptive partition; the rest (ε'') noises the leaf counts",
            minimum=0.01,
            maximum=0.99,
        ),
        ParamSpec(
            "levels_independent",
            "int",
            None,
            "h: data-independent halving levels (max edge s1; default from Theorem 3's width)",
            minimum=0,
            maximum=4000,
            optional=True,
        ),
        ParamSpec(
            "levels_adaptive",
            "int",
            None,
            "h' - h: data-dependent levels (default: whole rounds over "
            f"the numeric axes, at least {MIN_ADAPTIVE_LEVELS})",
            minimum=1,
            maximum=4000,
            optional=True,
        ),
        ParamSpec(
            "tau",
            "float",
            None,
            "Split threshold τ on noisy node counts (default: Lemma 10)",
            minimum=0.0,
            optional=True,
        ),
        *_COMMON_PARAMS,
    )

    def __init__(self, schema, **kw):
        super().__init__(schema, **kw)
        p = self.params
        if p["levels_independent"] is not None and p["levels_adaptive"] is not None:
            self._resolve(0)  # checks that need no n (n = 0 gives lower bounds on the cell counts)

    # -- configuration -------------------------------------------------------------------------
    def _budgets(self) -> tuple[float, float]:
        if not self._num:  # no numeric axis: no adaptive levels, the whole budget noises the counts
            return 0.0, self.epsilon
        e1, e2 = split_budget(self.epsilon, [self.params["split"], 1.0 - self.params["split"]])
        return e1, e2

    def _resolve(self, n: int) -> dict:
        p = self.params
        d = len(self._num)
        beta = p["beta"]
        eps_tree, eps_counts = self._budgets()
        if d == 0:
            h, L = 0, 0
        else:
            if p["levels_independent"] is not None:
                h = p["levels_independent"]
            else:
                w = _theorem3_width(n=n, d=d, C=self.C, epsilon=eps_counts, beta=beta)
                h = max(0, int(math.floor(d * math.log2(1.0 / w)))) if w < 1 else 0
            L = p["levels_adaptive"] if p["levels_adaptive"] is not None else d * math.ceil(MIN_ADAPTIVE_LEVELS / d)
            if math.ceil((h + L) / d) > MAX_AXIS_SPLITS:
                raise ValueError(
                    f"at most {MAX_AXIS_SPLITS} halvings per axis: h + (h'-h) must be <= "
                    f"{MAX_AXIS_SPLITS * d}, got h={h}, h'-h={L}"
                )
        cells_h = self.C * 2**h
        cfg: dict[str, Any] = {
            "levels_independent": h,
            "levels_adaptive": L,
            "cells_level_h": str(cells_h),
            "epsilon_partition": eps_tree,
            "epsilon_counts": eps_counts,
        }
        if L:
            dec_scale = laplace_scale(sensitivity=2 * L, epsilon=eps_tree)
            tau = p["tau"] if p["tau"] is not None else 2.0 * L / eps_tree * math.log((cells_h + n * L) / beta)
            p_split = dlap_tail(dec_scale, int(math.floor(tau)) + 1)  # split iff count + noise > τ
            self._check_expected_empty(cells_h, p_split, "kdtree-adaptive split decisions")
            cfg.update(decision_scale=dec_scale, tau=tau, p_empty_splits=p_split)
        cfg["count_scale"] = self._count_scale(eps_counts)
        if p["threshold"] is not None:
            # Lemma 29 bounds the number of leaves by C 2^h + n (h'-h) (a few more if empty nodes split)
            self._threshold(cfg, p["threshold"], max_leaves=cells_h + n * L)
        return cfg

    def _threshold(self, cfg: dict, t: float, *, max_leaves: int) -> None:
        T = count_threshold(t)
        p_t = dlap_tail(cfg["count_scale"], T)
        self._check_expected_empty(max_leaves, p_t, "kdtree-adaptive counts")
        cfg.update(threshold=t, T=T, p_empty_survives=p_t)

    def _splits(self, depth: np.ndarray | int) -> np.ndarray:
        """Halvings of each numeric axis (in self._num order) after ``depth`` levels: (len(depth), d)."""
        d = len(self._num)
        depth = np.atleast_1d(np.asarray(depth, dtype=np.int64))
        r = np.arange(d)
        return depth[:, None] // d + (r[None, :] < (depth[:, None] % d))

    def _grid_at(self, depth: int) -> CellGrid:
        sizes = [len(c.categories) if not c.is_numeric else 1 for c in self.schema.kept]
        for r, j in enumerate(self._num):
            sizes[j] = 2 ** int(self._splits(depth)[0, r])
        return CellGrid(sizes)

    def _coords_at(self, X: np.ndarray, depth: int) -> np.ndarray:
        coords = X.astype(np.int64)
        for r, j in enumerate(self._num):
            size = 2 ** int(self._splits(depth)[0, r])
            coords[:, j] = np.minimum((X[:, j] * size).astype(np.int64), size - 1)
        return coords

    def _children(self, coords: np.ndarray, depth: int) -> np.ndarray:
        """Both children (interleaved left, right) of the nodes ``coords`` at ``depth``."""
        a = self._num[depth % len(self._num)]
        kids = np.repeat(coords, 2, axis=0)
        kids[:, a] = 2 * kids[:, a] + np.tile(np.array([0, 1], dtype=np.int64), len(coords))
        return kids

    # -- fit --------------------------------------------------------------------------------------
    def _fit(self, source: TableSource) -> None:
        cfg = self._resolve(source.n)
        self.config = cfg
        rng = self.noise.private_rng  # private choices: which empty cells
        X = self.schema.to_unit(source.frame())
        D = X.shape[1]
        h, L = cfg["levels_independent"], cfg["levels_adaptive"]
        self.progress(0.05, f"data-independent levels (h={h})")
        # Algorithm 2 + data-independent part of Algorithm 3: every node at depth h exists.
        grid_h = self._grid_at(h)
        keys_h, first, inv, counts = np.unique(
            grid_h.keys(self._coords_at(X, h)), return_index=True, return_inverse=True, return_counts=True
        )
        inv = inv.ravel()
        nodes = self._coords_at(X[first], h)
        active = np.arange(len(X))
        leaves = {"coords": [], "depth": [], "count": []}
        empty_leaves = {"coords": [], "depth": []}
        split_empty_h = np.zeros((0, D), dtype=np.int64)
        empty_nodes = np.zeros((0, D), dtype=np.int64)  # explicit empty nodes at the current depth
        n_decisions = n_empty_split = 0
        for depth in range(h, h + L):
            self.progress(0.1 + 0.7 * (depth - h) / max(L, 1), f"adaptive level {depth - h + 1}/{L}")
            # line 5: split iff count + DLap(2(h'-h)/ε') > τ (non-empty nodes, explicit noise)
            noisy = self.noise.laplace_int(counts, scale=cfg["decision_scale"])
            n_decisions += len(counts)
            split = noisy > cfg["tau"]
            leaves["coords"].append(nodes[~split])
            leaves["depth"].append(np.full(int((~split).sum()), depth))
            leaves["count"].append(counts[~split])
            # the same decision for empty nodes, implicitly: Binomial(#empty, P[noise > τ])
            if depth == h:
                s = binomial(rng, grid_h.total - len(keys_h), cfg["p_empty_splits"])
                split_empty = sample_empty_cells(rng, grid_h, keys_h, s)
                split_empty_h = split_empty
            else:
                s = binomial(rng, len(empty_nodes), cfg["p_empty_splits"])
                pick = np.zeros(len(empty_nodes), dtype=bool)
                pick[rng.choice(len(empty_nodes), size=s, replace=False)] = True
                split_empty = empty_nodes[pick]
                empty_leaves["coords"].append(empty_nodes[~pick])
                empty_leaves["depth"].append(np.full(int((~pick).sum()), depth))
            n_empty_split += len(split_empty)
            # lines 8-19: halve the split nodes along axis depth mod d
            a = self._num[depth % len(self._num)]
            rank = np.cumsum(split) - 1
            rec = split[inv]
            active, parent = active[rec], rank[inv[rec]]
            size = 2 ** int(self._splits(depth + 1)[0, self._num.index(a)])
            bit = np.minimum((X[active, a] * size).astype(np.int64), size - 1) & 1
            child = 2 * parent + bit
            kids = self._children(nodes[split], depth)
            kid_counts = np.bincount(child, minlength=len(kids))
            present = kid_counts > 0
            inv = (np.cumsum(present) - 1)[child]
            nodes, counts = kids[present], kid_counts[present]
            empty_nodes = np.concatenate([kids[~present], self._children(split_empty, depth)])
        # line 7: nodes at depth h' are leaves
        leaves["coords"].append(nodes)
        leaves["depth"].append(np.full(len(nodes), h + L))
        leaves["count"].append(counts)
        if L:
            empty_leaves["coords"].append(empty_nodes)
            empty_leaves["depth"].append(np.full(len(empty_nodes), h + L))
        self.progress(0.85, "noising leaf counts")
        self.released = self._release_leaves(cfg, grid_h, keys_h, split_empty_h, leaves, empty_leaves, D)
        self.diagnostics.update(
            nonempty_leaves=int(sum(len(c) for c in leaves["count"])),
            decision_counts_noised=n_decisions,
            empty_nodes_split=n_empty_split,
        )
        self.progress(1.0, "done")

    def _release_leaves(self, cfg, grid_h, keys_h, split_empty_h, leaves, empty_leaves, D) -> _Released:
        rng = self.noise.private_rng  # private choices: which empty cells
        cat = lambda parts, shape: np.concatenate(parts) if parts else np.zeros(shape, dtype=np.int64)  # noqa: E731
        coords, depth = cat(leaves["coords"], (0, D)), cat(leaves["depth"], (0,))
        counts = cat(leaves["count"], (0,))
        e_coords, e_depth = cat(empty_leaves["coords"], (0, D)), cat(empty_leaves["depth"], (0,))
        taken = np.unique(np.concatenate([keys_h, grid_h.keys(split_empty_h)])) if len(split_empty_h) else keys_h
        n_leaves = len(counts) + len(e_coords) + (grid_h.total - len(taken))
        cfg["leaves"] = str(n_leaves)
        if "threshold" not in cfg:
            # Theorem 5 on the released partition (post-processing of the ε'-DP tree): J = its leaves
            self._threshold(
                cfg,
                _theorem5_threshold(epsilon=cfg["epsilon_counts"], cells=n_leaves, beta=self.params["beta"]),
                max_leaves=n_leaves,
            )
        noisy = self._noisy_counts(counts, cfg["epsilon_counts"])
        keep = noisy >= cfg["T"]
        T, p_t, scale = cfg["T"], cfg["p_empty_survives"], cfg["count_scale"]
        # empty leaves below depth h: an explicit (short) list
        mb = binomial(rng, len(e_coords), p_t)
        pick = rng.choice(len(e_coords), size=mb, replace=False) if mb else np.zeros(0, dtype=np.int64)
        # empty depth-h cells that did not split: implicit, by rejection against non-empty and split ones
        h = cfg["levels_independent"]
        ma = binomial(rng, grid_h.total - len(taken), p_t)
        a_coords = sample_empty_cells(rng, grid_h, taken, ma)
        w_empty = conditioned_dlap(self.noise, ma + mb, scale=scale, T=T)
        self.diagnostics = {"released_empty_cells": int(ma + mb)}
        return _Released.canonical(
            np.concatenate([coords[keep], e_coords[pick], a_coords]),
            np.concatenate([depth[keep], e_depth[pick], np.full(ma, h, dtype=np.int64)]),
            np.concatenate([noisy[keep], w_empty]),
        )

    def _cell_bounds(self, coords, depth):
        lo = coords.astype(float)
        width = np.zeros(coords.shape)
        if self._num:
            size = np.exp2(self._splits(depth).astype(float))  # (L, d)
            lo[:, self._num] = coords[:, self._num] / size
            width[:, self._num] = 1.0 / size
        return lo, width

    def privacy_cost(self) -> PrivacyCost:
        eps_tree, eps_counts = self._budgets()
        details = {
            "algorithm": "Algorithms 2-3 (adaptive binning) + Algorithm 1 on the leaves",
            "epsilon_partition": eps_tree,
            "epsilon_counts": eps_counts,
            "count_l1_sensitivity": COUNT_SENSITIVITY,
            "composition": "basic: epsilon_partition + epsilon_counts",
            **self.config,
        }
        if self.config.get("levels_adaptive"):
            details["decision_l1_sensitivity"] = 2 * self.config["levels_adaptive"]
        caveats = self._caveats()
        if self._cat:
            caveats += (
                "categorical columns are split data-independently at the root (one cell per category "
                "combination); the cell count grows with their product",
            )
        events = (LaplaceEvent(self._count_scale(eps_counts), COUNT_SENSITIVITY, discrete=True, label="leaf counts"),)
        if eps_tree > 0:
            events = (EpsilonDeltaEvent(eps_tree, label="adaptive partition (noisy split decisions)"),) + events
        return PrivacyCost(
            epsilon=self.epsilon, delta=0.0, guarantee="pure", caveats=caveats, details=details, events=events
        )
