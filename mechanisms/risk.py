"""Privacy risk report: attack a mechanism the way an adversary would, next to its claimed epsilon.

THIS MODULE IS NOT PRIVATE. It reads the raw (prepared) table many times and its results are for the
data steward only, like :mod:`mechanisms.evaluation`. It never changes a release; it refits the SAME
mechanism with the SAME parameters and epsilon on random subsets of the table and attacks those refits.

Membership inference (``runs`` refits)
    The table (at most ``max_rows`` records, a random sample beyond) is split once into a reference
    part (``REFERENCE_FRACTION``: population data the attacker is granted, never trained on, never a
    target) and a pool. The ``2 * canary_pairs`` most VULNERABLE records of the pool (rarest public
    cells, :func:`vulnerability`) form random pairs, the targets; every other pool record is in every
    training table, and the attacker is told them (the informed attacker of DP auditing: the guarantee
    holds against it too). In each run an independent fair coin per pair puts one of its two records
    in: flipping a coin replaces one record by another, exactly dpportal's neighbouring relation
    (replace one record, n public). The mechanism is fitted on the training table and samples
    ``sample_factor`` times as many synthetic rows (the guarantee covers any number of draws). Each
    attack scores every target (higher: "member"):

    * ``dcr``: minus the distance to the closest synthetic record, on the public encoding (numeric
      columns scaled to [0, 1] on the schema's bounds, categorical columns 0/1 mismatch; the mean over
      columns, Gower's distance);
    * ``density_ratio``: DOMIAS (van Breugel et al., AISTATS 2023): the synthetic density over the
      reference density at the target, both kernel density estimates with the same Gower distance
      (exp(-distance / h), h the median distance of targets to their closest reference record);
    * ``marginal_ratio``: the same ratio with histogram densities on the public cells, one column at a
      time (columns taken as independent);
    * ``cell_count``: the informed attacker on the marginals the refit measured (every one-way
      marginal, MST's tree edges, AIM's cliques: :func:`measured_marginals`): the synthetic counts in
      each target's cells against the counts it expects from the known records
      (:func:`cell_count_scores`);
    * ``shadow_model``: a classifier on the four scores above, trained on a shadow game the attacker
      plays on its own reference records with one more refit (:func:`shadow_classifier`).

    Reported per attack: ROC AUC, TPR at FPR 1% and 0.1% (pooled over runs), the membership
    advantage (the largest TPR - FPR), and an empirical epsilon LOWER bound: on the pairs whose two
    scores differ most (a few guess counts, Bonferroni-corrected) the attacker guesses that the
    higher-scored record is the member, and :func:`mechanisms.audit.guessing_epsilon_lower_bound`
    turns the correct guesses into a bound with a one-sided Clopper-Pearson interval at ``confidence``.
    With k guesses all right the bound is only about ln(k / 3) at 95%: many refits (``runs``) make
    many guesses, and a time budget limits them.

Implementation check (white-box)
    The same game, attacked through the refit's NOISY MEASUREMENTS instead of its synthetic rows
    (:meth:`Mechanism.noisy_queries`: baseline's noisy histograms, MST's and AIM's noisy marginals,
    DP-MERF's noisy mean embedding and class counts): the informed attacker's log-likelihood ratio
    per pair (:func:`query_scores`). The measurements are the mechanism's DP output before any
    post-processing and never leave the worker, so this is no attack an analyst could run; it is the
    strongest test of the claim the platform can make, and the one that catches noise smaller than the
    proof needs (the rows blur it: a broken DP-MERF is invisible in its samples). After the attacked
    refits, measure-only refits (:meth:`Mechanism.measure`: DP-MERF skips its training, MST its final
    estimate) add coins while ``CHECK_SHARE`` of the time budget lasts. Mechanisms whose summary is not
    a set of noisy linear queries report the check as not available.

Attribute inference (the Anonymeter method, Giomi et al., PoPETs 2023)
    On the first run's synthetic table: the attacker knows every column of a target but a secret one
    and guesses the secret from the closest synthetic record on the others. Success on members
    (training records) against success on the reference records (never trained on: the control);
    the risk is (members - control) / (1 - control) with a 95% interval from Wilson intervals. The same
    for linkability: two halves of a target's columns are linked when their closest synthetic records
    coincide; singling out: predicates read off the synthetic table that hold for exactly one record.
    Anonymeter itself (PyPI ``anonymeter`` 1.1.0) needs numpy < 1.27 (pip would downgrade this
    project's numpy 2.4 and add numba and polars); this is a small reimplementation of its three
    evaluators' core (success on members vs. on control records, its risk formula, Wilson intervals).

Positive control
    The same attacks against releases that are not private: the members themselves (a "release" that
    copies its input), and the mechanism with its noise switched off
    (:class:`~mechanisms.noise.ZeroNoise`). When the best control AUC is below ``CONTROL_MIN_AUC`` the
    attacks are too weak on this table to support a verdict, and the report says so.

Randomness: splits and coins come from ``noise.private_rng`` (never published), refits draw through
``noise``; a seeded Noise makes the whole report reproducible (tests, benchmarks).
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable

import numpy as np
import pandas as pd
from scipy.special import gammaln

from . import registry
from .audit import guessing_epsilon_lower_bound
from .noise import Noise, ZeroNoise
from .runner import build
from .schema import Schema
from .source import TableSource

ProgressFn = Callable[[float, str], None]

MIN_ROWS = 50  # fewer records: the halves are too small for any attack to say anything
MAX_ROWS = 10_000  # records used (a random sample beyond): refits and distances stay within the time goal
REFERENCE_FRACTION = 0.25  # records set aside as the attacker's population sample (DOMIAS, control)
# Target pairs per run (the most vulnerable records): few, so that their coins blur each other little
# (100 pairs halved the bound on the broken MST: docs/benchmarks/risk.md).
DEFAULT_CANARY_PAIRS = 50
SAMPLE_FACTOR = 100  # synthetic rows drawn per refit, in multiples of the training size (for the counts)
MAX_SYNTHETIC_ROWS = 400_000  # ... and at most this many
DEFAULT_RUNS = 2  # refits (the web app: DPPORTAL_RISK_RUNS); a time budget may skip some
DEFAULT_CONFIDENCE = 0.95
FPR_LEVELS = (0.01, 0.001)
GUESS_FRACTIONS = (0.02, 0.1, 0.5, 1.0)  # share of target pairs the attacker guesses on (abstaining on the rest)
CONTROL_MIN_AUC = 0.9
CHECK_RUNS_PER_RUN = 10  # implementation-check refits (noisy queries alone) per attacked refit, budget allowing
CHECK_PAIRS_FACTOR = 4  # the check's refits have up to this many times the target pairs (no rows to blur)
CHECK_CANDIDATES = 4  # ... chosen among this many times as many of the most vulnerable records
CHECK_MAX_COS = 0.3  # the check's pairs: largest |cosine| between two pairs' contribution differences
CHECK_SHARE = 0.4  # of a time budget, left to the implementation check when the mechanism offers it
MAX_SECRETS = 5  # attribute inference: secret columns tried (categorical first, then numeric)
CHUNK_CELLS = 2_000_000  # distance matrix entries per block


# =================================================================================================
# Distances and scores
# =================================================================================================


class Encoding:
    """The public encoding of a prepared table for Gower distances: unit-scaled numerics, codes."""

    def __init__(self, schema: Schema):
        self.schema = schema
        self.numeric = np.array([c.is_numeric for c in schema.kept], dtype=bool)

    def encode(self, frame: pd.DataFrame) -> np.ndarray:
        X = self.schema.to_unit(frame)
        if self.numeric.any():
            X[:, self.numeric] = np.clip(X[:, self.numeric], 0.0, 1.0)
        return X


def _blocks(n_rows: int, n_other: int):
    step = max(1, CHUNK_CELLS // max(n_other, 1))
    for start in range(0, n_rows, step):
        yield slice(start, min(start + step, n_rows))


def gower_block(A: np.ndarray, B: np.ndarray, numeric: np.ndarray, columns: np.ndarray | None = None) -> np.ndarray:
    """Mean per-column distance between every row of A and every row of B (|a - b| for numeric
    columns on the unit scale, 0/1 mismatch for categorical codes), over ``columns`` (default all)."""
    cols = np.arange(A.shape[1]) if columns is None else np.asarray(columns)
    D = np.zeros((A.shape[0], B.shape[0]))
    for j in cols:
        a, b = A[:, j][:, None], B[:, j][None, :]
        D += np.abs(a - b) if numeric[j] else (a != b)
    return D / max(len(cols), 1)


def closest(A: np.ndarray, B: np.ndarray, numeric: np.ndarray, columns=None) -> tuple[np.ndarray, np.ndarray]:
    """Distance from each row of A to its closest row of B, and that row's index."""
    dist = np.empty(len(A))
    idx = np.empty(len(A), dtype=np.int64)
    for sl in _blocks(len(A), len(B)):
        D = gower_block(A[sl], B, numeric, columns)
        idx[sl] = D.argmin(axis=1)
        dist[sl] = D[np.arange(D.shape[0]), idx[sl]]
    return dist, idx


def _lse_mean(Z: np.ndarray) -> np.ndarray:
    m = Z.max(axis=1, keepdims=True)
    return m[:, 0] + np.log(np.exp(Z - m).mean(axis=1))


def attack_scores(
    targets: np.ndarray, synthetic: np.ndarray, reference: np.ndarray, numeric: np.ndarray
) -> dict[str, np.ndarray]:
    """Membership scores of ``targets`` (higher: more likely a member) for each attack. One distance
    pass per table: the reference's gives the bandwidth and the reference density, the synthetic
    table's gives both the closest distance and the synthetic density."""
    ref_dist = np.empty(len(targets))
    log_ref = np.empty(len(targets))
    blocks = []
    for sl in _blocks(len(targets), len(reference)):
        D = gower_block(targets[sl], reference, numeric)
        ref_dist[sl] = D.min(axis=1)
        blocks.append((sl, D))
    h = max(float(np.median(ref_dist)), 0.01)
    for sl, D in blocks:
        log_ref[sl] = _lse_mean(-D / h)
    del blocks
    dcr = np.empty(len(targets))
    log_syn = np.empty(len(targets))
    for sl in _blocks(len(targets), len(synthetic)):
        D = gower_block(targets[sl], synthetic, numeric)
        dcr[sl] = D.min(axis=1)
        log_syn[sl] = _lse_mean(-D / h)
    return {"dcr": -dcr, "density_ratio": log_syn - log_ref}


def marginal_scores(
    target_cells: np.ndarray,
    synthetic_cells: np.ndarray,
    reference_cells: np.ndarray,
    sizes: list[int],
    alpha: float = 0.1,
) -> np.ndarray:
    """The density ratio with histogram densities on the PUBLIC cells (each column's categories or
    public bins), columns treated as independent: sum over columns of log(synthetic share of the
    target's cell / reference share), shares smoothed with ``alpha`` pseudo-counts. Rare values that
    a release copies from its input (a cell seen once) weigh most."""
    score = np.zeros(len(target_cells))
    for j, k in enumerate(sizes):
        syn = (np.bincount(synthetic_cells[:, j], minlength=k) + alpha) / (len(synthetic_cells) + alpha * k)
        ref = (np.bincount(reference_cells[:, j], minlength=k) + alpha) / (len(reference_cells) + alpha * k)
        score += np.log(syn[target_cells[:, j]]) - np.log(ref[target_cells[:, j]])
    return score


def vulnerability(cells: np.ndarray, population_cells: np.ndarray, sizes: list[int]) -> np.ndarray:
    """How much each record stands out: the self-information of its public cells, columns taken as
    independent (-sum over columns of log share of its cell in ``population_cells``). Records in rare
    cells (outliers) score highest: a release moves most with them (Carlini et al. 2022; Meeus et al.
    2023 on vulnerable records), so the membership game spends its coins on them."""
    score = np.zeros(len(cells))
    for j, k in enumerate(sizes):
        share = (np.bincount(population_cells[:, j], minlength=k) + 0.5) / (len(population_cells) + 0.5 * k)
        score -= np.log(share[cells[:, j]])
    return score


MAX_MARGINAL_CELLS = 1_000_000  # marginals larger than this are left out of the cell-count attack
CELL_ROUNDS = 1  # interference-cancellation rounds (more did not help on adult: over-confident feedback)
HEAVY_TAILS = 1.5  # excess kurtosis of a marginal's residuals above which they are taken as Laplace
CELL_CLIP = 6.0  # log-odds cap when a round's estimate feeds the next (damps over-confidence)


def measured_marginals(mech, names: list[str]) -> list[tuple[int, ...]]:
    """The marginals a cell-based mechanism measured (public structure of its fitted model): every
    one-way marginal, plus MST's tree edges and AIM's selected cliques when the refit has them."""
    index = {n: j for j, n in enumerate(names)}
    out = [(j,) for j in range(len(names))]
    extra = list(getattr(mech, "edges", None) or [])
    extra += [c for c, _ in (getattr(mech, "selected", None) or []) if isinstance(c, (list, tuple))]
    for clique in extra:
        if isinstance(clique, (list, tuple)) and len(clique) > 1 and all(c in index for c in clique):
            m = tuple(sorted(index[c] for c in clique))
            if m not in out:
                out.append(m)
    return out


def cell_count_scores(
    cells_a: np.ndarray,
    cells_b: np.ndarray,
    fixed_cells: np.ndarray,
    synthetic_cells: np.ndarray,
    n_train: int,
    marginals: list[tuple[int, ...]],
    sizes: list[int],
    rounds: int = CELL_ROUNDS,
) -> np.ndarray:
    """The informed attacker's statistic per pair (a, b): it knows every training record but which one
    of each pair is in, so it knows each cell's count up to the coins. On every measured marginal it
    compares the synthetic count in a's cell and in b's cell (scaled to the training size) with the
    count it expects, and sums (residual at a - residual at b) / their variance over the marginals:
    T, the log-likelihood ratio of "a is in" up to a factor 2 under a Gaussian approximation. The
    variance holds the other pairs' coins, the noise (estimated from all cells) and the sampling
    error. The expectation starts at half a record per target; later rounds put each other pair at its
    current probability (interference cancellation), so records in common cells also tell."""
    scale = n_train / max(len(synthetic_cells), 1)
    flat: list[tuple] = []
    for m in marginals:
        dims = [int(sizes[j]) for j in m]
        total = int(np.prod(dims))
        if total > MAX_MARGINAL_CELLS:
            continue

        def f(c, m=m, dims=dims):
            return np.ravel_multi_index(tuple(np.clip(c[:, j], 0, sizes[j] - 1) for j in m), dims)

        fa, fb = f(cells_a), f(cells_b)
        disc = fa != fb
        if not disc.any():
            continue
        fixed_count = (np.bincount(f(fixed_cells), minlength=total) + np.bincount(fa[~disc], minlength=total)).astype(
            float
        )
        observed = np.bincount(f(synthetic_cells), minlength=total) * scale
        flat.append((total, fa, fb, disc, fixed_count, observed))
    T = np.zeros(len(cells_a))
    for _ in range(max(rounds, 1)):
        p = 1.0 / (1.0 + np.exp(-np.clip(2 * T, -CELL_CLIP, CELL_CLIP)))  # P(a is in) so far
        new = np.zeros(len(cells_a))
        for total, fa, fb, disc, fixed_count, observed in flat:
            a, b, pd_ = fa[disc], fb[disc], p[disc]
            expected = (
                fixed_count
                + np.bincount(a, weights=pd_, minlength=total)
                + np.bincount(b, weights=1 - pd_, minlength=total)
            )
            pv = pd_ * (1 - pd_)
            coin_var = np.bincount(a, weights=pv, minlength=total) + np.bincount(b, weights=pv, minlength=total)
            sampling = (expected + 1.0) * scale
            resid = observed - expected
            touched = expected > 0
            noise_var = max(float(np.mean(resid[touched] ** 2 - coin_var[touched] - sampling[touched])), 0.25)
            # this pair's own coin is the signal: its expectation and variance are taken back out
            ra = resid[a] + pd_ - 0.5
            rb = resid[b] - pd_ + 0.5
            var = coin_var[a] + coin_var[b] - 2 * pv + sampling[a] + sampling[b] + 2 * noise_var
            z = resid[touched] / np.sqrt(coin_var[touched] + sampling[touched] + noise_var)
            if float(np.mean(z**4) / max(np.mean(z**2) ** 2, 1e-12)) - 3.0 > HEAVY_TAILS:
                # Laplace-like residuals: the likelihood ratio of a shift is a clipped difference
                va = coin_var[a] - pv + sampling[a] + noise_var
                vb = coin_var[b] - pv + sampling[b] + noise_var
                new[disc] += 0.5 * (np.clip(2 * ra, -1, 1) / np.sqrt(va / 2) - np.clip(2 * rb, -1, 1) / np.sqrt(vb / 2))
            else:
                new[disc] += (ra - rb) / var
        T = new
    return T


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


def singling_out(
    members: np.ndarray,
    control: np.ndarray,
    synthetic: np.ndarray,
    rng: np.random.Generator,
    n_queries: int = 500,
    n_cols: int = 3,
) -> dict:
    """Anonymeter's singling-out evaluator on the public cells: predicates read off the synthetic table
    (a value seen once in a column; a synthetic record's cells on ``n_cols`` random columns that match
    no other synthetic record) single out a target when exactly one record of the table holds them.
    Success on the members against the control records (as many members as control records, so the
    two tables have one size); the same risk formula as the others."""
    n = min(len(members), len(control))
    mem = members[rng.choice(len(members), n, replace=False)]
    ctl = control[rng.choice(len(control), n, replace=False)]
    d = synthetic.shape[1]
    queries: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    for j in range(d):
        vals, counts = np.unique(synthetic[:, j], return_counts=True)
        queries += [((j,), (int(v),)) for v in vals[counts == 1]]
    k = min(n_cols, d)
    for i in rng.permutation(len(synthetic)):
        if len(queries) >= 2 * n_queries:
            break
        cols = tuple(sorted(rng.choice(d, k, replace=False).tolist()))
        vals = tuple(int(synthetic[i, j]) for j in cols)
        if np.sum(np.all(synthetic[:, cols] == vals, axis=1)) == 1:
            queries.append((cols, vals))
    if not queries:
        return {**anonymeter_risk(0, 0, 0), "queries": 0}
    pick = rng.choice(len(queries), min(n_queries, len(queries)), replace=False)

    def singled(table: np.ndarray) -> int:
        return sum(int(np.sum(np.all(table[:, list(queries[q][0])] == queries[q][1], axis=1)) == 1) for q in pick)

    return {**anonymeter_risk(singled(mem), singled(ctl), len(pick)), "queries": int(len(pick))}


def shadow_classifier(features: list[tuple[np.ndarray, np.ndarray]]):
    """A logistic regression on per-pair feature differences (the other attacks' scores of a minus
    those of b) fitted on a shadow game, where the attacker knows the coins because it tossed them
    (Shokri et al. 2017; Stadler et al. 2022 for synthetic data). Returns a function from a run's
    features to per-target scores, or None when the shadow game has a single class."""
    from sklearn.linear_model import LogisticRegression

    X = np.concatenate([f for f, _ in features])
    y = np.concatenate([lab for _, lab in features])
    if len(np.unique(y)) < 2:
        return None
    sd = X.std(axis=0)
    sd[sd == 0] = 1.0
    clf = LogisticRegression(fit_intercept=False, C=1.0, max_iter=1000).fit(X / sd, y)

    def score(F: np.ndarray) -> np.ndarray:
        t = clf.decision_function(F / sd)
        return np.column_stack([t / 2, -t / 2]).ravel()

    return score


def pair_features(scores: dict[str, np.ndarray]) -> np.ndarray:
    """Per pair: each attack's score of the first record minus that of the second."""
    return np.column_stack([scores[a].reshape(-1, 2) @ np.array([1.0, -1.0]) for a in BASE_ATTACKS])


BASE_ATTACKS = ("dcr", "density_ratio", "marginal_ratio", "cell_count")
WHITE_BOX = "measurements"  # the implementation check: attacks the fit's noisy queries, not its rows
ATTACKS = BASE_ATTACKS + ("shadow_model", WHITE_BOX)
ATTACK_TITLES = {
    WHITE_BOX: "implementation check: the noisy measurements themselves (never published)",
    "dcr": "distance to the closest synthetic record",
    "cell_count": "informed attacker: counts on the measured marginals' cells",
    "shadow_model": "shadow-model classifier on the other attacks' scores",
    "marginal_ratio": "density ratio on public cells, one column at a time",
    "density_ratio": "density ratio, synthetic over reference (DOMIAS)",
}


# =================================================================================================
# Metrics
# =================================================================================================


def roc_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve (ties count one half), by ranks."""
    from scipy.stats import rankdata

    labels = np.asarray(labels, dtype=bool)
    pos, neg = int(labels.sum()), int((~labels).sum())
    if pos == 0 or neg == 0:
        return float("nan")
    ranks = rankdata(scores)
    return float((ranks[labels].sum() - pos * (pos + 1) / 2) / (pos * neg))


def roc_points(labels: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """FPR and TPR at every threshold (ties kept together), from (0, 0) to (1, 1)."""
    labels = np.asarray(labels, dtype=bool)
    order = np.argsort(-np.asarray(scores, dtype=float), kind="stable")
    s, y = np.asarray(scores, dtype=float)[order], labels[order]
    last = np.r_[np.nonzero(np.diff(s))[0], len(s) - 1]  # last index of each tie group
    tp, fp = np.cumsum(y)[last], np.cumsum(~y)[last]
    P, N = max(int(y.sum()), 1), max(int((~y).sum()), 1)
    return np.r_[0.0, fp / N], np.r_[0.0, tp / P]


def tpr_at_fpr(labels, scores, level: float) -> float:
    fpr, tpr = roc_points(labels, scores)
    ok = fpr <= level + 1e-12
    return float(tpr[ok].max()) if ok.any() else 0.0


def advantage(labels, scores) -> float:
    """The membership advantage: the largest TPR - FPR over thresholds (0 for a coin flip)."""
    fpr, tpr = roc_points(labels, scores)
    return float(max(0.0, np.max(tpr - fpr)))


def guesses(labels: np.ndarray, scores: np.ndarray, fraction: float) -> tuple[int, int]:
    """(correct, made) over PAIRS of targets: consecutive targets (2i, 2i+1) are a pair of which a coin
    put exactly one in the training table. For the ``fraction`` of pairs whose two scores differ most
    the attacker guesses that the higher-scored one is the member; it abstains on the others (the
    order and the ties are fixed before the labels are seen)."""
    s = np.asarray(scores, dtype=float).reshape(-1, 2)
    first_in = np.asarray(labels, dtype=bool).reshape(-1, 2)[:, 0]
    d = s[:, 0] - s[:, 1]
    k = min(max(1, int(round(len(d) * fraction))), len(d))
    pick = np.argsort(-np.abs(d), kind="stable")[:k]
    return int(np.sum((d[pick] > 0) == first_in[pick])), int(k)


def summarise_attack(
    name: str, runs: list[tuple[np.ndarray, np.ndarray]], *, confidence: float, delta: float
) -> dict[str, Any]:
    """One attack's figures from its (labels, scores) per run."""
    labels = np.concatenate([r[0] for r in runs])
    scores = np.concatenate([r[1] for r in runs])
    alpha = (1.0 - confidence) / len(GUESS_FRACTIONS)  # Bonferroni over the guess counts tried
    best = {"epsilon": 0.0, "fraction": None, "correct": 0, "guesses": 0}
    for f in GUESS_FRACTIONS:
        correct = made = 0
        for lab, sc in runs:
            c, m = guesses(lab, sc, f)
            correct, made = correct + c, made + m
        eps = guessing_epsilon_lower_bound(correct, made, alpha=alpha, delta=delta)
        if eps > best["epsilon"] or best["fraction"] is None:
            best = {"epsilon": eps, "fraction": f, "correct": correct, "guesses": made}
    auc = float(np.mean([roc_auc(lab, sc) for lab, sc in runs]))
    return {
        "name": name,
        "title": ATTACK_TITLES.get(name, name),
        "sees": "noisy measurements" if name == WHITE_BOX else "synthetic rows",
        "auc": _r(auc),
        "tpr_at_fpr": {f"{lvl:g}": _r(tpr_at_fpr(labels, scores, lvl)) for lvl in FPR_LEVELS},
        "advantage": _r(advantage(labels, scores)),
        "epsilon_lower_bound": _r(best["epsilon"]),
        "guesses": {"correct": best["correct"], "made": best["guesses"], "fraction": best["fraction"]},
        "targets": int(len(labels)),
    }


def _r(x: float, digits: int = 4):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return None
    if isinstance(x, float) and math.isinf(x):
        return "inf"
    return round(float(x), digits)


def theoretical_advantage(epsilon: float, delta: float = 0.0) -> float:
    """The largest membership advantage (TPR - FPR) an (epsilon, delta)-DP release allows a balanced
    attacker: (e^eps - 1) / (e^eps + 1) + delta (Yeom et al. 2018; Humphries et al. 2023)."""
    if epsilon > 700:
        return 1.0
    return min(1.0, (math.exp(epsilon) - 1) / (math.exp(epsilon) + 1) + 2 * delta / (math.exp(epsilon) + 1))


# =================================================================================================
# Attribute inference (Anonymeter's method)
# =================================================================================================


def attribute_inference(
    schema: Schema,
    members: np.ndarray,
    control: np.ndarray,
    synthetic: np.ndarray,
    numeric: np.ndarray,
    rng: np.random.Generator,
) -> list[dict]:
    """Per secret column: success of the nearest-synthetic-record guess on members and on control
    records, the random-guess baseline, and the risk (members - control) / (1 - control)."""
    kept = schema.kept
    order = [j for j, c in enumerate(kept) if not c.is_numeric] + [j for j, c in enumerate(kept) if c.is_numeric]
    out = []
    n_t = min(len(members), len(control), 500)
    m_idx = rng.choice(len(members), n_t, replace=False)
    c_idx = rng.choice(len(control), n_t, replace=False)
    for j in order[:MAX_SECRETS]:
        if len(kept) < 2:
            break
        others = np.array([k for k in range(len(kept)) if k != j])

        def hit(rows: np.ndarray) -> np.ndarray:
            _, nn = closest(rows, synthetic, numeric, others)
            guess = synthetic[nn, j]
            if numeric[j]:
                # within 5% of the public range (Anonymeter: 5% of the true value; the range treats values
                # near 0 like the others)
                return np.abs(guess - rows[:, j]) <= 0.05
            return guess == rows[:, j]

        def baseline(rows: np.ndarray) -> np.ndarray:
            guess = synthetic[rng.integers(0, len(synthetic), len(rows)), j]
            if numeric[j]:
                return np.abs(guess - rows[:, j]) <= 0.05
            return guess == rows[:, j]

        m_hits, c_hits = int(hit(members[m_idx]).sum()), int(hit(control[c_idx]).sum())
        b_rate = float(baseline(members[m_idx]).mean())
        out.append({"secret": kept[j].name, **anonymeter_risk(m_hits, c_hits, n_t), "baseline_rate": _r(b_rate)})
    return out


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float, float]:
    """The Wilson score interval of a success rate k/n: (centre, low, high), as Anonymeter reports."""
    if n <= 0:
        return 0.0, 0.0, 1.0
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return centre, max(0.0, centre - half), min(1.0, centre + half)


def anonymeter_risk(attack_hits: int, control_hits: int, n: int) -> dict:
    """Anonymeter's risk (attack - control) / (1 - control) from Wilson-corrected rates, with a 95%
    interval from the rates' intervals (attack low against control high, and the reverse)."""
    a, a_lo, a_hi = wilson(attack_hits, n)
    c, c_lo, c_hi = wilson(control_hits, n)

    def r(x, y):
        return max(0.0, (x - y) / (1 - y)) if y < 1 else 0.0

    return {
        "attack_rate": _r(attack_hits / n if n else 0.0),
        "control_rate": _r(control_hits / n if n else 0.0),
        "risk": _r(r(a, c)),
        "risk_ci": [_r(r(a_lo, c_hi)), _r(min(1.0, r(a_hi, c_lo)))],
        "targets": int(n),
    }


def linkability(
    schema: Schema,
    members: np.ndarray,
    control: np.ndarray,
    synthetic: np.ndarray,
    numeric: np.ndarray,
    rng: np.random.Generator,
    n_neighbors: int = 1,
) -> dict | None:
    """Anonymeter's linkability: the attacker holds two halves of a target's columns from two sources
    and links them when the closest synthetic records on each half coincide (``n_neighbors`` closest
    on each side share one). Success on members against the control records; None under 2 columns."""
    d = members.shape[1]
    if d < 2:
        return None
    cols = rng.permutation(d)
    left, right = np.sort(cols[: d // 2]), np.sort(cols[d // 2 :])
    n_t = min(len(members), len(control), 500)
    m_rows = members[rng.choice(len(members), n_t, replace=False)]
    c_rows = control[rng.choice(len(control), n_t, replace=False)]

    def links(rows: np.ndarray) -> int:
        hits = 0
        for sl in _blocks(len(rows), len(synthetic)):
            a = np.argsort(gower_block(rows[sl], synthetic, numeric, left), axis=1, kind="stable")[:, :n_neighbors]
            b = np.argsort(gower_block(rows[sl], synthetic, numeric, right), axis=1, kind="stable")[:, :n_neighbors]
            hits += sum(bool(set(x) & set(y)) for x, y in zip(a.tolist(), b.tolist()))
        return hits

    out = anonymeter_risk(links(m_rows), links(c_rows), n_t)
    out["columns"] = [[schema.kept[j].name for j in left], [schema.kept[j].name for j in right]]
    return out


# =================================================================================================
# The report
# =================================================================================================


def kept_schema(schema: Schema) -> Schema:
    """The schema restricted to its kept columns (refits read an already prepared frame)."""
    d = schema.to_dict()
    d["columns"] = [c for c in d["columns"] if c.get("kind") != "excluded"]
    d["draft"] = False
    return Schema.from_dict(d)


def _refit(
    name: str,
    schema: Schema,
    members: pd.DataFrame,
    *,
    epsilon,
    delta,
    params,
    noise: Noise,
    progress: ProgressFn | None = None,
    rows: int | None = None,
):
    """The mechanism fitted on ``members`` and ``rows`` synthetic rows from it (default: as many as
    members); returns (mechanism, synthetic frame)."""
    mech = build(
        name, schema, epsilon=epsilon, delta=delta, params=params, noise=noise, n=len(members), progress=progress
    )
    mech.fit(TableSource(schema, frame=members.reset_index(drop=True)))
    return mech, mech.sample(rows or len(members))


def synthetic_cells(schema: Schema, synthetic: pd.DataFrame, prepared_head: pd.DataFrame) -> np.ndarray:
    """The public cells of every synthetic row. A mechanism's rows are already in the schema's domain, so
    the cells are read off them directly (preparing 100x the training size costs more than the
    refit); when the prepared first rows give other cells, everything goes through prepare."""
    head = schema.to_cells(prepared_head)
    try:
        cells = schema.to_cells(synthetic)
        if cells.shape[0] == len(synthetic) and np.array_equal(cells[: len(head)], head):
            return cells
    except (ValueError, TypeError, KeyError):
        pass
    return schema.to_cells(schema.prepare(synthetic))


def membership_game(
    cells: np.ndarray,
    pool: np.ndarray,
    population_cells: np.ndarray,
    sizes: list[int],
    n_pairs: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """(pairs, fixed): the ``2 * n_pairs`` most vulnerable records of ``pool`` in random pairs (the
    targets: a coin per pair and run puts one of the two in) and the other records of the pool, in
    every training table (the attacker is told them: DP's guarantee holds against that attacker too)."""
    v = vulnerability(cells[pool], population_cells, sizes)
    order = np.argsort(-v, kind="stable")
    k = min(n_pairs, len(pool) // 2)
    targets = rng.permutation(pool[order[: 2 * k]])
    return targets.reshape(-1, 2), np.sort(pool[order[2 * k :]])


def _refit_failed(exc: Exception, claim: dict) -> dict:
    first = (str(exc).splitlines() or [type(exc).__name__])[0]
    return not_computable(f"the mechanism could not be refitted on part of the table: {first}", **claim)


def not_computable(reason: str, **extra) -> dict:
    return {"status": "not computable", "reason": reason, "attacks": [], "control": [], **extra}


def risk_report(
    schema: Schema,
    prepared: pd.DataFrame | None,
    mechanism: str,
    *,
    epsilon: float,
    delta: float = 0.0,
    params: dict | None = None,
    runs: int = DEFAULT_RUNS,
    noise: Noise | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
    noise_off_control: bool = True,
    max_rows: int = MAX_ROWS,
    progress: ProgressFn | None = None,
    release_seconds: float | None = None,
    attack_noise: Noise | None = None,
    time_budget: float | None = None,
    canary_pairs: int = DEFAULT_CANARY_PAIRS,
    sample_factor: float = SAMPLE_FACTOR,
    shadow: bool = True,
    check_runs: int | None = None,
) -> dict[str, Any]:
    """The risk report of ``mechanism`` at (``epsilon``, ``delta``) with ``params`` on ``prepared``
    (the table as :meth:`Schema.prepare` returns it). Never raises for bad input: a report with
    status "not computable" and the reason instead.

    ``attack_noise`` replaces the noise of the attacked refits (tests and benchmarks: a broken
    variant such as :class:`~mechanisms.noise.ScaledNoise`); the claim stays ``epsilon``.

    ``time_budget`` (seconds): refits after the first are skipped when the slowest refit-and-attack
    step so far would end past it (the web app passes 3x the release's own time); the report lists
    what it skipped.

    ``check_runs``: implementation-check refits after those (:meth:`Mechanism.measure`, the noisy
    queries alone), default ``CHECK_RUNS_PER_RUN`` x ``runs``, fewer when the time budget ends first."""
    t0 = time.perf_counter()
    step = progress or (lambda f, s: None)
    claim = {
        "claimed_epsilon": epsilon,
        "claimed_delta": delta or 0.0,
        "mechanism": mechanism,
        "confidence": confidence,
    }
    try:
        epsilon, delta = float(epsilon), float(delta or 0.0)
        claim.update(claimed_epsilon=epsilon, claimed_delta=delta)
        if not (epsilon > 0 and math.isfinite(epsilon)):
            return not_computable(f"the claimed epsilon must be positive and finite, got {epsilon!r}", **claim)
        if prepared is None or len(prepared) == 0:
            return not_computable("the release has no data to attack (no table was given)", **claim)
        if len(prepared) < MIN_ROWS:
            return not_computable(
                f"the table has {len(prepared)} records: at least {MIN_ROWS} are needed to "
                f"split it into members, non-members and a reference",
                **claim,
            )
        if not 0 < confidence < 1:
            return not_computable(f"confidence must be between 0 and 1, got {confidence!r}", **claim)
        runs = int(runs)
        if runs < 1:
            return not_computable(f"runs must be at least 1, got {runs}", **claim)
        if int(canary_pairs) < 1:
            return not_computable(f"target pairs must be at least 1, got {canary_pairs}", **claim)
        if time_budget is not None and not time_budget >= 0:  # 0: the first refit only
            return not_computable(f"the time budget must be 0 or more seconds, got {time_budget!r}", **claim)
        kschema = kept_schema(schema)
        missing = [c for c in kschema.names if c not in prepared.columns]
        if missing:
            return not_computable(f"the table lacks column(s) {missing} of the schema", **claim)
        cls = registry.get(mechanism)
        cls.check_schema(kschema)
        if not cls.requires_delta(cls.validate_params(dict(params or {}), kschema)):
            delta = 0.0  # a pure-DP configuration: any delta given is not spent, nor claimed
            claim["claimed_delta"] = 0.0
    except ValueError as exc:
        return not_computable(str(exc).splitlines()[0], **claim)

    noise = noise if noise is not None else Noise.secure_backend()
    rng = noise.private_rng
    frame = prepared[kschema.names].reset_index(drop=True)
    rows_total = len(frame)
    if len(frame) > max_rows:
        frame = frame.iloc[np.sort(rng.choice(len(frame), max_rows, replace=False))].reset_index(drop=True)
    enc = Encoding(kschema)
    X = enc.encode(frame)
    C = kschema.to_cells(frame)
    sizes = kschema.cell_sizes
    perm = rng.permutation(len(frame))
    n_ref = max(int(round(len(frame) * REFERENCE_FRACTION)), 10)
    ref_idx, pool_idx = perm[:n_ref], perm[n_ref:]
    n_pairs = min(int(canary_pairs), max(len(pool_idx) // 4, 1))
    pairs, fixed = membership_game(C, pool_idx, C, sizes, n_pairs, rng)
    n_train = len(fixed) + len(pairs)
    reference = X[ref_idx]
    # the shadow game: the same game played by the attacker on its own reference records
    s_perm = rng.permutation(ref_idx)
    s_nref = max(len(s_perm) // 4, 5)
    s_ref = s_perm[:s_nref]
    s_pairs, s_fixed = membership_game(
        C, s_perm[s_nref:], C[ref_idx], sizes, min(n_pairs, max((len(s_perm) - s_nref) // 4, 1)), rng
    )
    syn_rows = int(min(max(sample_factor, 1) * n_train, max(MAX_SYNTHETIC_ROWS, n_train)))

    # the first private refit, then the shadow refit, the noise-off control and the other private
    # refits; with a time budget, a refit that would likely end past it is skipped (the first always runs)
    sequence = (
        ["private"]
        + (["shadow"] if shadow else [])
        + (["noise off"] if noise_off_control else [])
        + ["private"] * (runs - 1)
    )
    noises = {"private": attack_noise or noise, "shadow": attack_noise or noise, "noise off": ZeroNoise(base=noise)}
    total_fits = len(sequence)
    done_fits = 0
    results: dict[str, dict[str, list]] = {
        k: {a: [] for a in BASE_ATTACKS + (WHITE_BOX,)} for k in ("private", "members", "noise off")
    }
    feats: dict[str, list] = {"private": [], "members": [], "noise off": [], "shadow": []}
    attribute = linked = singled = None
    fit_seconds: list[float] = []
    step_seconds: list[float] = []
    check_total = CHECK_RUNS_PER_RUN * runs if check_runs is None else max(int(check_runs), 0)
    first_queries = None
    skipped: list[str] = []

    def play(game_pairs, game_fixed, ref_rows, syn_frame, mech, first_in):
        """Every base attack's per-target scores and the labels, for one refit of one game."""
        train_idx = np.r_[game_fixed, np.where(first_in, game_pairs[:, 0], game_pairs[:, 1])]
        syn_prepared = kschema.prepare(syn_frame.iloc[: len(train_idx)])
        S = enc.encode(syn_prepared)
        S_cells = synthetic_cells(kschema, syn_frame, syn_prepared)
        t_idx = game_pairs.ravel()  # targets in pair order: (first, second) of each pair
        labels = np.column_stack([first_in, ~first_in]).ravel()
        sc = attack_scores(X[t_idx], S, X[ref_rows], enc.numeric)
        sc["marginal_ratio"] = marginal_scores(C[t_idx], S_cells[: len(train_idx)], C[ref_rows], sizes)
        T = cell_count_scores(
            C[game_pairs[:, 0]],
            C[game_pairs[:, 1]],
            C[game_fixed],
            S_cells,
            len(train_idx),
            measured_marginals(mech, kschema.names) if mech is not None else [(j,) for j in range(len(sizes))],
            sizes,
        )
        sc["cell_count"] = np.column_stack([T / 2, -T / 2]).ravel()
        queries = mech.noisy_queries() if mech is not None else None
        if queries:
            Tq = query_scores(queries, C, frame, game_pairs, game_fixed)
            sc[WHITE_BOX] = np.column_stack([Tq / 2, -Tq / 2]).ravel()
        return sc, labels, train_idx, S, S_cells

    try:
        for kind in sequence:
            # with the implementation check available (the first refit's queries), the attacks on rows
            # leave it CHECK_SHARE of the budget
            share = 1.0 - CHECK_SHARE if results["private"][WHITE_BOX] and check_total > 0 else 1.0
            if (
                step_seconds
                and time_budget is not None
                and (time.perf_counter() - t0 + max(step_seconds)) > share * time_budget
            ):
                skipped.append(kind)
                continue
            ts = time.perf_counter()
            game_pairs, game_fixed = (s_pairs, s_fixed) if kind == "shadow" else (pairs, fixed)
            first_in = rng.random(len(game_pairs)) < 0.5
            members_idx = np.r_[game_fixed, np.where(first_in, game_pairs[:, 0], game_pairs[:, 1])]
            base, label = done_fits / (total_fits + 1), f"refit {done_fits + 1}/{total_fits} ({kind})"
            step(base, label)
            tf = time.perf_counter()
            mech, syn = _refit(
                mechanism,
                kschema,
                frame.iloc[members_idx],
                epsilon=epsilon,
                delta=delta,
                params=params,
                noise=noises[kind],  # the fit's progress also lets a cancel stop it
                progress=lambda f, s: step(base + 0.9 * f / (total_fits + 1), label),
                rows=int(min(max(sample_factor, 1) * len(members_idx), max(MAX_SYNTHETIC_ROWS, len(members_idx)))),
            )
            fit_seconds.append(time.perf_counter() - tf)
            done_fits += 1
            if kind == "private" and first_queries is None:
                first_queries = mech.noisy_queries()
            sc, labels, train_idx, S, S_cells = play(
                game_pairs, game_fixed, s_ref if kind == "shadow" else ref_idx, syn, mech, first_in
            )
            feats[kind].append((pair_features(sc), first_in))
            if kind != "shadow":
                for a in BASE_ATTACKS + (WHITE_BOX,):
                    if a in sc:
                        results[kind][a].append((labels, sc[a]))
            if kind == "private" and attribute is None:
                step(done_fits / (total_fits + 1), "attribute inference, linkability, singling out")
                attribute = attribute_inference(kschema, X[train_idx], reference, S, enc.numeric, rng)
                linked = linkability(kschema, X[train_idx], reference, S, enc.numeric, rng)
                singled = singling_out(C[train_idx], C[ref_idx], S_cells[: len(train_idx)], rng)
                # the members themselves as a "release": the positive control, on the same coins
                sc_m, _, _, _, _ = play(pairs, fixed, ref_idx, frame.iloc[train_idx], None, first_in)
                feats["members"].append((pair_features(sc_m), first_in))
                for a in BASE_ATTACKS:
                    results["members"][a].append((labels, sc_m[a]))
            step_seconds.append(time.perf_counter() - ts)
    except (ValueError, RuntimeError, ArithmeticError) as exc:
        return _refit_failed(exc, claim)

    # implementation-check refits: the noisy queries alone (Mechanism.measure: no sampling, no attack
    # on rows), their own pairs (those the queries tell apart best) and coins, while the budget lasts
    check_done, check_seconds = 0, []
    if first_queries and check_total > 0:
        v = vulnerability(C[pool_idx], C, sizes)
        n_check = min(CHECK_PAIRS_FACTOR * len(pairs), max(len(pool_idx) // 4, 1))
        candidates = pool_idx[np.argsort(-v, kind="stable")[: min(CHECK_CANDIDATES * n_check, len(pool_idx))]]
        c_pairs = check_pairs(first_queries, C, frame, candidates, n_check)
        c_fixed = np.setdiff1d(pool_idx, c_pairs.ravel())
        if len(c_pairs) == 0:  # no two candidates the queries tell apart
            check_total = 0
    try:
        while results["private"][WHITE_BOX] and check_done < check_total:
            # the first measure-only refit runs while the budget lasts (its cost is not known before;
            # at most a fit's), later ones when the slowest so far would end within it
            elapsed = time.perf_counter() - t0
            if time_budget is not None and elapsed + max(check_seconds, default=0.0) > time_budget:
                break
            ts = time.perf_counter()
            first_in = rng.random(len(c_pairs)) < 0.5
            members_idx = np.r_[c_fixed, np.where(first_in, c_pairs[:, 0], c_pairs[:, 1])]
            step(
                min(done_fits / (total_fits + 1), 0.96),
                f"implementation check {check_done + 1}" + (f"/{check_total}" if time_budget is None else ""),
            )
            mech = build(
                mechanism,
                kschema,
                n=len(members_idx),
                epsilon=epsilon,
                delta=delta,
                params=params,
                noise=noises["private"],
                progress=lambda f, s: step(min(done_fits / (total_fits + 1), 0.96), s),
            )
            queries = mech.measure(TableSource(kschema, frame=frame.iloc[members_idx].reset_index(drop=True)))
            Tq = query_scores(queries or [], C, frame, c_pairs, c_fixed)
            results["private"][WHITE_BOX].append(
                (np.column_stack([first_in, ~first_in]).ravel(), np.column_stack([Tq / 2, -Tq / 2]).ravel())
            )
            check_done += 1
            check_seconds.append(time.perf_counter() - ts)
    except (ValueError, RuntimeError, ArithmeticError) as exc:
        return _refit_failed(exc, claim)

    clf = shadow_classifier(feats["shadow"]) if feats["shadow"] else None
    if clf is not None:  # trained for this mechanism's game: it has no meaning against the controls
        results["private"]["shadow_model"] = [
            (np.column_stack([lab, ~lab]).ravel(), clf(F)) for F, lab in feats["private"]
        ]

    step(0.97, "summarising")
    done = [a for a in ATTACKS if results["private"].get(a)]
    attacks = [summarise_attack(a, results["private"][a], confidence=confidence, delta=delta) for a in done]
    control = [
        dict(summarise_attack(a, results["members"][a], confidence=confidence, delta=0.0), release="members themselves")
        for a in done
        if results["members"].get(a)
    ]
    if results["noise off"][ATTACKS[0]]:
        control += [
            dict(
                summarise_attack(a, results["noise off"][a], confidence=confidence, delta=0.0),
                release="noise switched off",
            )
            for a in done
            if results["noise off"].get(a)
        ]
    runs_done = len(results["private"][ATTACKS[0]])
    report = {
        "status": "done",
        **claim,
        "delta": delta,
        "params": params or {},
        "runs": runs_done,
        "runs_requested": runs,
        "skipped_for_time": skipped,
        "time_budget_seconds": time_budget,
        "rows_total": rows_total,
        "rows_used": len(frame),
        "reference_rows": int(n_ref),
        "targets_per_run": int(2 * len(pairs)),
        "target_pairs": int(len(pairs)),
        "fixed_members": int(len(fixed)),
        "synthetic_rows_attacked": syn_rows,
        "shadow_game": bool(feats["shadow"]),
        "implementation_check": (
            {"available": True, "reason": "", "refits": runs_done + check_done, "measure_only_refits": check_done}
            if results["private"][WHITE_BOX]
            else {
                "available": False,
                "reason": f"{mechanism} does not describe its noisy measurements as linear queries: "
                "only the attacks on its synthetic rows ran",
            }
        ),
        "attacks": attacks,
        "control": control,
        "attribute_inference": attribute or [],
        "linkability": linked,
        "singling_out": singled,
        "fit_seconds": [round(s, 3) for s in fit_seconds],
    }
    report.update(verdict(report))
    report["seconds"] = round(time.perf_counter() - t0, 3)
    if release_seconds:
        report["release_seconds"] = round(float(release_seconds), 3)
        report["time_ratio"] = round(report["seconds"] / max(float(release_seconds), 1e-9), 2)
    step(1.0, "done")
    return report


def _num(x) -> float:
    return math.inf if x == "inf" else float(x or 0.0)


def verdict(report: dict) -> dict:
    """The control check, the guarantee check and the plain-words summary of a finished report."""
    eps = report["claimed_epsilon"]
    delta = report.get("claimed_delta", 0.0)
    members_aucs = [
        c["auc"] for c in report["control"] if c.get("release") == "members themselves" and c["auc"] is not None
    ]
    control_auc = max(members_aucs) if members_aucs else None
    control_detected = control_auc is not None and control_auc >= CONTROL_MIN_AUC
    lb = max((_num(a["epsilon_lower_bound"]) for a in report["attacks"]), default=0.0)
    failed = lb > eps
    rows = [a for a in report["attacks"] if a.get("sees", "synthetic rows") == "synthetic rows"]
    white = [a for a in report["attacks"] if a.get("sees") == "noisy measurements"]
    adv = max((a["advantage"] or 0.0 for a in rows), default=0.0)
    limit = theoretical_advantage(eps, delta)
    summary = (
        f"An attacker who holds one person's full record can tell whether that person was in the data "
        f"with at most {100 * adv:.1f}% more success than a coin flip (theoretical limit at this "
        f"epsilon: {100 * limit:.1f}%)."
    )
    if white and not failed:
        summary += (
            f" Implementation check: an attacker who also saw the mechanism's noisy measurements (never "
            f"published) gets an empirical lower bound of {_num(white[0]['epsilon_lower_bound']):.2f} on "
            f"epsilon, within the claimed {eps:g}."
        )
    if failed:
        summary += (
            f" FAILURE: the attacks prove epsilon is at least {lb:.2f}, above the claimed {eps:g}: "
            f"the release's guarantee does not hold (an implementation error)."
        )
    if not control_detected:
        summary += (
            f" The attacks did not detect the non-private control (best AUC {control_auc}, needed "
            f"{CONTROL_MIN_AUC}): they are too weak on this table to support a verdict."
        )
    return {
        "control_auc": control_auc,
        "control_detected": control_detected,
        "epsilon_lower_bound": _r(lb),
        "guarantee_failed": failed,
        "empirical_advantage": _r(adv),
        "implementation_check_bound": _r(_num(white[0]["epsilon_lower_bound"])) if white else None,
        "theoretical_advantage": _r(limit),
        "summary": summary,
    }
