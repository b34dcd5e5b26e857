"""ResidualPlanner for a set of marginal tables: the residual basis, the noise allocation, its exact
replace-one privacy cost, the measurement and the reconstruction with its exact variance.

Xiao, He, Zhang & Kifer, "An Optimal and Scalable Matrix Mechanism for Noisy Marginals under Convex Loss
Functions" (ResidualPlanner), NeurIPS 2023, Sections 3-5. Notation: a table T is a set of attributes
(table columns), attribute i has n_i cells, x_A is the marginal on the attributes A (a tensor), 1 the
all-ones vector, P_i = I - 1 1^T / n_i the projection onto the vectors of R^{n_i} that sum to zero, and
P_A their Kronecker product over A.

* **Residuals.** I = prod_i (P_i + 1 1^T / n_i) splits every marginal into orthogonal residuals: for a
  table T, x_T = sum over A subset of T of (P_A x_A) spread evenly over T \\ A (divided by prod_{T \\ A} n_i).
  The empty residual is the total n, public here. The residuals of different A are orthogonal parts of
  the data vector, so measuring each subset A of every table once (the workload's downward closure)
  measures the workload, and nothing else is needed.
* **Measurement.** With U_i an orthonormal basis of the zero-sum vectors (n_i x (n_i - 1), Helmert's) and
  U_A their Kronecker product, the mechanism releases w_A = U_A^T x_A + N(0, sigma_A^2 I) (float Gaussian
  through :class:`~mechanisms.noise.Noise`, OpenDP's exact sampler in production), and y_A = U_A w_A
  estimates P_A x_A with noise covariance sigma_A^2 P_A (ResidualPlanner's correlated noise).
* **Reconstruction.** x_hat_T = n / prod_T n_i + sum over nonempty A of T of y_A spread over T \\ A: unbiased,
  the best linear unbiased estimate (the residuals are orthogonal and each is measured once), tables sum
  to n and agree exactly on shared margins (summing out a column i removes every residual containing i,
  because 1^T P_i = 0). Every cell of T has variance
  V_T = sum over nonempty A of T of sigma_A^2 prod_{i in A} (1 - 1/n_i) / prod_{i in T \\ A} n_i^2,
  and the estimate is Gaussian, so est +- 1.96 sqrt(V_T) is an exact 95% interval.
* **Allocation.** ResidualPlanner's closed form for a weighted sum of squared errors over the published cells
  (:func:`allocate` chooses the weights so that no table is noisier than measured on its own):
  minimise sum_A c_A sigma_A^2 (c_A: the coefficient of sigma_A^2 in the cells' weighted variance) subject to
  sum_A p_A / (2 sigma_A^2) = rho with p_A = prod_{i in A} (1 - 1/n_i) gives
  sigma_A^2 = (sum_B sqrt(p_B c_B / 2) / rho) sqrt(p_A / (2 c_A)). That is optimal for add/remove
  neighbours; the scales are then multiplied by one common factor so the exact replace-one cost below is
  rho (the paper's proof covers add/remove; the replace-one cost is derived here).

Privacy (replace-one neighbours, n public): replacing a record u by v changes x_A by e_{u_A} - e_{v_A}. The
release w_A is a Gaussian mechanism on U_A^T x_A with L2 sensitivity ||U_A^T (e_{u_A} - e_{v_A})|| =
||P_A (e_{u_A} - e_{v_A})||, so together the residuals are rho-zCDP with
rho = max over (u, v) of sum_A ||P_A (e_{u_A} - e_{v_A})||^2 / (2 sigma_A^2). With P_i e_a = e_a - 1/n_i and
<P_i e_a, P_i e_b> = [a = b] - 1/n_i, the squared norm is 2 prod_{i in A} (1 - 1/n_i) - 2 prod_{i in A} f_i with
f_i = 1 - 1/n_i where u and v agree on column i and -1/n_i where they differ: it depends only on the set D
of columns where u and v differ, so rho is the maximum over the nonempty subsets D of the tables' columns
(:func:`replace_one_rho`; beyond ``MAX_EXACT_COLUMNS`` columns the bound |prod f_i| <= prod (1 - 1/n_i),
4 p_A / (2 sigma_A^2) per residual, is used: conservative). On the tests' small domain the exact cost is 2.5x
the add/remove cost (tests/mechanisms/tables/test_residual.py checks it against every record pair).
Reconstruction, non-negativity and sampling are post-processing.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..noise import Noise

Clique = tuple[str, ...]
WEIGHT_EXPONENTS = (0.0, 0.5, 1.0)  # allocate: the tables' cells weighted by cells(T)^-gamma, first that fits
MAX_EXACT_COLUMNS = 16  # 2^16 column sets D enumerated for the exact replace-one cost; beyond: a conservative bound


def helmert(k: int) -> np.ndarray:
    """An orthonormal basis of the zero-sum vectors of R^k as columns (k x (k - 1)): Helmert's contrasts."""
    u = np.zeros((k, k - 1))
    for j in range(1, k):
        u[:j, j - 1] = 1.0 / math.sqrt(j * (j + 1))
        u[j, j - 1] = -j / math.sqrt(j * (j + 1))
    return u


def closure(tables: Sequence[Clique], order: Sequence[str]) -> list[Clique]:
    """The nonempty subsets of every table (the residuals to measure), each once, columns in ``order``."""
    rank = {a: i for i, a in enumerate(order)}
    subs = {
        tuple(sorted(s, key=rank.__getitem__))
        for t in tables
        for k in range(1, len(t) + 1)
        for s in itertools.combinations(t, k)
    }
    return sorted(subs, key=lambda c: (len(c), [rank[a] for a in c]))


def residual_weight(attrs: Clique, sizes: dict[str, int]) -> float:
    """p_A = prod_{i in A} (1 - 1/n_i) = ||P_A e||^2 for any cell e: the residual's add/remove cost x 2 sigma^2."""
    return math.prod(1.0 - 1.0 / sizes[a] for a in attrs)


def cell_variance(table: Clique, sigmas: dict[Clique, float], sizes: dict[str, int]) -> float:
    """V_T: the variance of every cell of the reconstructed table (module docstring)."""
    total = 0.0
    for a, s in sigmas.items():
        if set(a) <= set(table):
            rest = math.prod(sizes[b] for b in table if b not in a)
            total += s**2 * residual_weight(a, sizes) / rest**2
    return total


def replace_one_rho(sigmas: dict[Clique, float], sizes: dict[str, int]) -> float:
    """The exact zCDP cost under replace-one of measuring every residual A with noise std sigmas[A]:
    the maximum over the sets D of columns where the replaced record and its replacement differ
    (module docstring), enumerated up to ``MAX_EXACT_COLUMNS`` columns, else a conservative bound."""
    cliques = [a for a in sigmas if a]
    cols = sorted({c for a in cliques for c in a})
    base = np.array([residual_weight(a, sizes) / sigmas[a] ** 2 for a in cliques])  # p_A / sigma_A^2
    if len(cols) > MAX_EXACT_COLUMNS:
        return float(2 * base.sum())  # (2 p_A + 2 p_A) / (2 sigma_A^2) per residual: conservative
    idx = {c: j for j, c in enumerate(cols)}
    masks = np.arange(1, 2 ** len(cols), dtype=np.int64)  # every nonempty D, as a bit mask
    rho = np.zeros(masks.size)
    for a, w in zip(cliques, 1.0 / np.array([sigmas[a] ** 2 for a in cliques])):
        prod = np.ones(masks.size)
        for c in a:
            differ = (masks >> idx[c]) & 1 == 1
            prod *= np.where(differ, -1.0 / sizes[c], 1.0 - 1.0 / sizes[c])
        rho += (2 * residual_weight(a, sizes) - 2 * prod) * w / 2
    return float(rho.max())


def allocate(tables: Sequence[Clique], sizes: dict[str, int], rho: float, order: Sequence[str]) -> dict[Clique, float]:
    """Noise std of every residual: ResidualPlanner's closed form for a weighted total squared error, each
    table's cells weighted by cells(T)^-gamma, scaled by one factor so that :func:`replace_one_rho` is exactly
    ``rho``. gamma = 0 minimises the error summed over all published cells, which can leave a small table
    noisier than measuring each table on its own (k tables, rho / k each: variance k / rho); gamma is the first
    of ``WEIGHT_EXPONENTS`` for which no table is, else the last (every table's mean error counts alike).
    Public inputs only (the tables, their cell counts, rho)."""
    measured = [a for a in closure(tables, order) if all(sizes[c] > 1 for c in a)]  # a 1-cell column: no residual
    if not measured:
        return {}
    alone = len(tables) / rho
    for gamma in WEIGHT_EXPONENTS:
        sigmas = _weighted(tables, sizes, rho, measured, gamma)
        if all(cell_variance(t, sigmas, sizes) <= alone for t in tables):
            break
    return sigmas


def _weighted(tables, sizes, rho, measured, gamma: float) -> dict[Clique, float]:
    cost, weight = {}, {}
    for a in measured:
        weight[a] = residual_weight(a, sizes)
        cost[a] = sum(
            math.prod(sizes[c] for c in t) ** (1 - gamma)
            * weight[a]
            / math.prod(sizes[c] for c in t if c not in a) ** 2
            for t in tables
            if set(a) <= set(t)
        )
    total = sum(math.sqrt(weight[a] * cost[a] / 2) for a in measured)
    sigmas = {a: math.sqrt(total / rho * math.sqrt(weight[a] / (2 * cost[a]))) for a in measured}
    factor = math.sqrt(replace_one_rho(sigmas, sizes) / rho)
    return {a: s * factor * (1 + 1e-12) for a, s in sigmas.items()}  # rounded up: never above rho


def _along(tensor: np.ndarray, matrices: Sequence[np.ndarray]) -> np.ndarray:
    """Multiply ``tensor`` along each axis k by matrices[k] (axis length = its number of columns)."""
    for k, m in enumerate(matrices):
        tensor = np.moveaxis(np.tensordot(m, tensor, axes=([1], [k])), 0, k)
    return tensor


def coordinates(residual: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """The released coordinates w_A = U_A^T y_A of a residual y_A = U_A w_A (U_A^T U_A = I)."""
    return _along(np.asarray(residual, dtype=np.float64), [helmert(k).T for k in sizes])


@dataclass
class Residuals:
    """The noisy residuals y_A = U_A w_A (tensors over A's cells) with their noise std sigma_A, the
    columns' cell counts and the public row count: everything the tables are reconstructed from."""

    sizes: dict[str, int]
    sigmas: dict[Clique, float]
    values: dict[Clique, np.ndarray]
    rows: int

    def table(self, attrs: Clique) -> np.ndarray:
        """The unbiased, consistent estimate of the marginal on ``attrs`` (a tensor, axes in that order)."""
        shape = tuple(self.sizes[a] for a in attrs)
        out = np.full(shape, self.rows / math.prod(shape), dtype=np.float64)
        for a, y in self.values.items():
            if not set(a) <= set(attrs):
                continue
            rest = math.prod(self.sizes[c] for c in attrs if c not in a)
            axes = [attrs.index(c) for c in a]  # a's columns in attrs' order: transpose y to attrs' order
            order = sorted(range(len(a)), key=lambda k: axes[k])
            y = np.transpose(y, order)
            expand = [slice(None) if c in a else np.newaxis for c in attrs]
            out = out + y[tuple(expand)] / rest
        return out

    def variance(self, attrs: Clique) -> float:
        """The variance of every cell of :meth:`table` (exact for the mechanism)."""
        return cell_variance(attrs, self.sigmas, self.sizes)


def measure_residuals(counts, sizes: dict[str, int], sigmas: dict[Clique, float], rows: int, noise: Noise) -> Residuals:
    """The mechanism's only step that reads data: ``counts(A)`` gives the exact marginal on A (flat, C
    order); each residual's coordinates U_A^T x_A get Gaussian noise of std sigmas[A]."""
    values = {}
    for a, s in sigmas.items():
        shape = tuple(sizes[c] for c in a)
        bases = [helmert(sizes[c]) for c in a]
        x = np.asarray(counts(a), dtype=np.float64).reshape(shape)
        w = _along(x, [u.T for u in bases])
        noisy = noise.gaussian_float(w, scale=s).reshape(w.shape)
        values[a] = _along(noisy, bases)
    return Residuals(dict(sizes), dict(sigmas), values, int(rows))
