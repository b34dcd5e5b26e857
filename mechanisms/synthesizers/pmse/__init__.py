"""pMSE mechanism: the exponential mechanism over synthesizer parameters with a CART propensity utility.

Snoke & Slavković, "pMSE Mechanism: Differentially Private Synthetic Data with Maximal Distributional
Similarity" (PSD 2018), ``papers/pmse-mechanism.txt``: Algorithm 1 (pMSE), Algorithm 2 (sampling),
Theorem 2 (sensitivity 1/n), Section 6 (the N(0, 1e5) prior).

Algorithm as implemented
------------------------
1. Synthesis model g(θ): a sequential linear-Gaussian model over the d numeric columns, in a chosen
   column order, on the PUBLIC unit scale (``Schema.to_unit``: (x - lower) / (upper - lower)):
   ``X_1 ~ N(b_1, σ_1²)``, ``X_j | X_<j ~ N(b_j + Σ_{k<j} B_jk (X_k − 1/2), σ_j²)``; θ holds the d intercepts,
   the d(d-1)/2 slopes and the d log-variances (k = d(d+3)/2 numbers). Synthetic values are then
   clipped to the public bounds (and rounded for integer columns), exactly as released rows are.
2. Utility u(X, θ) = (1/m) Σ_k pMSE(X, X^s_k(θ)) (Algorithm 1): stack the n real rows (label 0) and
   n synthetic rows (label 1), fit a Gini CART, pMSE = (1/2n) Σ_i (p̂_i − 1/2)² with in-sample p̂.
   Predictors Z = f(X^comb): the columns, and by default (``features="pairwise"``) also the centred
   products (x_j − 1/2)(x_k − 1/2): one axis-aligned split on raw columns sees only marginals, so
   without them the slopes are not identified (a slope trades off against the residual variance).
   The m synthetic sets use COMMON RANDOM NUMBERS: standard normals Z_1..Z_m drawn once per fit
   from ``noise.rng`` (data-independent), X^s_k(θ) = g(θ, Z_k). So u is a fixed deterministic
   function of θ for the whole chain (a proper target, no pseudo-marginal noise), and Theorem 2
   applies to it for every Z (the bound is a sup over synthetic sets, appendix eq. 8).
3. Sample θ from f(θ) ∝ exp(−ε_r u(X, θ) / (2Δu)) · Π N(θ_i; 0, 1e5) with a random-walk Metropolis
   chain, ε_r = ε / l, Δu = 1/n; the prior is truncated to a public box (``PRIOR_*``). The chain
   starts at a fixed data-independent point. Burn-in only: the exponent is annealed (weight β from
   ANNEAL_SCALE / (n ε_r / 2) up to 1), in ``paper`` mode the burn-in targets the cheap, smooth strict
   utility (a warm-up), and the proposal is adapted (scale towards an acceptance rate of
   ``TARGET_ACCEPT``; from half-way shaped like the chain's covariance). After burn-in the target is
   exact and the proposal frozen. The l released θ are the chain states at l equally spaced
   iterations after burn-in (thinning = iterations // l).
4. ``sample(n)``: rows split into l near-equal blocks, block i drawn from g(θ_i) with fresh normals
   from ``noise.rng`` and decoded with ``Schema.from_unit`` (post-processing).

Trees (``tree`` parameter)
--------------------------
``strict`` (default): depth-1 trees, no complexity pruning. Greedy = optimal for one split, so
    Theorem 2 holds. The split is found exactly over all columns and all thresholds (sort + cumsum).
``paper``: greedy Gini trees to ``depth`` (0 = rpart's maximum, 30) with rpart's complexity
    parameter: a split is kept only if it reduces the MISCLASSIFICATION risk by more than
    cp × (root risk) per split (cost-complexity pruning at alpha = cp · n, computed exactly bottom-up).
    Greedy deeper trees can exceed the 1/n bound (paper Table 1: 0.3%–2.5% of neighbouring pairs),
    so the ε claim is then heuristic: the report's guarantee is "heuristic" (never "pure") and the
    release form says so before release (``advice``).
Both modes are fitted by :func:`tree_pmse`, a level-wise greedy CART vectorized over all m
synthetic sets at once (each set is one root node).

Privacy (replace-one neighbours, n public)
------------------------------------------
For a FIXED partition of the stacked data, replacing one real record (label 0) moves it from one
leaf j to another leaf k. pMSE = (1/2n)(Σ_i a_i²/m_i − n/2) with a_i the synthetic count and m_i
the size of leaf i. Leaf j loses a label-0 row: a_j²/m_j grows by a_j²/(m_j(m_j − 1)) ∈ [0, 1)
(a_j ≤ m_j − 1); leaf k gains one: a_k²/m_k shrinks by a_k²/(m_k(m_k + 1)) ∈ [0, 1). The optimal
depth-1 tree maximises Σ a²/m over the same family of threshold partitions for X and X', so
|pMSE(X) − pMSE(X')| ≤ sup over partitions < 1/(2n) ≤ 1/n = Δu (Theorem 2's constant, which we
keep: the factor-2 slack is the paper's and is harmless). The argument only needs the split family
to be thresholds on a FIXED per-record feature map, so the pairwise products keep the bound, and
the average over m synthetic sets (fixed Z) keeps it too. The exponential mechanism with Δu is then
ε_r-DP per released θ; l draws compose to l·ε_r = ε (basic composition). MCMC only approximates
exact sampling: the report's guarantee is "mcmc" (see ``GUARANTEE_MEANINGS`` in accounting.py),
with a caveat saying what is guaranteed and what only approximated; chain-length floors MIN_BURN_IN and
MIN_ITERATIONS (justified beside them) refuse the short chains whose output is measurably data-dependent.
The MCMC accept/reject uniforms (``noise.uniform``) and the proposals come from ``noise.private_rng``
(the chain's path is a private choice; a stream separate from the published rows); the fixed synthetic
normals Z (Theorem 2 holds for every Z) and the released rows use ``noise.rng``.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pandas as pd

from ...accounting import EpsilonDeltaEvent, PrivacyCost
from ...base import Mechanism, ParamSpec
from ...noise import Noise
from ...schema import Schema
from ...source import TableSource
from . import guide

# -- tuning constants ------------------------------------------------------------------------------
PRIOR_VARIANCE = 1e5  # the paper's "very flat" N(0, 100 000) prior on every parameter (Section 6)
# ... truncated to a public box of parameters that can describe data inside the public bounds (unit
# scale): intercepts in [-0.5, 1.5], slopes in [-10, 10], σ from 1e-4 to 2 (log σ² in [-18.4, 1.4]).
# Outside it nearly every synthetic value would be clipped to a bound: pMSE saturates at 1/4 there,
# and at small ε that flat region's huge prior volume would swamp the posterior (see docs).
PRIOR_INTERCEPT = (-0.5, 1.5)
PRIOR_SLOPE = (-10.0, 10.0)
PRIOR_LOG_VAR = (2 * math.log(1e-4), 2 * math.log(2.0))
UNLIMITED_DEPTH = 30  # rpart's maxdepth ceiling, used for depth = 0 ("unlimited")
TARGET_ACCEPT = 0.25  # random-walk Metropolis sweet spot (0.234 asymptotically, ~0.3-0.4 in low d)
ADAPT_EVERY = 25  # burn-in iterations between proposal adaptations
ANNEAL_FRACTION = 0.5  # burn-in share over which the score's weight β rises to 1
ANNEAL_SCALE = 400.0  # starting β makes the score's factor ε_r/(2Δu) = n ε_r / 2 at most this: even
# then a saturated θ (pMSE 1/4, e.g. all synthetic values clipped to a bound) is 100 log-units worse
# than a good one, so the hot start cannot wander off onto that plateau
MAX_STEP_MULTIPLIER = 20.0  # the adapted proposal never grows beyond 20x its initial size
ADAPT_GAIN = 3.0  # log-scale step per window: (acceptance - target) * gain; an empty window shrinks by e^-0.75
COV_JITTER = 1e-8  # ridge added to the empirical proposal covariance (unit-scale parameters)
GAIN_TOL = 1e-9  # a split must raise Σ a²/m by more than this (relative) to count as a gain
INIT_LOG_VAR = math.log(1.0 / 12.0)  # start: variance of a uniform on the unit scale
CENTRE = 0.5  # regressors enter as (x_k - 1/2): the public mid-range, so intercepts and slopes decorrelate
DEFAULT_PROPOSAL_SCALE = 0.05  # initial random-walk sd on the unit scale, adapted during burn-in
MAX_TRACE = 2000  # post-burn-in states kept in the (private) diagnostics, evenly thinned
# Chain-length floors (the ParamSpec minimums). A FLOOR, NOT A CERTIFICATE: no chain length certifies
# convergence, which is why the report's guarantee is "mcmc" and never "pure". What the floors do rule out
# is the failure the privacy audit measured: with burn_in=0 and iterations=1 the release is the public starting
# point with a data-dependent probability (the first proposal rejected: 286 vs 7 in 80,000 runs per side,
# an epsilon lower bound of 2.66 against a claimed 1). With burn_in >= 100 the chain passes through four
# adaptation windows (ADAPT_EVERY = 25): each window without an acceptance shrinks the step by e^-0.75,
# and a small step barely changes the CART partition, so the piecewise-constant score rarely changes
# and the step is accepted with probability near the prior ratio (about 1). The chain therefore leaves
# the start early, whatever the data (measured: 0 of 300 releases at the start point with n = 10,
# epsilon = 1, m = 1, against 7 of 300 with burn_in=0/iterations=1: tests/mechanisms/synthesizers/test_pmse.py,
# test_at_the_floors_the_chain_never_releases_its_starting_point), and iterations >= 100 keeps at least
# 100 exact-target steps between the end of adaptation and the release. The whole chain is not audited
# (an audit of ~500 runs per side certifies only gross leaks); tests/privacy audits the exact weighting.
MIN_BURN_IN = 100
MIN_ITERATIONS = 100
# tree="paper" is labelled "heuristic", never "pure": greedy CART deeper than one split breaks Theorem 2's
# 1/n bound. Measured: the privacy audit finds an exact exponential mechanism over default paper-mode
# utilities leaking epsilon 1.30 against a claimed 1; 300 random neighbouring
# pairs of 10-40 rows (depth 5, cp 0.01) reach n·|Δu| = 2.73 (tests/mechanisms/synthesizers/test_pmse.py,
# test_paper_trees_exceed_the_one_over_n_bound_which_is_why_paper_mode_is_heuristic). Shown on the
# release form (advice) and first in the privacy report.
PAPER_MODE_CAVEAT = (
    "tree='paper' is HEURISTIC, not a proven epsilon-DP guarantee: greedy CART deeper than one "
    "split exceeds the 1/n utility sensitivity of Theorem 2 on some neighbouring tables (the "
    "paper measures 0.3%-2.5% of pairs; measured here up to 2.7/n on small tables, and epsilon "
    "1.3 against a claimed 1 with the defaults). Use tree='strict' for the epsilon-DP target."
)


# =================================================================================================
# CART pMSE (Algorithm 1), vectorized over groups
# =================================================================================================


def tree_pmse(V: np.ndarray, y: np.ndarray, *, depth: int, alpha: float | None = None, min_leaf: int = 1) -> np.ndarray:
    """pMSE of a greedy Gini classification tree fitted in-sample, for G independent groups at once.

    ``V``: (G, N, d) predictors; ``y``: (N,) or (G, N) labels in {0, 1} (1 = synthetic).
    ``depth``: maximum depth (1 = one split: exact, greedy = optimal). ``alpha``: rpart
    cost-complexity on the misclassification risk (alpha = cp × root risk) or None for no pruning.
    ``min_leaf``: rpart's minbucket (the mechanism uses 1; synthpop's pMSE metric uses 5).
    Returns (G,) pMSE values (1/N) Σ (p̂ − 1/2)².

    Level-wise: every column keeps the row order sorted by (node, value); a level computes, for all
    nodes and all thresholds, Σ a²/m of the two children by segmented cumulative sums, takes the
    best split per node (ties broken towards the first column / lowest threshold), then stable-sorts
    each order by child id (keeping value order inside a child). Nodes whose risk ≤ alpha can never
    carry a kept split, so they are not grown (an exact pre-pruning, as in rpart).
    """
    V = np.asarray(V, dtype=np.float64)
    if V.ndim != 3:
        raise ValueError(f"V must have shape (G, N, d), got shape={V.shape}")
    G, N, d = V.shape
    y = np.broadcast_to(np.asarray(y), (G, N)).astype(np.float64).ravel()
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got depth={depth}")
    flat = V.reshape(G * N, d)
    offsets = (np.arange(G) * N)[:, None]
    orders = [(np.argsort(V[:, :, c], axis=1) + offsets).ravel() for c in range(d)]
    node = np.repeat(np.arange(G), N)
    A = np.bincount(node, weights=y, minlength=G)
    M = np.bincount(node, minlength=G).astype(np.float64)
    levels = []  # per level: (A, M, split mask, index of left child in the next level)
    for level in range(depth):
        risk = np.minimum(A, M - A)
        active = (M >= 2 * min_leaf) & (risk > (alpha if alpha is not None else 0.0))
        if not active.any():
            levels.append((A, M, np.zeros(len(A), bool), None))
            break
        best, col, thr = _best_splits(flat, y, orders, node, A, M, active, min_leaf)
        gain = best - A * A / np.maximum(M, 1)
        split = active & (gain > GAIN_TOL * np.maximum(A, 1))
        if not split.any():
            levels.append((A, M, split, None))
            break
        left_of = np.full(len(A), -1)
        left_of[split] = 2 * np.arange(int(split.sum()))
        # children of the rows in split nodes; rows of nodes that stopped earlier carry node -1, which
        # must never index ``split`` (split[-1] is the LAST node's flag: those rows would rejoin its children)
        keep = (node >= 0) & split[np.maximum(node, 0)]
        rows = np.flatnonzero(keep)
        nd = node[rows]
        goes_right = flat[rows, col[nd]] > thr[nd]
        child = np.full(len(node), -1)
        child[rows] = left_of[nd] + goes_right
        levels.append((A, M, split, left_of))
        node = child
        n_child = 2 * int(split.sum())
        key = node.astype(np.int16) if n_child < 2**15 else node  # int16 keys: numpy's radix sort
        orders = [o[keep[o]] for o in orders]
        orders = [o[np.argsort(key[o], kind="stable")] for o in orders]
        A = np.bincount(node[rows], weights=y[rows], minlength=n_child)
        M = np.bincount(node[rows], minlength=n_child).astype(np.float64)
    else:
        levels.append((A, M, np.zeros(len(A), bool), None))
    return _prune_and_score(levels, alpha) / N


def depth1_pmse(real_sorted: np.ndarray, S: np.ndarray) -> np.ndarray:
    """Exact pMSE of the optimal one-split Gini tree, real (label 0) vs synthetic (label 1) rows.

    ``real_sorted``: (n, d) real columns, each sorted ascending (sorted once per fit); ``S``: (G, n, d)
    synthetic sets of the same size n. For every group, the best split maximises
    Σ_children a²/m over all columns and all thresholds t ∈ data values (left child = values ≤ t).
    Counts at each threshold come from sorting the synthetic column and two ``searchsorted`` calls;
    only the last position of a run of equal values is a valid threshold. Equals
    ``tree_pmse(..., depth=1)`` (a test checks it) at a fraction of the cost.
    """
    G, n, d = S.shape
    best = np.full(G, n / 2.0)  # no split: Σ a²/m = n² / 2n
    for c in range(d):
        r = real_sorted[:, c]
        r_last = np.r_[r[1:] > r[:-1], True]
        s_all = np.sort(S[:, :, c], axis=1)
        for g in range(G):
            s = s_all[g]
            s_last = np.r_[s[1:] > s[:-1], True]
            a = np.r_[np.flatnonzero(s_last) + 1.0, np.searchsorted(s, r[r_last], side="right")]
            k = np.r_[np.searchsorted(r, s[s_last], side="right"), np.flatnonzero(r_last) + 1.0]
            m_l = a + k
            m_r = 2.0 * n - m_l
            with np.errstate(divide="ignore", invalid="ignore"):
                score = np.where(m_l > 0, a * a / m_l, 0.0) + np.where(m_r > 0, (n - a) ** 2 / m_r, 0.0)
            best[g] = max(best[g], float(score.max()))
    return (best - n / 2.0) / (2.0 * n)


def _best_splits(flat, y, orders, node, A, M, active, min_leaf=1):
    """Best (score, column, threshold) per node over all columns; score = Σ_children a²/m."""
    n_nodes = len(A)
    best = np.full(n_nodes, -np.inf)
    col = np.zeros(n_nodes, dtype=np.int64)
    thr = np.zeros(n_nodes)
    for c, o in enumerate(orders):
        o = o[active[node[o]]]
        nd = node[o]
        v = flat[o, c]
        yy = y[o]
        start_mask = np.empty(len(o), bool)
        start_mask[0] = True
        np.not_equal(nd[1:], nd[:-1], out=start_mask[1:])
        starts = np.flatnonzero(start_mask)
        seg = np.cumsum(start_mask) - 1
        cs = np.cumsum(yy)
        a_l = cs - (cs[starts] - yy[starts])[seg]
        m_l = (np.arange(len(o)) - starts[seg] + 1).astype(np.float64)
        a_r = A[nd] - a_l
        m_r = M[nd] - m_l
        valid = np.empty(len(o), bool)
        valid[-1] = False
        np.less(v[:-1], v[1:], out=valid[:-1])
        valid &= ~np.r_[start_mask[1:], True]  # the last row of a node leaves an empty right child
        if min_leaf > 1:
            valid &= (m_l >= min_leaf) & (m_r >= min_leaf)
        with np.errstate(divide="ignore", invalid="ignore"):
            score = np.where(valid, a_l * a_l / m_l + a_r * a_r / m_r, -np.inf)
        seg_best = np.maximum.reduceat(score, starts)
        hit = np.flatnonzero(valid & (score == seg_best[seg]))
        if hit.size == 0:
            continue
        sh = seg[hit]  # non-decreasing: keep the first hit of every segment
        first = np.r_[True, sh[1:] != sh[:-1]]
        segs, pos = sh[first], hit[first]
        nodes = nd[starts[segs]]
        better = seg_best[segs] > best[nodes]
        nodes, pos = nodes[better], pos[better]
        best[nodes] = score[pos]
        col[nodes] = c
        thr[nodes] = v[pos]
    return best, col, thr


def _prune_and_score(levels, alpha) -> np.ndarray:
    """Bottom-up: optional cost-complexity pruning (misclassification risk + alpha per leaf), then
    Σ over the kept leaves of m (a/m − 1/2)² for each root (group)."""
    a_pen = 0.0 if alpha is None else float(alpha)
    val = cost = None
    for A, M, split, left_of in reversed(levels):
        leaf_val = np.where(M > 0, A * A / np.maximum(M, 1) - A + M / 4.0, 0.0)
        leaf_cost = np.minimum(A, M - A) + a_pen
        if val is None or left_of is None:
            val, cost = leaf_val, leaf_cost
            continue
        li = np.where(split, left_of, 0)
        sub_val = np.where(split, val[li] + val[li + 1], leaf_val)
        sub_cost = np.where(split, cost[li] + cost[li + 1], leaf_cost)
        keep = split & ((sub_cost < leaf_cost) if alpha is not None else True)
        val = np.where(keep, sub_val, leaf_val)
        cost = np.where(keep, sub_cost, leaf_cost)
    return val


# =================================================================================================
# Exponential mechanism: log-weights, exact grid sampler (audited), Metropolis sampler
# =================================================================================================


def log_weight(u, *, epsilon: float, sensitivity: float):
    """Log of the exponential-mechanism weight exp(−ε u / (2Δu)) (Definition 2, equation 2)."""
    return -epsilon * np.asarray(u, dtype=np.float64) / (2.0 * sensitivity)


def log_prior(theta: np.ndarray, lower: np.ndarray | float = -math.inf, upper: np.ndarray | float = math.inf) -> float:
    """The flat N(0, PRIOR_VARIANCE) prior on every parameter (keeps the target proper), truncated
    to the public box [lower, upper] (−inf outside)."""
    theta = np.asarray(theta, dtype=np.float64)
    if not (np.all(theta >= lower) and np.all(theta <= upper)):
        return -math.inf
    return float(-np.sum(theta * theta) / (2.0 * PRIOR_VARIANCE))


def exponential_mechanism_grid(utilities, *, epsilon: float, sensitivity: float, noise: Noise, size: int | None = None):
    """Exact exponential mechanism over a finite public grid of candidates (lower utility = better).

    Returns the index of the chosen candidate (or ``size`` independent indices), drawn by inverting
    the CDF of the normalised weights with ``noise.uniform``. It shares :func:`log_weight` with the
    MCMC sampler, so auditing it on a small θ grid audits the weighting the chain targets.
    """
    lw = log_weight(utilities, epsilon=epsilon, sensitivity=sensitivity)
    p = np.exp(lw - lw.max())
    cdf = np.cumsum(p / p.sum())
    idx = np.minimum(np.searchsorted(cdf, noise.uniform(size), side="right"), len(cdf) - 1)
    return int(idx) if size is None else idx.astype(np.int64)


def metropolis(
    score: Callable[[np.ndarray], float],
    theta0: np.ndarray,
    *,
    scale,
    burn_in: int,
    iterations: int,
    keep: int,
    noise: Noise,
    prior: Callable[[np.ndarray], float] = log_prior,
    anneal_from: float = 1.0,
    warmup_score: Callable[[np.ndarray], float] | None = None,
    warmup: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[np.ndarray, dict]:
    """Random-walk Metropolis on log f(θ) = score(θ) + prior(θ), proposal adapted during burn-in only.

    ``score`` is the exponential mechanism's exponent −ε u(X, θ) / (2Δu). Burn-in only:
    * annealing: the score is multiplied by β rising geometrically from ``anneal_from`` to 1 over
      the first ANNEAL_FRACTION of burn-in (a broad, smooth start; large ε makes the target so
      peaked that an untempered random walk gets trapped in the utility's small bumps);
    * the first ``warmup`` iterations may use ``warmup_score`` (a smoother, cheaper utility);
    * the proposal sd is adapted to an acceptance of TARGET_ACCEPT, and from half-way shaped like
      the chain's covariance (Haario et al.'s adaptive Metropolis).
    After burn-in the target is exactly ``score + prior`` and the proposal is frozen. Returns the
    ``keep`` states at iterations burn_in + (i+1)·(iterations // keep), and diagnostics (PRIVATE:
    acceptance rates depend on the data; never put them in a report). The accept step compares
    ``noise.uniform()`` draws with the ratio of private scores; proposals use ``noise.private_rng``.
    """
    k = len(theta0)
    total = burn_in + iterations
    thin = iterations // keep
    if thin < 1:
        raise ValueError(
            f"iterations must be at least the number of releases, got iterations={iterations}, releases={keep}"
        )
    if warmup > burn_in:
        raise ValueError(f"warmup must not exceed burn_in, got warmup={warmup}, burn_in={burn_in}")
    if not 0 < anneal_from <= 1:
        raise ValueError(f"anneal_from must be in (0, 1], got anneal_from={anneal_from}")
    rng = noise.private_rng  # proposals: with the accept decisions they ARE the private path of the chain
    uniforms = noise.uniform(size=total)
    chol = np.diag(np.broadcast_to(np.asarray(scale, dtype=np.float64), (k,)))
    log_s = 0.0  # log multiplier on the proposal, adapted during burn-in
    max_log_s = math.log(MAX_STEP_MULTIPLIER)
    ramp = max(1, int(ANNEAL_FRACTION * burn_in))
    record = max(1, iterations // MAX_TRACE)
    main_trace = []
    f = warmup_score if (warmup_score is not None and warmup > 0) else score
    cur = np.array(theta0, dtype=np.float64)
    cur_s, cur_p = f(cur), prior(cur)
    trace = np.empty((burn_in, k))
    acc_window = acc_burn = acc_main = 0
    kept = []
    for it in range(total):
        if it == warmup and f is not score:
            f = score
            cur_s = f(cur)
        beta = anneal_from ** max(0.0, 1.0 - it / ramp) if it < burn_in else 1.0
        prop = cur + math.exp(log_s) * (chol @ rng.standard_normal(k))
        prop_p = prior(prop)
        prop_s = f(prop) if math.isfinite(prop_p) else -math.inf  # outside the prior: no utility needed
        log_ratio = beta * (prop_s - cur_s) + (prop_p - cur_p) if math.isfinite(prop_p) else -math.inf
        accept = bool(np.isfinite(log_ratio)) and math.log(uniforms[it]) < log_ratio
        if accept:
            cur, cur_s, cur_p = prop, prop_s, prop_p
        if it < burn_in:
            trace[it] = cur
            acc_window += accept
            acc_burn += accept
            if (it + 1) % ADAPT_EVERY == 0:
                log_s = min(log_s + ADAPT_GAIN * (acc_window / ADAPT_EVERY - TARGET_ACCEPT), max_log_s)
                acc_window = 0
                half = (it + 1) // 2
                if it + 1 >= burn_in // 2 and len(np.unique(trace[half : it + 1, 0])) > 2 * k:
                    cov = np.atleast_2d(np.cov(trace[half : it + 1], rowvar=False)) * (2.38**2 / k)
                    try:
                        new = np.linalg.cholesky(cov + COV_JITTER * np.eye(k))
                    except np.linalg.LinAlgError:
                        continue
                    # keep the overall step size: rescale so the new shape has the old mean sd
                    old_sd = math.exp(log_s) * np.sqrt(np.mean(np.sum(chol**2, axis=1)))
                    chol = new
                    log_s = min(math.log(old_sd / np.sqrt(np.mean(np.sum(chol**2, axis=1)))), max_log_s)
        else:
            acc_main += accept
            j = it - burn_in + 1
            if j % record == 0:
                main_trace.append(cur.copy())
            if j % thin == 0 and len(kept) < keep:
                kept.append(cur.copy())
        if progress is not None:
            progress(it + 1, total)
    diagnostics = {
        "accept_burn_in": acc_burn / max(burn_in, 1),
        "accept_main": acc_main / max(iterations, 1),
        "proposal_multiplier": math.exp(log_s),
        "burn_in_trace": trace,
        "trace": np.array(main_trace).reshape(-1, k),
        "trace_every": record,
    }
    return np.array(kept), diagnostics


# =================================================================================================
# Synthesis model g(θ) and the utility u(X, θ)
# =================================================================================================

LOG_VAR_STEP = 10.0  # log-variances move ~10x more than means per step (relative vs absolute scale)
LOG_VAR_LIMIT = 50.0  # log-variances are clipped to ±50 inside g(θ) (σ up to e^25) to stay finite


class LinearGaussianModel:
    """Sequential linear-Gaussian model on the unit scale; θ = (intercepts, slopes, log-variances).

    Column j (in model order) is drawn given the already FINISHED (clipped / rounded) columns < j,
    so the model describes the released values themselves.
    """

    def __init__(self, d: int, finish: Callable[[np.ndarray, int], np.ndarray]):
        if d < 1:
            raise ValueError(f"the model needs at least one column, got d={d}")
        self.d = d
        self.finish = finish
        self.rows, self.cols = np.tril_indices(d, -1)
        self.n_params = 2 * d + len(self.rows)

    def unpack(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        d = self.d
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (self.n_params,):
            raise ValueError(f"θ must have {self.n_params} entries, got shape={theta.shape}")
        B = np.zeros((d, d))
        B[self.rows, self.cols] = theta[d : d + len(self.rows)]
        sd = np.exp(0.5 * np.clip(theta[-d:], -LOG_VAR_LIMIT, LOG_VAR_LIMIT))
        return theta[:d], B, sd

    def initial(self) -> np.ndarray:
        """Data-independent starting point: mean 1/2, no slopes, variance of a uniform on [0, 1]."""
        return np.concatenate([np.full(self.d, 0.5), np.zeros(len(self.rows)), np.full(self.d, INIT_LOG_VAR)])

    def prior_box(self) -> tuple[np.ndarray, np.ndarray]:
        """Public (lower, upper) bounds of the truncated prior, per parameter."""
        s = len(self.rows)
        lo = np.r_[np.full(self.d, PRIOR_INTERCEPT[0]), np.full(s, PRIOR_SLOPE[0]), np.full(self.d, PRIOR_LOG_VAR[0])]
        hi = np.r_[np.full(self.d, PRIOR_INTERCEPT[1]), np.full(s, PRIOR_SLOPE[1]), np.full(self.d, PRIOR_LOG_VAR[1])]
        return lo, hi

    def proposal_scales(self, scale: float) -> np.ndarray:
        """Initial random-walk sds: ``scale`` for intercepts and slopes, LOG_VAR_STEP x for log-variances."""
        return np.concatenate([np.full(self.d + len(self.rows), scale), np.full(self.d, LOG_VAR_STEP * scale)])

    def generate(self, theta: np.ndarray, Z: np.ndarray) -> np.ndarray:
        """Synthetic unit-scale rows from standard normals ``Z`` (..., n, d), finished per column."""
        b0, B, sd = self.unpack(theta)
        X = np.empty_like(Z)
        for j in range(self.d):
            col = b0[j] + sd[j] * Z[..., j]
            if j:
                col += (X[..., :j] - CENTRE) @ B[j, :j]
            X[..., j] = self.finish(col, j)
        return X

    def names(self, columns: list[str]) -> list[str]:
        """Human-readable parameter names (for reports and benchmarks)."""
        out = [f"intercept[{c}]" for c in columns]
        out += [f"slope[{columns[r]}<-{columns[c]}]" for r, c in zip(self.rows, self.cols)]
        out += [f"log_var[{c}]" for c in columns]
        return out


class PMSEUtility:
    """u(X, θ): mean pMSE over m synthetic sets made from fixed normals Z (common random numbers)."""

    def __init__(
        self,
        X: np.ndarray,
        model: LinearGaussianModel,
        Z: np.ndarray,
        *,
        depth: int,
        alpha: float | None,
        pairwise: bool = False,
    ):
        X = np.asarray(X, dtype=np.float64)
        m, n, d = Z.shape
        if X.shape != (n, d):
            raise ValueError(f"real data must have shape {(n, d)}, got shape={X.shape}")
        self.n, self.model, self.Z, self.depth, self.alpha = n, model, Z, depth, alpha
        self.pairwise = pairwise
        X = self.features(X)
        d = X.shape[-1]
        if depth == 1 and alpha is None:  # strict mode: the fast exact one-split path
            self.real_sorted = np.sort(X, axis=0)
        else:
            self.real_sorted = None
            self.V = np.empty((m, 2 * n, d))
            self.V[:, :n] = X
            self.y = np.r_[np.zeros(n), np.ones(n)]

    def features(self, X: np.ndarray) -> np.ndarray:
        """Predictors Z = f(X^comb) of Algorithm 1: the columns, plus (pairwise) the centred products
        (x_j − 1/2)(x_k − 1/2), j < k, so that one split can see the sign and size of a dependence."""
        if not self.pairwise or X.shape[-1] < 2:
            return X
        j, k = np.triu_indices(X.shape[-1], 1)
        C = X - CENTRE
        return np.concatenate([X, C[..., j] * C[..., k]], axis=-1)

    def per_set(self, theta: np.ndarray) -> np.ndarray:
        S = self.features(self.model.generate(theta, self.Z))
        if self.real_sorted is not None:
            return depth1_pmse(self.real_sorted, S)
        self.V[:, self.n :] = S
        return tree_pmse(self.V, self.y, depth=self.depth, alpha=self.alpha)

    def __call__(self, theta: np.ndarray) -> float:
        return float(self.per_set(theta).mean())


def tree_settings(tree: str, depth: int, cp: float, n: int) -> tuple[int, float | None]:
    """(depth, alpha) for tree_pmse: strict = one exact split, no pruning; paper = rpart-like."""
    if tree == "strict":
        return 1, None
    if tree == "paper":
        return (depth if depth > 0 else UNLIMITED_DEPTH), cp * n  # root risk of 2n balanced rows = n
    raise ValueError(f"tree must be 'strict' or 'paper', got tree={tree!r}")


# =================================================================================================
# The mechanism
# =================================================================================================


class PMSEMechanism(Mechanism):
    name = "pmse"
    title = "pMSE mechanism (exponential mechanism, CART propensity utility)"
    paper = (
        "Snoke & Slavković (2018), pMSE Mechanism: Differentially Private Synthetic Data with Maximal "
        "Distributional Similarity (PSD 2018), Algorithms 1-2, Theorem 2"
    )
    supported_kinds = frozenset({"continuous", "integer"})
    WIDE = 3  # more kept columns than this: the strict utility's flat directions dominate (guide.advice)

    guide = guide  # public inputs only: accuracy and near-uniform rule, run time, steward help, model quality
    speed_rank = 7
    target_structure = "joint"
    advice = classmethod(guide.advice)
    params = (
        ParamSpec(
            "tree",
            "choice",
            "strict",
            "strict: depth-1 trees, exact split, Theorem 2's bound holds. paper: deeper greedy trees "
            "with rpart's cp, better utility but HEURISTIC privacy: greedy fitting exceeds the sensitivity "
            "bound (recorded as 'heuristic', not epsilon-DP).",
            choices=("strict", "paper"),
        ),
        ParamSpec(
            "features",
            "choice",
            "pairwise",
            "CART predictors: the columns, or (pairwise) also the centred products of column pairs, "
            "so one split can detect a dependence (a fixed per-record map: the bound still holds)",
            choices=("pairwise", "columns"),
        ),
        ParamSpec(
            "depth",
            "int",
            5,
            "tree depth in 'paper' mode (0 = unlimited, i.e. rpart's 30)",
            minimum=0,
            maximum=UNLIMITED_DEPTH,
        ),
        ParamSpec(
            "cp",
            "float",
            0.01,
            "rpart complexity parameter in 'paper' mode (fraction of the root "
            "misclassification risk a split must remove)",
            minimum=0.0,
            maximum=1.0,
        ),
        ParamSpec(
            "m",
            "int",
            5,
            "synthetic sets per utility evaluation (fixed normals reused across θ)",
            minimum=1,
            maximum=200,
        ),
        ParamSpec(
            "releases",
            "int",
            1,
            "number l of parameter draws released, each at epsilon/l; rows are split evenly among them",
            minimum=1,
            maximum=100,
        ),
        ParamSpec(
            "iterations",
            "int",
            2000,
            "MCMC iterations after burn-in (thinning = iterations / releases); "
            f"at least {MIN_ITERATIONS}: shorter chains release data-dependent copies of the start",
            minimum=MIN_ITERATIONS,
            maximum=1_000_000,
        ),
        ParamSpec(
            "burn_in",
            "int",
            1000,
            f"MCMC burn-in iterations (proposal adapted during burn-in only); at least {MIN_BURN_IN}",
            minimum=MIN_BURN_IN,
            maximum=1_000_000,
        ),
        ParamSpec(
            "proposal_scale",
            "float",
            DEFAULT_PROPOSAL_SCALE,
            "initial random-walk standard deviation on the unit scale (adapted during burn-in)",
            minimum=1e-6,
            maximum=10.0,
        ),
        ParamSpec(
            "column_order",
            "str",
            None,
            "comma-separated column order of the sequential model (empty = schema order)",
            optional=True,
        ),
    )

    def __init__(self, schema: Schema, **kw):
        super().__init__(schema, **kw)
        self.order = self._parse_order(self.params["column_order"], schema)
        if self.params["iterations"] < self.params["releases"]:  # refused before any data is read
            raise ValueError(
                f"iterations must be at least the number of releases, got "
                f"iterations={self.params['iterations']}, releases={self.params['releases']}"
            )
        self.n: int | None = None
        self.thetas: np.ndarray | None = None
        self.diagnostics: dict = {}  # PRIVATE (data-dependent): for benchmarks/stewards, never reported

    @staticmethod
    def _parse_order(text: str | None, schema: Schema) -> list[str]:
        names = schema.names
        if text is None or not text.strip():
            return list(names)
        order = [t.strip() for t in text.split(",") if t.strip()]
        if sorted(order) != sorted(names) or len(set(order)) != len(order):
            raise ValueError(
                f"column_order must list every kept column exactly once ({names}), got column_order={text!r}"
            )
        return order

    # -- model plumbing --------------------------------------------------------------------------
    def _model(self) -> LinearGaussianModel:
        cols = [self.schema.column(c) for c in self.order]
        lower = np.array([c.lower for c in cols])
        width = np.array([c.upper - c.lower for c in cols])
        is_int = [c.kind == "integer" for c in cols]
        lo_int = np.array([math.ceil(c.lower) if c.kind == "integer" else 0.0 for c in cols])
        hi_int = np.array([math.floor(c.upper) if c.kind == "integer" else 0.0 for c in cols])

        def finish(v: np.ndarray, j: int) -> np.ndarray:
            v = np.clip(v, 0.0, 1.0)
            if is_int[j]:  # the released integer, back on the unit scale
                v = (np.clip(np.rint(lower[j] + v * width[j]), lo_int[j], hi_int[j]) - lower[j]) / width[j]
            return v

        return LinearGaussianModel(len(cols), finish)

    def _unit(self, frame: pd.DataFrame) -> np.ndarray:
        idx = [self.schema.names.index(c) for c in self.order]
        return self.schema.to_unit(frame)[:, idx]

    # -- Algorithm 2 -----------------------------------------------------------------------------
    def _fit(self, source: TableSource) -> None:
        p = self.params
        X = self._unit(source.frame())
        n = len(X)
        if n < 2:
            raise ValueError(f"the pMSE mechanism needs at least 2 rows, got n={n}")
        self.n = n
        model = self._model()
        depth, alpha = tree_settings(p["tree"], p["depth"], p["cp"], n)
        Z = self.noise.rng.standard_normal((p["m"], n, model.d))  # data-independent, fixed for the chain
        utility = PMSEUtility(X, model, Z, depth=depth, alpha=alpha, pairwise=p["features"] == "pairwise")
        eps_each = self.epsilon / p["releases"]
        sensitivity = 1.0 / n  # Theorem 2 (replace-one, n public)

        def score(theta: np.ndarray, u: Callable[[np.ndarray], float] = utility) -> float:
            return float(log_weight(u(theta), epsilon=eps_each, sensitivity=sensitivity))

        box = model.prior_box()
        warm, warmup = None, 0
        if p["tree"] == "paper":  # burn-in on the smooth, cheap strict utility (see module docstring)
            smooth = PMSEUtility(X, model, Z, depth=1, alpha=None, pairwise=True)
            warm, warmup = (lambda theta: score(theta, smooth)), p["burn_in"]

        def report(i: int, total: int) -> None:
            self.progress(i / total, f"MCMC iteration {i}/{total}")

        self.progress(0.0, "MCMC start")
        self.thetas, self.diagnostics = metropolis(
            score,
            model.initial(),
            scale=model.proposal_scales(p["proposal_scale"]),
            burn_in=p["burn_in"],
            iterations=p["iterations"],
            keep=p["releases"],
            noise=self.noise,
            progress=report,
            prior=lambda theta: log_prior(theta, *box),
            anneal_from=min(1.0, ANNEAL_SCALE / (eps_each / (2.0 * sensitivity))),
            warmup_score=warm,
            warmup=warmup,
        )

    def sample(self, n: int) -> pd.DataFrame:
        n = self._check_rows(n)
        model = self._model()
        l = len(self.thetas)
        sizes = np.full(l, n // l) + (np.arange(l) < n % l)
        parts = [
            model.generate(theta, self.noise.rng.standard_normal((int(k), model.d)))
            for theta, k in zip(self.thetas, sizes)
            if k > 0
        ]
        U = np.concatenate(parts)
        pos = [self.order.index(c) for c in self.schema.names]
        return self.schema.from_unit(U[:, pos])

    def sample_sets(self, n: int) -> list[pd.DataFrame]:
        """l synthetic tables of n rows, one per released θ (for multiple-imputation combining rules)."""
        n = self._check_rows(n)
        model = self._model()
        pos = [self.order.index(c) for c in self.schema.names]
        return [
            self.schema.from_unit(model.generate(t, self.noise.rng.standard_normal((n, model.d)))[:, pos])
            for t in self.thetas
        ]

    # -- reporting -------------------------------------------------------------------------------
    def privacy_cost(self) -> PrivacyCost:
        p = self.params
        caveats = [
            "MCMC sampling only approximates the exponential mechanism's distribution. GUARANTEED: the "
            "target distribution (exact exponential mechanism, utility sensitivity 1/n) is epsilon-DP; the "
            "chain's start and proposals are data-independent; burn_in and iterations are at least "
            f"{MIN_BURN_IN} and {MIN_ITERATIONS} (shorter chains measurably leak). APPROXIMATED: that the "
            "finite chain has reached the target; convergence is not certified, so epsilon is not a "
            "proven bound for the released draw (label 'mcmc', not 'pure')"
        ]
        if p["releases"] > 1:
            caveats.append(
                "the l released parameter draws come from one chain (thinned), so they are only "
                "approximately independent draws of the mechanism"
            )
        if p["tree"] == "paper":
            caveats.insert(0, PAPER_MODE_CAVEAT)
        return PrivacyCost(
            epsilon=self.epsilon,
            delta=0.0,
            guarantee="heuristic" if p["tree"] == "paper" else "mcmc",
            caveats=tuple(caveats),
            details={
                "per_release_epsilon": self.epsilon / p["releases"],
                "releases": p["releases"],
                "utility_sensitivity": "1/n (Theorem 2)",
                "sensitivity_value": (1.0 / self.n) if self.n else None,
                "tree": p["tree"],
                "composition": "basic: l draws at epsilon/l each",
            },
            events=(
                EpsilonDeltaEvent(
                    self.epsilon / p["releases"], count=p["releases"], label="exponential mechanism (see the guarantee)"
                ),
            ),
        )

    def report(self) -> dict:
        p = self.params
        model = self._model()
        depth, _ = tree_settings(p["tree"], p["depth"], p["cp"], self.n or 1)
        return {
            "model": "sequential linear-Gaussian on the public unit scale",
            "column_order": self.order,
            "parameters": model.names(self.order),
            "tree": p["tree"],
            "tree_depth": depth,
            "cp": p["cp"] if p["tree"] == "paper" else None,
            "synthetic_sets_per_utility": p["m"],
            "mcmc_burn_in": p["burn_in"],
            "mcmc_iterations": p["iterations"],
            "thinning": p["iterations"] // p["releases"],
            "prior": f"N(0, {PRIOR_VARIANCE:g}) on every parameter (variances on the log scale), truncated to "
            f"intercepts {PRIOR_INTERCEPT}, slopes {PRIOR_SLOPE}, log-variances "
            f"({PRIOR_LOG_VAR[0]:.2f}, {PRIOR_LOG_VAR[1]:.2f}) on the unit scale",
            "n": self.n,
        }

    def summary(self) -> dict[str, Any]:
        return {"thetas": np.asarray(self.thetas, dtype=np.float64), "order": list(self.order), "n": self.n}

    def _load_summary(self, summary: dict[str, Any]) -> None:
        order = [str(c) for c in summary["order"]]
        if sorted(order) != sorted(self.schema.names):
            raise ValueError(f"summary column order {order} does not match the schema's columns {self.schema.names}")
        self.order = order
        self.n = int(summary["n"]) if summary.get("n") is not None else None
        thetas = np.asarray(summary["thetas"], dtype=np.float64)
        if thetas.ndim != 2 or thetas.shape[1] != self._model().n_params:
            raise ValueError(f"summary thetas have shape {thetas.shape}, expected (l, {self._model().n_params})")
        self.thetas = thetas
