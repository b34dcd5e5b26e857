"""Private density estimate + linear-program reweighting.

Papers: Boedihardjo, Strohmer & Vershynin's Algorithm 1 (private synthetic data by reweighting
reference points to match noisy test-function means), with the reference measure mu chosen as in
Bojkovic & Loh, "Differentially Private Synthetic Data with Private Density Estimation"
(``papers/private-density-estimation-lp.txt``):

* ``uniform``   -- mu uniform on the public cell domain (BSV's original; Theorem B.1). No budget on mu.
* ``histogram`` -- mu = Wasserman & Zhou's perturbed histogram over the whole cell domain
  (the paper's Algorithm 2; Theorem III.1).
* ``bernstein`` -- mu = a private Gaussian kernel density estimate released through the Bernstein
  mechanism of Aldà & Rubinstein (the paper's Algorithm 3; Theorem IV.1), for all-numeric tables on
  [0,1]^p (``Schema.to_unit``), small p.
* ``product``   -- extension (not in the paper): mu = the product of the columns' perturbed 1-way
  histograms (Algorithm 2 per column), for domains too large for a full histogram.
* ``auto``      -- ``histogram`` when the cell domain is small enough, else ``product`` (decided from
  the public schema only).

Algorithm 1 as implemented (:meth:`DensityLP._fit`):

1. draw m reference points z_1..z_m from mu;
2. test functions F = indicators of every cell of every marginal table of degree 1..``degree`` over
   the schema's public cells (values in {0,1} within the paper's [-1,1]); their empirical means get
   Laplace noise: exact discrete Laplace on the integer COUNTS, divided by the public n;
3. solve min_h max_f |sum_i f(z_i) h_i - noisy_mean_f| over densities h on the z's as a sparse linear
   program in epigraph form with SciPy's HiGHS (t* is reported);
4. rows are drawn from h* (:meth:`DensityLP.sample`; post-processing).

Privacy (neighbours differ in one REPLACED record; n public). Write T for the number of marginal
tables (column subsets S with 1 <= |S| <= degree).

* LP noise. In one table the replaced record leaves one cell and enters one cell, so that table's
  count vector moves by at most 2 in L1; the whole count vector (all T tables) moves by at most 2T.
  (This is the paper's 2|F|/n bound on the means once |F| counts one function per marginal table, as
  in the paper's Boolean setting |F| = C(p, <=d); counting every cell indicator separately would
  over-state the sensitivity by the table sizes, since the indicators of one table sum to one.)
  Discrete Laplace of scale 2T/eps_lp on the counts is eps_lp-DP; dividing by the public n is
  post-processing, so this is the same guarantee as continuous Laplace of scale 2T/(n eps_lp) on the
  means, without floating-point sampling.
* Perturbed histogram (Algorithm 2). The full-domain count vector moves by at most 2 in L1; discrete
  Laplace of scale 2/eps_mu (the paper's density (eps/4) e^{-|w| eps/2}) is eps_mu-DP. Clipping at 0,
  normalising and sampling z from it are post-processing.
* Bernstein (Algorithm 3) on the KDE F(X, y) = (1/(n h^p)) sum_i K((y - x_i)/h), K the standard
  Gaussian density (H_0 = I). At one lattice point the KDE moves by at most S(F) = K(0)/(n h^p). The
  released vector of the (k+1)^p lattice values therefore moves by at most (k+1)^p S(F) in L1
  (Aldà & Rubinstein's scale; the paper's text prints S(F)(k+1)/eps, which is the same for p = 1 and
  too small for p >= 2). Because K > 0 we also have sum_y |K_x(y) - K_x'(y)| <= sum_y K_x(y) +
  sum_y K_x'(y) <= 2 B^p with B = sup_x sum_l phi((l/k - x)/h) <= phi(0) + 2 sum_{j>=1}
  phi((j - 1/2)/(k h)) (the product kernel factorises over coordinates, and the j-th lattice point
  on either side of x lies at distance >= (j - 1/2)/k). We use the smaller of the two bounds,
  Delta = min((k+1)^p K(0), 2 B^p) / (n h^p), and Laplace scale Delta/eps_mu (floats, through the
  exact OpenDP sampler in secure mode).
* Product reference: the p one-way count vectors together move by at most 2p in L1; discrete
  Laplace of scale 2p/eps_mu on all of them is eps_mu-DP.
* mu's release and the LP noise compose: eps = eps_mu + eps_lp (the paper's "2 eps" with the default
  half/half split). ``uniform`` spends all of eps on the LP noise.

Gaussian mode (``noise_type="gaussian"``, needs a delta; an extension, not in the papers): the same
count vectors get discrete Gaussian noise, accounted in zCDP. A vector of L2 sensitivity D with noise
std sigma costs D^2 / (2 sigma^2) (Canonne, Kamath & Steinke 2020). Under replace-one each table's
count vector moves by (+1, -1): D^2 = 2 per table, so the LP's T tables have D^2 = 2T and get
sigma = sqrt(T / rho_lp); the full histogram D^2 = 2 (sigma = sqrt(1 / rho_mu)); the product's p
columns D^2 = 2p (sigma = sqrt(p / rho_mu)); the Bernstein lattice uses its L1 bound as the L2 bound
(L2 <= L1), Gaussian on floats. rho is the largest that converts to the requested (epsilon, delta)
(:func:`~mechanisms.accounting.zcdp_rho`), split between mu and the LP like epsilon above. The LP's
noise then grows like sqrt(T) instead of T: with many columns this is most of the error.

Every step after the noise (sampling z, the LP, sampling rows) is post-processing.
"""

from __future__ import annotations

import itertools
import math
import time
import warnings
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.optimize import OptimizeWarning, linprog
from scipy.stats import binom

from ...accounting import EpsilonDeltaEvent, PrivacyCost, ZCDPEvent, split_budget, zcdp_rho
from ...base import NOISE_MODE, Mechanism, ParamSpec
from ...noise import Noise, laplace_scale
from ...schema import Schema
from ...source import TableSource
from . import guide

# -- tuning constants --------------------------------------------------------------------------------
# Accuracy target delta and failure probability gamma used to derive the default m from the theorems
# (the values of the paper's App. C-C simulation).
ACCURACY_DELTA = 0.5
GAMMA = 0.25
# Time/memory budget for m: the LP matrix has m * T nonzeros twice; 20,000 points with adult's 120
# two-way tables (4.8M nonzeros) solves in well under a minute on one core.
M_CAP = 20_000
LP_NNZ_CAP = 6_000_000
# The perturbed histogram noises every cell of the domain (secure discrete Laplace ~0.7 s per 1e5).
HISTOGRAM_MAX_CELLS = 2**21
# The Bernstein lattice has (k+1)^p points; keep it small enough for float noise (~2 s per 1e5).
BERNSTEIN_MAX_DIM = 3
BERNSTEIN_MAX_LATTICE_POINTS = 20_000
DEFAULT_LATTICE = {1: 64, 2: 24, 3: 10}  # cover size k per dimension p ((k+1)^p <= 1,331 points)
# mu from the Bernstein estimate is sampled piecewise-constant on a grid of this many cells
# (post-processing: it only changes utility, never privacy).
SAMPLING_GRID_CELLS = 2**18
KDE_CHUNK = 2_000_000  # floats per chunk when summing kernels over records
SOLVER_TIME_LIMIT_S = 600.0
# HiGHS interior point WITHOUT crossover: an optimal point inside the optimal face, so h* spreads its
# weight over many reference points (a simplex vertex keeps at most ~|F| of the m points, and every
# synthetic row then repeats one of them); it is also the fastest option measured on adult.
LP_METHOD = "highs-ipm"
# Presolve off: the empty rows are folded by hand (below) and, on adult with uniform mu at eps = 10,
# IPX failed numerically after HiGHS's presolve but solved the unreduced LP in 37 s.
LP_OPTIONS = {"run_crossover": "off", "presolve": False}
TIE_BREAK_SLACK = 1e-6  # the second LP keeps max error <= t* (1 + slack)

COUNT_SENSITIVITY_PER_TABLE = 2  # replace-one moves one unit out of one cell and into another
HISTOGRAM_SENSITIVITY = 2

REFERENCES = ("auto", "uniform", "histogram", "product", "bernstein")


# ---------------------------------------------------------------------------------------------------
# Test functions: indicators of all marginal cells up to a degree
# ---------------------------------------------------------------------------------------------------


def marginal_tables(n_columns: int, degree: int) -> list[tuple[int, ...]]:
    """All column subsets S with 1 <= |S| <= degree (the constant function is implied by sum h = 1)."""
    if degree < 1:
        raise ValueError(f"degree must be at least 1, got degree={degree}")
    return [s for d in range(1, min(degree, n_columns) + 1) for s in itertools.combinations(range(n_columns), d)]


def table_offsets(sizes: list[int], tables: list[tuple[int, ...]]) -> np.ndarray:
    """Start row of each table's cells in the stacked function vector (last entry = |F|)."""
    lengths = [math.prod(sizes[j] for j in s) for s in tables]
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def function_rows(cells: np.ndarray, sizes: list[int], tables: list[tuple[int, ...]]) -> np.ndarray:
    """(N, T) int array: for each point, the row of the one indicator it hits in every table."""
    offsets = table_offsets(sizes, tables)
    rows = np.empty((len(cells), len(tables)), dtype=np.int64)
    for t, s in enumerate(tables):
        rows[:, t] = offsets[t] + np.ravel_multi_index(cells[:, list(s)].T, [sizes[j] for j in s])
    return rows


def marginal_counts(
    cells: np.ndarray, sizes: list[int], tables: list[tuple[int, ...]], weights: np.ndarray | None = None
) -> np.ndarray:
    """Stacked integer counts of every marginal cell (length |F|). ``weights`` are record multiplicities."""
    n_functions = int(table_offsets(sizes, tables)[-1])
    rows = function_rows(cells, sizes, tables)
    w = None if weights is None else np.repeat(np.asarray(weights, dtype=np.int64), len(tables))
    counts = np.bincount(rows.ravel(), weights=w, minlength=n_functions)
    return np.rint(counts).astype(np.int64)


def design_matrix(points: np.ndarray, sizes: list[int], tables: list[tuple[int, ...]]) -> sparse.csc_matrix:
    """Sparse |F| x G matrix A[f, g] = f(z_g): exactly one 1 per table in each column (never dense)."""
    n_functions = int(table_offsets(sizes, tables)[-1])
    rows = function_rows(points, sizes, tables)
    g, t = rows.shape
    indptr = np.arange(0, g * t + 1, t, dtype=np.int64)
    return sparse.csc_matrix((np.ones(g * t), rows.ravel(), indptr), shape=(n_functions, g))


# ---------------------------------------------------------------------------------------------------
# Step 3: the linear program
# ---------------------------------------------------------------------------------------------------


def _highs(
    c: np.ndarray, a_ub: sparse.spmatrix, b_ub: np.ndarray, a_eq: sparse.spmatrix, bounds: np.ndarray
) -> np.ndarray:
    """Solve with LP_METHOD / LP_OPTIONS; if the interior point method stops short of optimality
    (it can stall on tight, degenerate instances), solve again with crossover, which finishes the
    interior point with the simplex method."""
    res = None
    for method, options in ((LP_METHOD, LP_OPTIONS), (LP_METHOD, {"run_crossover": "on", "presolve": True})):
        with warnings.catch_warnings():  # SciPy warns that it passes run_crossover to HiGHS verbatim
            warnings.simplefilter("ignore", OptimizeWarning)
            res = linprog(
                c,
                A_ub=a_ub,
                b_ub=b_ub,
                A_eq=a_eq,
                b_eq=[1.0],
                bounds=bounds,
                method=method,
                options={"time_limit": SOLVER_TIME_LIMIT_S, **options},
            )
        if res.status == 0 and res.x is not None:
            return res.x
    raise RuntimeError(f"the density LP did not solve: HiGHS status {res.status} ({res.message})")


def solve_density_lp(
    A: sparse.spmatrix, targets: np.ndarray, *, tie_break: bool = False
) -> tuple[np.ndarray, float, dict]:
    """min_h max_f |(A h)_f - y_f| over densities h (y = targets), in epigraph form:

        minimise t  s.t.  A h - t <= y,  -A h - t <= -y,  sum h = 1,  h >= 0, t >= 0.

    Any minimiser is a valid h* for the paper; with ``tie_break`` a second LP picks, among the
    minimisers (up to a relative 1e-6), one with the smallest total deviation sum_f |(A h)_f - y_f|:
    the max-error objective alone leaves every other function free to drift anywhere within +-t*.

        minimise sum r  s.t.  A h - r <= y,  -A h - r <= -y,  sum h = 1,  h >= 0,  0 <= r <= t*.

    Returns (h*, t*, info). HiGHS on sparse matrices.
    """
    n_all, g = A.shape
    y = np.asarray(targets, dtype=float)
    if y.shape != (n_all,):
        raise ValueError(f"targets must have length {n_all}, got shape {y.shape}")
    A = sparse.csr_matrix(A)
    # Rows no reference point hits only say t >= |y_f|: fold them into t's lower bound (HiGHS's own
    # presolve finds the same reduction, but much more slowly).
    hit = np.diff(A.indptr) > 0
    t_floor = float(np.max(np.abs(y[~hit]), initial=0.0))
    A, y = A[hit], y[hit]
    n_f = A.shape[0]
    a_eq = sparse.csr_matrix(np.concatenate([np.ones(g), [0.0]])[None, :])
    minus_one = sparse.csr_matrix(-np.ones((n_f, 1)))
    a_ub = sparse.vstack([sparse.hstack([A, minus_one]), sparse.hstack([-A, minus_one])], format="csr")
    c = np.zeros(g + 1)
    c[-1] = 1.0
    bounds = np.column_stack([np.zeros(g + 1), np.full(g + 1, np.inf)])
    bounds[-1, 0] = t_floor
    t0 = time.perf_counter()
    x = _highs(c, a_ub, np.concatenate([y, -y]), a_eq, bounds)
    h = np.clip(x[:g], 0.0, None)
    h = h / h.sum()
    t_star = max(float(x[-1]), float(np.max(np.abs(A @ h - y), initial=0.0)), t_floor)
    seconds_max = time.perf_counter() - t0
    info = {
        "lp_rows": int(a_ub.shape[0] + 1),
        "lp_columns": int(g + 1),
        "lp_nonzeros": int(a_ub.nnz + g),
        "lp_rows_folded": int(2 * (n_all - n_f)),
        "solve_seconds_max_error": round(seconds_max, 3),
        "solver": f"scipy.optimize.linprog(method={LP_METHOD!r}, {LP_OPTIONS})",
    }
    if tie_break and n_f > 0:
        cap = t_star * (1 + TIE_BREAK_SLACK) + 1e-12
        minus_eye = -sparse.identity(n_f, format="csr")
        a_ub2 = sparse.vstack([sparse.hstack([A, minus_eye]), sparse.hstack([-A, minus_eye])], format="csr")
        a_eq2 = sparse.csr_matrix(np.concatenate([np.ones(g), np.zeros(n_f)])[None, :])
        c2 = np.concatenate([np.zeros(g), np.ones(n_f)])
        bounds2 = np.column_stack([np.zeros(g + n_f), np.concatenate([np.full(g, np.inf), np.full(n_f, cap)])])
        x2 = _highs(c2, a_ub2, np.concatenate([y, -y]), a_eq2, bounds2)
        h2 = np.clip(x2[:g], 0.0, None)
        h2 = h2 / h2.sum()
        if np.max(np.abs(A @ h2 - y), initial=0.0) <= cap * (1 + 1e-6) + 1e-9:
            h = h2
        info["lp2_columns"] = int(g + n_f)
    info["solve_seconds"] = round(time.perf_counter() - t0, 3)
    info["support"] = int(np.count_nonzero(h > 1e-9))
    return h, t_star, info


# ---------------------------------------------------------------------------------------------------
# Reference measures
# ---------------------------------------------------------------------------------------------------


def perturbed_histogram(counts: np.ndarray, *, epsilon: float, noise: Noise) -> np.ndarray:
    """Algorithm 2's noisy counts C_j + w_j (before clipping), discrete Laplace of scale 2/epsilon.

    ``counts`` may carry leading batch axes (used by the audits); the noise is i.i.d. per entry.
    """
    scale = laplace_scale(sensitivity=HISTOGRAM_SENSITIVITY, epsilon=epsilon)
    return noise.laplace_int(counts, scale=scale)


def histogram_density(noisy_counts: np.ndarray) -> np.ndarray:
    """mu_j = max(C_j + w_j, 0) / sum_s max(C_s + w_s, 0) (uniform if every cell clipped to 0)."""
    d = np.clip(np.asarray(noisy_counts, dtype=float), 0.0, None)
    total = d.sum()
    return d / total if total > 0 else np.full(len(d), 1.0 / len(d))


def kernel_lattice_bound(lattice: int, bandwidth: float) -> float:
    """B >= sup_x sum_{l=0..k} phi((l/k - x)/h) for the standard normal density phi (1-D)."""
    j = np.arange(1, lattice + 1)
    phi0 = 1.0 / math.sqrt(2 * math.pi)
    tail = 2.0 * np.sum(np.exp(-0.5 * ((j - 0.5) / (lattice * bandwidth)) ** 2)) * phi0
    return min((lattice + 1) * phi0, phi0 + float(tail))


def bernstein_sensitivity(*, n: int, dim: int, lattice: int, bandwidth: float) -> float:
    """L1 sensitivity of the (k+1)^p lattice values of the Gaussian KDE under replace-one."""
    k0 = (2 * math.pi) ** (-dim / 2)
    pointwise = (lattice + 1) ** dim * k0  # (k+1)^p * S(F) * n h^p
    overlap = 2.0 * kernel_lattice_bound(lattice, bandwidth) ** dim
    return min(pointwise, overlap) / (n * bandwidth**dim)


def kde_on_lattice(unit: np.ndarray, *, lattice: int, bandwidth: float) -> np.ndarray:
    """F(X, y) = (1/(n h^p)) sum_i prod_d phi((y_d - x_id)/h) at y in {0, 1/k, ..., 1}^p: shape (k+1,)*p."""
    n, p = unit.shape
    grid = np.arange(lattice + 1) / lattice
    total = np.zeros((lattice + 1,) * p)
    chunk = max(1, KDE_CHUNK // ((lattice + 1) ** max(p - 1, 1)))
    for start in range(0, n, chunk):
        x = unit[start : start + chunk]
        phis = [
            np.exp(-0.5 * ((grid[None, :] - x[:, d : d + 1]) / bandwidth) ** 2) / math.sqrt(2 * math.pi)
            for d in range(p)
        ]
        acc = phis[0]
        for d in range(1, p - 1):
            acc = (acc[:, :, None] * phis[d][:, None, :]).reshape(len(x), -1)
        if p == 1:
            total += acc.sum(axis=0)
        else:
            total += (acc.T @ phis[-1]).reshape((lattice + 1,) * p)
    return total / (n * bandwidth**p)


def bernstein_transform(lattice: int, order: int) -> np.ndarray:
    """W with b^(h)_l(y) = sum_a W[a, l] b_a(y): iterated Bernstein of order h = I - (I - B_k)^h."""
    a = np.arange(lattice + 1)
    M = binom.pmf(a[None, :], lattice, a[:, None] / lattice)  # M[a, l] = b_{l,k}(a/k)
    W = np.zeros_like(M)
    power = np.eye(lattice + 1)
    for i in range(1, order + 1):
        W += math.comb(order, i) * (-1) ** (i - 1) * power
        power = power @ M
    return W


def _apply_axes(tensor: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """Multiply every axis of ``tensor`` by ``matrix`` (out[.., r, ..] = sum_c matrix[r, c] t[.., c, ..])."""
    for axis in range(tensor.ndim):
        tensor = np.moveaxis(np.tensordot(matrix, tensor, axes=([1], [axis])), 0, axis)
    return tensor


def bernstein_grid_density(coefficients: np.ndarray, *, order: int, grid: int) -> np.ndarray:
    """The released Bernstein estimate evaluated at the centres of a grid^p cell grid, clipped at 0."""
    lattice = coefficients.shape[0] - 1
    g = _apply_axes(coefficients, bernstein_transform(lattice, order))
    centres = (np.arange(grid) + 0.5) / grid
    basis = binom.pmf(np.arange(lattice + 1)[None, :], lattice, centres[:, None])  # (grid, k+1)
    return np.clip(_apply_axes(g, basis), 0.0, None)


# ---------------------------------------------------------------------------------------------------
# Default sizes from the theorems
# ---------------------------------------------------------------------------------------------------


def theorem_m(reference: str, n_functions: int, domain_size: int) -> int:
    """m from Theorem II.1 / B.1 (uniform: K = |Omega|) and Cor. III.1.1 / Thm IV.1 (m >= 2K|F|/(delta^2 gamma)
    with the unknown constant K taken as 1), at delta = ACCURACY_DELTA, gamma = GAMMA."""
    base = n_functions / (ACCURACY_DELTA**2 * GAMMA)
    factor = float(domain_size) if reference == "uniform" else 2.0
    return int(min(math.ceil(factor * base), 10**12))


def default_m(reference: str, n_functions: int, domain_size: int, n_tables: int) -> int:
    cap = min(M_CAP, LP_NNZ_CAP // (2 * max(n_tables, 1)))
    return max(1, min(theorem_m(reference, n_functions, domain_size), cap))


def default_bandwidth(n: int, dim: int, lattice: int) -> float:
    """Theorem IV.1's h = C'(log n / n)^(1/p) with C' = 1, but never below one lattice step 1/k
    (finer kernels than the lattice only add noise to the released lattice values)."""
    return max((math.log(max(n, 3)) / max(n, 3)) ** (1.0 / dim), 1.0 / lattice)


# ---------------------------------------------------------------------------------------------------
# The mechanism
# ---------------------------------------------------------------------------------------------------


class DensityLP(Mechanism):
    """Boedihardjo et al.'s Algorithm 1 with a private reference measure (Bojkovic & Loh)."""

    name = "density-lp"
    title = "Private density estimate + LP reweighting"
    paper = (
        "Bojkovic & Loh, Differentially Private Synthetic Data with Private Density Estimation "
        "(Algorithms 1-3); Boedihardjo, Strohmer & Vershynin"
    )
    guide = guide  # public inputs only: accuracy and near-uniform rule, run time, steward help, model quality
    speed_rank = 4
    target_structure = "joint"
    params = (
        ParamSpec(
            "reference",
            "choice",
            "auto",
            "reference measure mu: 'uniform' (no budget), 'histogram' (perturbed histogram, small "
            "domains), 'product' (product of perturbed 1-way histograms), 'bernstein' (private KDE, "
            "all-numeric tables with at most 3 columns), 'auto' (histogram when the cell domain is "
            "small, else product)",
            choices=REFERENCES,
        ),
        ParamSpec(
            "degree",
            "int",
            2,
            "marginal degree k: test functions are all marginal cells of up to k columns",
            minimum=1,
            maximum=3,
        ),
        ParamSpec(
            "split",
            "float",
            0.5,
            "fraction of epsilon spent on mu (histogram / product / bernstein); the rest "
            "goes to the noisy marginals of the LP",
            minimum=0.05,
            maximum=0.95,
        ),
        ParamSpec(
            "m",
            "int",
            None,
            f"number of reference points (default: the theorems' requirement, capped at {M_CAP} and by the LP size)",
            minimum=1,
            maximum=1_000_000,
            optional=True,
        ),
        ParamSpec(
            "lattice",
            "int",
            None,
            f"Bernstein cover size k (lattice {{0,1/k,..,1}}^p); default by p: {DEFAULT_LATTICE}",
            minimum=1,
            maximum=200,
            optional=True,
        ),
        ParamSpec(
            "bandwidth",
            "float",
            None,
            "Bernstein KDE bandwidth h on the unit scale (default max((log n/n)^(1/p), 1/k))",
            minimum=1e-3,
            maximum=1.0,
            optional=True,
        ),
        ParamSpec(
            "tie_break",
            "bool",
            False,
            "solve a second LP that picks, among the minimisers of the max "
            "error, one with the smallest total error (better average marginals, about 3-4x the LP time)",
        ),
        ParamSpec(
            "bernstein_order",
            "int",
            1,
            "order of the iterated Bernstein operator (1 = plain Bernstein polynomial, never negative)",
            minimum=1,
            maximum=4,
        ),
        NOISE_MODE,
    )
    gaussian_mode = True

    # Solve the LP on distinct reference cells (see _solve). Benchmarks switch it off to time the
    # paper's LP with one variable per reference point.
    group_reference: bool = True

    def __init__(self, schema: Schema, **kw):
        super().__init__(schema, **kw)
        self.sizes = list(schema.cell_sizes)
        self.domain_size = math.prod(self.sizes)
        self.reference = self._resolve_reference(self.params["reference"])
        self.tables = marginal_tables(len(self.sizes), self.params["degree"])
        self.n_functions = int(table_offsets(self.sizes, self.tables)[-1])
        self.m = self.params["m"] or default_m(self.reference, self.n_functions, self.domain_size, len(self.tables))
        if self.reference == "uniform":
            self.eps_mu, self.eps_lp = 0.0, self.epsilon
        else:
            self.eps_mu, self.eps_lp = split_budget(self.epsilon, [self.params["split"], 1 - self.params["split"]])
        self.gaussian = self.params["noise_type"] == "gaussian"
        if self.gaussian:
            self.rho = zcdp_rho(self.epsilon, self.delta)
            share = 0.0 if self.reference == "uniform" else self.params["split"]
            self.rho_mu, self.rho_lp = self.rho * share, self.rho * (1 - share)
        if self.reference == "bernstein":
            dim = len(self.sizes)
            self.lattice = self.params["lattice"] or DEFAULT_LATTICE[dim]
            if (self.lattice + 1) ** dim > BERNSTEIN_MAX_LATTICE_POINTS:
                raise ValueError(
                    f"the Bernstein lattice has (k+1)^p = {(self.lattice + 1) ** dim} points, more "
                    f"than {BERNSTEIN_MAX_LATTICE_POINTS}; lower lattice (got lattice={self.lattice})"
                )
        self.info: dict[str, Any] = {}

    def _resolve_reference(self, choice: str) -> str:
        if choice == "auto":
            return "histogram" if self.domain_size <= HISTOGRAM_MAX_CELLS else "product"
        if choice == "histogram" and self.domain_size > HISTOGRAM_MAX_CELLS:
            raise ValueError(
                f"reference='histogram' noises every cell of the domain, which has "
                f"{self.domain_size:.3g} cells (limit {HISTOGRAM_MAX_CELLS}); use reference='product' "
                "or 'uniform', or fewer columns / bins"
            )
        if choice == "bernstein":
            bad = [c.name for c in self.schema.kept if not c.is_numeric]
            if bad:
                raise ValueError(
                    f"reference='bernstein' needs numeric columns only (data on [0,1]^p), got categorical {bad}"
                )
            if len(self.sizes) > BERNSTEIN_MAX_DIM:
                raise ValueError(
                    f"reference='bernstein' supports at most {BERNSTEIN_MAX_DIM} columns, got p={len(self.sizes)}"
                )
        return choice

    # -- Algorithm 1 ------------------------------------------------------------------------------
    def _fit(self, source: TableSource) -> None:
        frame = source.frame()
        n = source.n
        cells = self.schema.to_cells(frame)
        unit = self.schema.to_unit(frame) if self.reference == "bernstein" else None
        self.progress(0.05, "reference measure")
        ref_cells, ref_unit = self._reference_points(cells, unit, n)
        self.progress(0.3, "noisy marginals")
        uniq, counts = np.unique(cells, axis=0, return_counts=True)
        noisy_means = self._noisy_means(uniq, counts, n)
        self.progress(0.4, "linear program")
        self._solve(ref_cells, ref_unit, noisy_means)
        self.progress(1.0, "done")

    def fit_counts(self, cells: np.ndarray, counts: np.ndarray) -> "DensityLP":
        """Fit from distinct cell tuples and their multiplicities (reads private data; spends the budget).

        For discrete references only; used by benchmarks whose n is too large to materialise rows.
        """
        if self.fitted:
            raise RuntimeError("fit() may run once per mechanism object (each fit spends budget)")
        if self.reference == "bernstein":
            raise ValueError("fit_counts needs a discrete reference (uniform / histogram), got bernstein")
        cells = np.asarray(cells, dtype=np.int64)
        counts = np.asarray(counts, dtype=np.int64)
        n = int(counts.sum())
        ref_cells, _ = self._reference_points(cells, None, n, counts)
        self._solve(ref_cells, None, self._noisy_means(cells, counts, n))
        self.fitted = True
        return self

    def _reference_points(
        self, cells: np.ndarray, unit: np.ndarray | None, n: int, weights: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Step 1: m points from mu (cells for discrete references; unit-cube points for bernstein)."""
        rng = self.noise.rng
        if self.reference == "uniform":
            return np.column_stack([rng.integers(0, s, self.m) for s in self.sizes]), None
        if self.reference == "product":
            return self._product_points(cells, weights), None
        if self.reference == "histogram":
            flat = np.ravel_multi_index(cells.T, self.sizes)
            counts = np.bincount(flat, weights=weights, minlength=self.domain_size)
            counts = np.rint(counts).astype(np.int64)
            if self.gaussian:
                mu = histogram_density(self._noisy_counts(counts, tables=1, part="mu", key="histogram_scale"))
            else:
                mu = histogram_density(perturbed_histogram(counts, epsilon=self.eps_mu, noise=self.noise))
                self.info["histogram_scale"] = laplace_scale(sensitivity=HISTOGRAM_SENSITIVITY, epsilon=self.eps_mu)
            draws = rng.choice(self.domain_size, size=self.m, p=mu)
            return np.column_stack(np.unravel_index(draws, self.sizes)).astype(np.int64), None
        return self._bernstein_points(unit, n)

    def _product_points(self, cells: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
        """Extension: mu = product of Algorithm 2's perturbed histograms of the single columns. The p
        count vectors together move by at most 2p in L1: discrete Laplace of scale 2p/eps_mu."""
        rng = self.noise.rng
        p = len(self.sizes)
        columns = []
        for j, size in enumerate(self.sizes):
            counts = np.rint(np.bincount(cells[:, j], weights=weights, minlength=size)).astype(np.int64)
            mu_j = histogram_density(self._noisy_counts(counts, tables=p, part="mu", key="histogram_scale"))
            columns.append(rng.choice(size, size=self.m, p=mu_j))
        return np.column_stack(columns).astype(np.int64)

    def _bernstein_points(self, unit: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        dim = unit.shape[1]
        h = self.params["bandwidth"] or default_bandwidth(n, dim, self.lattice)
        values = kde_on_lattice(unit, lattice=self.lattice, bandwidth=h)
        sens = bernstein_sensitivity(n=n, dim=dim, lattice=self.lattice, bandwidth=h)
        if self.gaussian:  # L2 sensitivity <= the L1 bound sens
            scale = sens / math.sqrt(2 * self.rho_mu)
            coefficients = self.noise.gaussian_float(values, scale=scale)  # the private release of mu
        else:
            scale = laplace_scale(sensitivity=sens, epsilon=self.eps_mu)
            coefficients = self.noise.laplace_float(values, scale=scale)  # the private release of mu
        self.info.update(
            bernstein_lattice=self.lattice,
            bernstein_bandwidth=h,
            bernstein_sensitivity=sens,
            bernstein_scale=scale,
            bernstein_order=self.params["bernstein_order"],
        )
        # post-processing: sample m points from the clipped estimate, piecewise constant on a fine grid
        grid = max(2, int(round(SAMPLING_GRID_CELLS ** (1.0 / dim))))
        dens = bernstein_grid_density(coefficients, order=self.params["bernstein_order"], grid=grid).ravel()
        p = dens / dens.sum() if dens.sum() > 0 else np.full(dens.size, 1.0 / dens.size)
        rng = self.noise.rng
        idx = np.column_stack(np.unravel_index(rng.choice(dens.size, size=self.m, p=p), (grid,) * dim))
        points = (idx + rng.random(idx.shape)) / grid
        cells = self.schema.to_cells(self.schema.from_unit(points))
        return cells, points

    def _noisy_means(self, cells: np.ndarray, counts: np.ndarray, n: int) -> np.ndarray:
        """Step 2: discrete Laplace on the marginal counts (L1 sensitivity 2T), divided by the public n."""
        true_counts = marginal_counts(cells, self.sizes, self.tables, weights=counts)
        noisy = self._noisy_counts(true_counts, tables=len(self.tables), part="lp", key="marginal_count_scale")
        self.info["marginal_mean_scale"] = self.info["marginal_count_scale"] / n
        self.n = n
        return noisy / n

    def _noisy_counts(self, counts: np.ndarray, *, tables: int, part: str, key: str) -> np.ndarray:
        """Noise on count vectors made of ``tables`` replace-one histograms: L1 sensitivity 2 x tables
        (discrete Laplace, epsilon of ``part``), or L2^2 = 2 x tables (discrete Gaussian, rho of ``part``)."""
        if self.gaussian:
            scale = math.sqrt(tables / (self.rho_mu if part == "mu" else self.rho_lp))
            self.info[key] = scale
            return self.noise.gaussian_int(counts, scale=scale)
        scale = laplace_scale(
            sensitivity=COUNT_SENSITIVITY_PER_TABLE * tables, epsilon=self.eps_mu if part == "mu" else self.eps_lp
        )
        self.info[key] = scale
        return self.noise.laplace_int(counts, scale=scale)

    def _solve(self, ref_cells: np.ndarray, ref_unit: np.ndarray | None, targets: np.ndarray) -> None:
        """Step 3 on the distinct reference cells (points with equal cells have equal columns in A, so
        spreading a group's weight evenly over its members is an optimal solution of the full LP)."""
        if self.group_reference:
            groups, inverse, sizes = np.unique(ref_cells, axis=0, return_inverse=True, return_counts=True)
            inverse = inverse.ravel()
        else:
            groups, inverse, sizes = ref_cells, np.arange(len(ref_cells)), np.ones(len(ref_cells), dtype=np.int64)
        A = design_matrix(groups, self.sizes, self.tables)
        h_groups, t_star, info = solve_density_lp(A, targets, tie_break=self.params["tie_break"])
        self.t_star = t_star
        self.info.update(
            info,
            m=int(len(ref_cells)),
            distinct_reference_points=int(len(groups)),
            functions=self.n_functions,
            tables=len(self.tables),
        )
        if ref_unit is None:
            keep = h_groups > 0
            self.points, self.weights, self.encoding = groups[keep], h_groups[keep], "cells"
        else:
            w = h_groups[inverse] / sizes[inverse]
            keep = w > 0
            self.points, self.weights, self.encoding = ref_unit[keep], w[keep], "unit"

    # -- Step 4 -----------------------------------------------------------------------------------
    def sample(self, n: int) -> pd.DataFrame:
        n = self._check_rows(n)
        rng = self.noise.rng
        p = self.weights / self.weights.sum()
        chosen = self.points[rng.choice(len(p), size=n, p=p)]
        if self.encoding == "unit":
            return self.schema.from_unit(chosen)
        return self.schema.from_cells(chosen, rng)

    # -- reports ----------------------------------------------------------------------------------
    def privacy_cost(self) -> PrivacyCost:
        details = {
            "reference": self.reference,
            "epsilon_reference": self.eps_mu,
            "epsilon_marginals": self.eps_lp,
            "marginal_tables": len(self.tables),
            "marginal_count_l1_sensitivity": COUNT_SENSITIVITY_PER_TABLE * len(self.tables),
            "marginal_count_noise": "discrete Laplace",
        }
        if self.reference == "histogram":
            details.update(histogram_l1_sensitivity=HISTOGRAM_SENSITIVITY, histogram_noise="discrete Laplace")
        if self.reference == "product":
            details.update(
                histogram_l1_sensitivity=HISTOGRAM_SENSITIVITY * len(self.sizes), histogram_noise="discrete Laplace"
            )
        for key in ("marginal_count_scale", "histogram_scale", "bernstein_sensitivity", "bernstein_scale"):
            if key in self.info:
                details[key] = self.info[key]
        caveats = [
            "the paper's accuracy guarantee (8*delta-accurate marginals) assumes i.i.d. data and "
            "lower bounds on n and m; privacy does not depend on them"
        ]
        if self.reference == "product":
            caveats.append(
                "product reference (product of noisy one-way histograms) is an extension: the paper's "
                "accuracy theorem covers uniform, histogram and Bernstein references only"
            )
        if self.reference == "bernstein":
            caveats.append(
                "Bernstein reference: the lattice noise is on floats (OpenDP exact sampler in "
                "secure mode); reference points are drawn from the clipped estimate on a fine grid "
                "(post-processing, utility only)"
            )
        if self.gaussian:
            details.update(
                zcdp_rho=self.rho,
                rho_reference=self.rho_mu,
                rho_marginals=self.rho_lp,
                marginal_count_noise="discrete Gaussian",
                histogram_noise="discrete Gaussian",
                marginal_count_l2_sensitivity=f"sqrt({2 * len(self.tables)})",
            )
            details.pop("epsilon_reference"), details.pop("epsilon_marginals")
            caveats.append(
                f"Gaussian mode (an extension): accounted in zero-concentrated DP, rho = {self.rho:.6g}, "
                "converted to the requested (epsilon, delta) by the Canonne-Kamath-Steinke bound"
            )
            events = tuple(
                ZCDPEvent(r, label=what)
                for r, what in ((self.rho_mu, "reference"), (self.rho_lp, "marginal counts"))
                if r
            )
            return PrivacyCost(
                epsilon=self.epsilon,
                delta=self.delta,
                guarantee="approximate",
                caveats=tuple(caveats),
                details=details,
                events=events,
            )
        events = tuple(
            EpsilonDeltaEvent(e, label=what)
            for e, what in ((self.eps_mu, "reference"), (self.eps_lp, "marginal counts"))
            if e
        )
        return PrivacyCost(
            epsilon=self.epsilon, delta=0.0, guarantee="pure", caveats=tuple(caveats), details=details, events=events
        )

    def report(self) -> dict:
        return {
            "reference": self.reference,
            "t_star": getattr(self, "t_star", None),
            "degree": self.params["degree"],
            **{k: v for k, v in self.info.items()},
        }

    def summary(self) -> dict[str, Any]:
        return {
            "points": np.asarray(self.points),
            "weights": np.asarray(self.weights, dtype=float),
            "encoding": self.encoding,
            "t_star": self.t_star,
            "reference": self.reference,
            "info": {k: (float(v) if isinstance(v, (np.floating, float)) else v) for k, v in self.info.items()},
        }

    def _load_summary(self, summary: dict[str, Any]) -> None:
        encoding = str(summary["encoding"])
        if encoding not in ("cells", "unit"):
            raise ValueError(f"summary encoding must be 'cells' or 'unit', got {encoding!r}")
        points = np.asarray(summary["points"])
        weights = np.asarray(summary["weights"], dtype=float)
        if points.ndim != 2 or points.shape[1] != len(self.sizes) or len(weights) != len(points):
            raise ValueError(
                f"summary points must have shape (G, {len(self.sizes)}) with G weights, got "
                f"{points.shape} and {weights.shape}"
            )
        if encoding == "cells":
            points = points.astype(np.int64)
        self.points, self.weights, self.encoding = points, weights, encoding
        self.t_star = float(summary["t_star"])
        self.info = dict(summary.get("info", {}))
