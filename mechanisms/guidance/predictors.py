"""Shared building blocks of the accuracy predictors, from PUBLIC inputs only: the priors that no public
input can tell (how concentrated the columns are, how far the data is from independence, where an error
saturates), the noise-to-TVD primitives, and the predictors that several mechanisms share (partitions of
the joint domain; Private-PGM estimation). Each mechanism's own predictor and fitted constants live in its
package's ``guide.py`` (``predict_accuracy``); :mod:`mechanisms.guidance.recommend` ranks them."""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Callable, Iterable

from .. import accounting
from .purposes import Errors, Setting

# -- priors (not knowable from public information; values from the shared tables' benchmark) -----------
# Where a TVD saturates when noise swamps every count: the output is then close to uniform over the
# public cells. Measured for near-uniform outputs (kdtree-grid / privhp fallbacks) on the six shared
# tables: 1-way TVD 0.37-0.68, 2-way 0.50-0.88 (docs/benchmarks.md finding 4).
SATURATION_1WAY = 0.5
SATURATION_2WAY = 0.7
# Real columns are not spread evenly over their public cells: the sampling error of n synthetic rows
# over K cells is taken as CONCENTRATION x its value for uniform shares, sqrt(K / (2 pi n)) (fitted).
CONCENTRATION = 0.6
# 2-way TVD between a pair's joint distribution and the product of its margins (the error of any
# mechanism that samples columns independently, whatever the epsilon). Measured as the baseline's
# 2-way TVD at epsilon 10 on the six shared tables: 0.048-0.084 (fitted: 0.07).
INDEPENDENCE_PENALTY = 0.06

# -- rules for near-uniform output ---------------------------------------------------------------------
# kdtree-grid, kdtree-adaptive and privhp cut the JOINT public domain. Measured near-uniform (1-way TVD
# 0.3-0.6 at every epsilon) on all six shared tables, 9-24 columns, joint domains of 10^9-10^20 cells
# (docs/benchmarks.md finding 4); they reproduce their papers on low-dimensional numeric data.
JOINT_MAX_COLUMNS = 8
JOINT_CELLS_PER_ROW = 0.1  # joint cells must stay below this many per (n epsilon) for the grid to fill


def soft_cap(raw: float, saturation: float) -> float:
    """Smooth cap: ~raw while raw << saturation, -> saturation as raw grows."""
    return saturation * (1.0 - math.exp(-max(raw, 0.0) / saturation))


def sampling_tvd(cells: int, n: int) -> float:
    """Expected TVD of n synthetic rows drawn from a distribution over ``cells`` cells (prior:
    CONCENTRATION x the uniform-share value sqrt(K / (2 pi n)))."""
    return CONCENTRATION * math.sqrt(cells / (2 * math.pi * n))


def noise_tvd(cells: int, mean_abs_noise: float, n: int) -> float:
    """Expected TVD from independent noise on every count of a table of ``cells`` cells: the sum of
    E|noise| over the cells divided by 2n (the shares' error)."""
    return 0.5 * cells * mean_abs_noise / n


def rss(*parts: float) -> float:
    return math.sqrt(sum(p * p for p in parts))


@functools.lru_cache(maxsize=4096)
def zcdp_rho(epsilon: float, delta: float) -> float:
    """The rho-zCDP a Gaussian mechanism gets for (epsilon, delta): the mechanisms' own conversion
    (:func:`mechanisms.accounting.zcdp_rho`, Canonne, Kamath & Steinke 2020), so a prediction's noise is
    the release's. (Bun & Steinke's eps = rho + 2 sqrt(rho log(1/delta)) would give half the rho at
    epsilon 0.1 and delta 1e-5: Gaussian-mode predictions 1.4x the noise the release adds.)"""
    if delta <= 0:
        raise ValueError("a Gaussian mechanism needs delta > 0")
    return accounting.zcdp_rho(epsilon, delta)


@functools.lru_cache(maxsize=4096)
def gaussian_rdp_sigma(epsilon: float, delta: float, count: int) -> float:
    """DP-MERF's noise multiplier: its own RDP calibration (accounting.calibrate_gaussian_rdp)."""
    return accounting.calibrate_gaussian_rdp(epsilon, delta, count=count)


def mean(xs: Iterable[float]) -> float:
    xs = list(xs)
    return sum(xs) / len(xs) if xs else 0.0


SAT_PRIOR = f"saturation {SATURATION_1WAY} (1-way) / {SATURATION_2WAY} (2-way) once noise swamps the counts"
SAMPLING_PRIOR = (
    f"sampling error of n synthetic rows: {CONCENTRATION} x sqrt(cells / (2 pi n)) (columns less spread than uniform)"
)


def sampling_share(sampling: float | Callable[[int, int], float], cells: int, n: int) -> float:
    """The share of i.i.d. sampling error a sampler leaves on a table of ``cells`` cells: a constant, or
    a function of (cells, n) (:func:`stratified_share`)."""
    return sampling(cells, n) if callable(sampling) else sampling


def independent_columns(
    s: Setting, one_way: list[float], sampling: float | Callable[[int, int], float] = 1.0
) -> Callable[[int, int], float]:
    """2-way TVD of a mechanism that samples columns independently: noise of both margins, the
    sampling error over the pair's cells (x ``sampling``, the share its sampler leaves) and the
    independence penalty (a prior)."""
    sizes = s.sizes

    def two_way(i: int, j: int) -> float:
        cells = sizes[i] * sizes[j]
        raw = rss(
            one_way[i] + one_way[j],
            INDEPENDENCE_PENALTY,
            sampling_share(sampling, cells, s.n) * sampling_tvd(cells, s.n),
        )
        return soft_cap(raw, SATURATION_2WAY)

    return two_way


GAUSSIAN = "gaussian"  # a choice value that switches a mechanism to Gaussian (zCDP) measurements


def gaussian_mode(params: dict) -> bool:
    """True when a parameter selects Gaussian noise (whatever the mechanism calls that parameter)."""
    return any(v == GAUSSIAN for v in params.values())


def count_noise(s: Setting, params: dict, *, tables: int, epsilon: float, rho_share: float) -> tuple[float, str]:
    """E|noise| on each count of ``tables`` count vectors sharing a budget, and its description.

    Laplace (pure): L1 sensitivity 2 per vector, so scale 2 x tables / epsilon (basic composition).
    Gaussian (zCDP): L2 sensitivity sqrt(2) per vector, so sigma = sqrt(tables / rho') with
    rho' = rho_share x rho(epsilon, delta); E|N(0, sigma)| = sigma sqrt(2 / pi)."""
    if gaussian_mode(params) and s.delta > 0:
        sigma = math.sqrt(tables / (rho_share * zcdp_rho(s.epsilon, s.delta)))
        return sigma * math.sqrt(2 / math.pi), f"Gaussian noise sigma = {sigma:.3g} (zCDP)"
    b = 2 * tables / epsilon
    return b, f"discrete Laplace of scale {b:.3g}"


def predict_independent_histograms(s: Setting, params: dict) -> Errors:
    """Noisy 1-way histograms, columns sampled independently (the baseline; MST when the rows are too few
    for pairs). Each column's histogram gets discrete Laplace of scale b = 2d/epsilon (epsilon/d per column,
    L1 sensitivity 2); E|noise| ~ b per cell (the discrete Laplace's mean absolute value is within 1%
    of b for b >= 2). In Gaussian mode, sigma = sqrt(d / rho). Columns are sampled independently."""
    b, note = count_noise(s, params, tables=s.d, epsilon=s.epsilon, rho_share=1.0)
    one = [soft_cap(rss(noise_tvd(k, b, s.n), sampling_tvd(k, s.n)), SATURATION_1WAY) for k in s.sizes]
    return Errors(
        one,
        independent_columns(s, one),
        modelled=f"{note} on every 1-way cell (d = {s.d} histograms)",
        priors=[SAMPLING_PRIOR, f"independence penalty {INDEPENDENCE_PENALTY} on every pair", SAT_PRIOR],
    )


def near_uniform_errors(s: Setting, note: str) -> Errors:
    return Errors([SATURATION_1WAY] * s.d, lambda i, j: SATURATION_2WAY, modelled=note, priors=[SAT_PRIOR])


def joint_domain_failure(s: Setting) -> str | None:
    """Why a joint-domain partition (kdtree-grid, kdtree-adaptive, privhp) is predicted near-uniform."""
    log_cells = sum(math.log10(k) for k in s.sizes)
    if s.d > JOINT_MAX_COLUMNS:
        return (
            f"{s.d} columns: partitions of the joint domain (10^{log_cells:.0f} public cells) gave "
            "near-uniform output on every shared table of 9-24 columns (1-way TVD 0.3-0.6, docs/benchmarks.md "
            "finding 4)"
        )
    if log_cells > math.log10(JOINT_CELLS_PER_ROW * s.n * s.epsilon):
        return (
            f"the joint domain has 10^{log_cells:.0f} public cells for n x epsilon = {s.n * s.epsilon:.3g}: "
            "almost every cell stays below the noise threshold and the output falls back to uniform"
        )
    return None


def predict_joint_histogram(s: Setting, params: dict) -> Errors:
    """Where the joint domain is small: a noisy joint histogram (Laplace scale ~2/epsilon per joint
    cell); a 1-way cell sums C/K joint cells."""
    failure = joint_domain_failure(s)
    if failure:
        return near_uniform_errors(s, failure)
    C = math.prod(s.sizes)
    b = 2 / s.epsilon
    one = [soft_cap(rss(0.5 * k * math.sqrt(C / k) * b / s.n, sampling_tvd(k, s.n)), SATURATION_1WAY) for k in s.sizes]

    def two_way(i: int, j: int) -> float:
        cells = s.sizes[i] * s.sizes[j]
        return soft_cap(rss(0.5 * cells * math.sqrt(C / cells) * b / s.n, sampling_tvd(cells, s.n)), SATURATION_2WAY)

    return Errors(
        one,
        two_way,
        modelled=f"noisy joint histogram of {C} cells, Laplace scale ~{b:.3g} each",
        priors=[SAMPLING_PRIOR, SAT_PRIOR],
    )


# -- select-measure-generate (MST, AIM; Private-PGM estimation) -------------------------------------------
# Replace-one neighbours: a count vector moves by sqrt(2) in L2, so a dpportal MST or AIM adds sqrt(2) x
# the noise of SmartNoise's add/remove calibration at the same rho. The links below were
# fitted on SmartNoise's MST (18 runs) and AIM (4 runs) in the recorded benchmark with the add/remove
# factor 1, then used with sqrt(2) for dpportal's own mechanisms.
REPLACE_ONE_L2 = math.sqrt(2)


def stratified_share(cells: int, n: int) -> float:
    """The share of i.i.d. sampling error dpportal's model sampler leaves on a pair whose later column
    is drawn conditionally on a table of ``cells`` cells (its parents' configurations x its own values):
    within each parent configuration the draws are stratified, so a configuration's counts are off by
    rounding (about one row per cell), not by sqrt(count): about cells / (2n) in TVD against i.i.d.
    sqrt(cells / (2 pi n)), a share of about sqrt(cells / n), capped at 1 once the groups hold a row or
    less. For a pair that is itself a clique (a tree's edge) ``cells`` is the pair's. Measured on the
    sampler, not fitted (tests/mechanisms/pgm/test_pgm.py): 0.89-1.06 x this on chain models shaped like the
    shared tables, 0.78-0.89 x it on a 3-column clique's pairs given the whole clique's cells. A pair
    that no clique contains gets no such help: 0.78-1.43 x i.i.d. on the chain models."""
    return min(1.0, math.sqrt(cells / n))


@dataclasses.dataclass(frozen=True)
class covered_sampling:
    """Sampling share over all pairs when a ``covered`` share of them lie inside the model's cliques,
    their later column drawn given ``parents`` times the pair's cells (:func:`stratified_share`), the
    other pairs with i.i.d. error."""

    covered: float
    parents: float = 1.0

    def __call__(self, cells: int, n: int) -> float:
        return self.covered * stratified_share(round(self.parents * cells), n) + (1.0 - self.covered)

    def __str__(self) -> str:
        return (
            f"sqrt({self.parents:g} x cells / n) on the {self.covered:.2g} of pairs inside the model's cliques, "
            "1 elsewhere"
        )


# On 1-way marginals the sampler leaves far less: the first column is drawn by randomised rounding (each
# count within 1 of the model's) and every other column by stratified uniforms within each configuration
# of its sampled parents (counts within 1 per configuration), so a column's counts follow the model's to
# rounding, not to i.i.d. sampling error (pgm.ModelTables.sample). Measured on the sampler, not fitted: 0.047-
# 0.18 of sampling_tvd on four chain models shaped like the shared tables (tests/mechanisms/pgm/test_pgm.py)
PGM_SAMPLING_1WAY = 0.1


# Private-PGM mechanisms: a 1-way cell's error is a fraction (gain) of its measurement noise (the estimate
# is projected onto consistent, non-negative marginals with the public n); a pair's error is that of its
# measurement noise (gain) plus what the model leaves unexplained (penalty), but never worse than the
# independent model the estimate falls back to when a pair is swamped by noise (measured: at epsilon 0.1
# the 2-way TVD of MST and AIM is that of the independent Gaussian baseline or better).
def gaussian_errors(
    s: Setting,
    sigma: float,
    gains: tuple[float, float],
    penalty: float,
    note: str,
    priors: list[str],
    sampling: float | Callable[[int, int], float] = 1.0,
    measured_share: float = 1.0,
    sampling_1way: float = 1.0,
) -> Errors:
    """``sampling``: the share of i.i.d. sampling error left by the mechanism's sampler on a pair
    (dpportal samples the model with randomised rounding and stratified uniforms: far below i.i.d.
    draws); ``sampling_1way``: the same on a single column (PGM_SAMPLING_1WAY for dpportal's sampler).
    ``measured_share``: the share of the pairs the mechanism has the rounds to measure; the others are
    predicted as independent columns."""
    mean_abs = sigma * math.sqrt(2 / math.pi)
    gain_1way, gain_2way = gains
    one = [
        soft_cap(rss(gain_1way * noise_tvd(k, mean_abs, s.n), sampling_1way * sampling_tvd(k, s.n)), SATURATION_1WAY)
        for k in s.sizes
    ]
    independent = independent_columns(s, one, sampling)  # the same sampler

    def two_way(i: int, j: int) -> float:
        cells = s.sizes[i] * s.sizes[j]
        measured = soft_cap(
            rss(
                gain_2way * noise_tvd(cells, mean_abs, s.n),
                penalty,
                sampling_share(sampling, cells, s.n) * sampling_tvd(cells, s.n),
            ),
            SATURATION_2WAY,
        )
        alone = independent(i, j)
        return measured_share * min(measured, alone) + (1 - measured_share) * alone

    return Errors(
        one,
        two_way,
        modelled=note,
        priors=priors
        + [
            f"Private-PGM gain {gain_1way:.3g} (1-way) / {gain_2way} (2-way) on the measurement noise, never worse "
            f"than independent columns; sampling error x {sampling}",
            SAMPLING_PRIOR,
            SAT_PRIOR,
        ],
    )
