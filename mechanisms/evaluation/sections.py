"""The sections of the utility report that need no target: per column, pairs, associations, pMSE, MMD
and the privacy sanity check (NOT PRIVATE: computed from the raw data, steward-only)."""

from __future__ import annotations

import math
import warnings
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import wasserstein_distance
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

from ..schema import Schema
from .encoding import Encoder, sample_note, subsample_rows
from .metrics import sq_dists, association_matrix, gaussian_mmd2, pmse, rff_mmd2, tvd

QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
MAX_PAIRS = 400  # all pairs up to 29 columns; above that a seeded sample keeps the pair stage < ~5 s
PMSE_MAX_ROWS = 10_000  # rows per side for the pMSE classifiers: CART + logit on 20k rows take < 2 s
PMSE_CART_DEPTH = 5  # the PSD 2018 setting (rpart maxdepth 5); in-sample scores as in synthpop
PMSE_CART_MIN_LEAF = 5  # synthpop's minbucket for the CART utility
PMSE_CART_PERMUTATIONS = 5  # label shuffles for the CART null (synthpop uses 50; 5 keeps it cheap)
MMD_EXACT_MAX = 2_000  # exact unbiased MMD^2 up to this many rows per side (2000^2 kernel entries)
MMD_MAX_ROWS = 20_000  # rows per side for the random-feature estimate (sampling sd << feature sd)
MMD_FEATURES = 1_000  # random Fourier features: the estimate's sd is ~1e-3 at this size
DCR_QUERY_ROWS = 2_000  # synthetic / holdout rows whose closest-record distance is computed
DCR_REFERENCE_ROWS = 20_000  # real reference rows they are compared with
DCR_BINS = 30
READ_CHUNK = 2_000  # query rows per block in the nearest-neighbour search (2000 x 20000 floats)


def columns_section(
    schema: Schema, real: pd.DataFrame, syn: pd.DataFrame, rc: np.ndarray, sc: np.ndarray
) -> list[dict]:
    out = []
    for j, c in enumerate(schema.kept):
        k = c.n_cells
        hr = np.bincount(rc[:, j], minlength=k)
        hs = np.bincount(sc[:, j], minlength=k)
        item: dict[str, Any] = {
            "name": c.name,
            "kind": c.kind,
            "tvd": tvd(hr, hs),
            "cells": {
                "labels": c.cell_labels(),
                "real": (hr / hr.sum()).tolist(),
                "synthetic": (hs / hs.sum()).tolist(),
            },
        }
        if c.is_numeric:
            xr = real[c.name].to_numpy(dtype=float)
            xs = syn[c.name].to_numpy(dtype=float)
            w1 = float(wasserstein_distance(xr, xs))
            item.update(
                wasserstein=w1,
                wasserstein_normalized=w1 / (c.upper - c.lower),
                real=_describe(xr),
                synthetic=_describe(xs),
            )
        out.append(item)
    return out


def _describe(x: np.ndarray) -> dict:
    q = np.quantile(x, QUANTILES)
    d = {
        "mean": float(x.mean()),
        "std": float(x.std(ddof=1)) if len(x) > 1 else 0.0,
        "min": float(x.min()),
        "max": float(x.max()),
    }
    d.update({f"q{int(p * 100):02d}": float(v) for p, v in zip(QUANTILES, q)})
    return d


def pairs_section(schema: Schema, rc: np.ndarray, sc: np.ndarray, rng: np.random.Generator) -> dict:
    sizes = schema.cell_sizes
    pairs = list(combinations(range(len(sizes)), 2))
    total = len(pairs)
    if total > MAX_PAIRS:
        pick = np.sort(rng.choice(total, size=MAX_PAIRS, replace=False))
        pairs = [pairs[i] for i in pick]
    names = schema.names
    items = []
    real_combos = syn_combos = suppressed = fabricated = 0
    for a, b in pairs:
        k = sizes[a] * sizes[b]
        hr = np.bincount(rc[:, a] * sizes[b] + rc[:, b], minlength=k)
        hs = np.bincount(sc[:, a] * sizes[b] + sc[:, b], minlength=k)
        items.append({"a": names[a], "b": names[b], "tvd": tvd(hr, hs)})
        real_combos += int((hr > 0).sum())
        syn_combos += int((hs > 0).sum())
        suppressed += int(((hr > 0) & (hs == 0)).sum())
        fabricated += int(((hs > 0) & (hr == 0)).sum())
    values = np.array([it["tvd"] for it in items]) if items else np.zeros(0)
    worst = items[int(values.argmax())] if items else None
    return {
        "n_pairs_total": total,
        "n_pairs_evaluated": len(pairs),
        "fraction": round(len(pairs) / total, 6) if total else 1.0,
        "mean_tvd": float(values.mean()) if items else None,
        "max_tvd": float(values.max()) if items else None,
        "worst": worst,
        "items": items,
        "combinations": {
            "real": real_combos,
            "synthetic": syn_combos,
            "suppressed": suppressed,
            "fabricated": fabricated,
            "suppressed_fraction": suppressed / real_combos if real_combos else 0.0,
            "fabricated_fraction": fabricated / syn_combos if syn_combos else 0.0,
        },
    }


def correlation_section(schema: Schema, real, syn, rc, sc) -> dict:
    R = association_matrix(schema, real, rc)
    S = association_matrix(schema, syn, sc)
    D = S - R
    iu = np.triu_indices(len(R), k=1)
    absd = np.abs(D[iu])
    out = {
        "columns": schema.names,
        "real": R.tolist(),
        "synthetic": S.tolist(),
        "difference": D.tolist(),
        "measures": "Pearson (numeric-numeric, signed), Cramér's V (categorical-categorical), "
        "correlation ratio eta (mixed)",
        "mean_abs_difference": float(absd.mean()) if len(absd) else 0.0,
        "max_abs_difference": float(absd.max()) if len(absd) else 0.0,
        "worst": None,
    }
    if len(absd):
        k = int(absd.argmax())
        out["worst"] = {"a": schema.names[iu[0][k]], "b": schema.names[iu[1][k]], "difference": float(D[iu][k])}
    return out


def pmse_section(enc: Encoder, real: pd.DataFrame, syn: pd.DataFrame, rng: np.random.Generator) -> dict:
    m = min(len(real), len(syn), PMSE_MAX_ROWS)
    X = np.vstack([enc.rows(real, subsample_rows(len(real), m, rng)), enc.rows(syn, subsample_rows(len(syn), m, rng))])
    y = np.r_[np.zeros(m), np.ones(m)]
    N, c = len(y), 0.5

    def cart_scores(labels: np.ndarray) -> np.ndarray:
        tree = DecisionTreeClassifier(
            max_depth=PMSE_CART_DEPTH, min_samples_leaf=PMSE_CART_MIN_LEAF, random_state=int(rng.integers(2**31))
        )
        return tree.fit(X, labels).predict_proba(X)[:, 1]

    cart = pmse(cart_scores(y), y)
    null = [pmse(cart_scores(rng.permutation(y)), y) for _ in range(PMSE_CART_PERMUTATIONS)]
    cart_null = float(np.mean(null))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logit = LogisticRegression(C=1e4, max_iter=500).fit(X, y)
    logit_pmse = pmse(logit.predict_proba(X)[:, 1], y)
    Xc = np.c_[np.ones(len(X)), X].astype(np.float64)
    k = int(np.linalg.matrix_rank(Xc.T @ Xc))  # identifiable logit parameters (rank of the design)
    logit_null = (k - 1) * (1 - c) ** 2 * c / N  # Snoke et al. 2018, expected null pMSE of a logit
    return {
        **sample_note(m, min(len(real), len(syn))),
        "cart": {
            "pmse": cart,
            "null": cart_null,
            "ratio": cart / cart_null if cart_null > 0 else None,
            "settings": f"max_depth={PMSE_CART_DEPTH}, min_samples_leaf={PMSE_CART_MIN_LEAF}, in-sample scores, "
            f"null from {PMSE_CART_PERMUTATIONS} label permutations",
        },
        "logistic": {
            "pmse": logit_pmse,
            "null": logit_null,
            "ratio": logit_pmse / logit_null if logit_null > 0 else None,
            "settings": "main effects, null = (k-1)(1-c)^2 c / N",
        },
    }


def mmd_section(enc: Encoder, real: pd.DataFrame, syn: pd.DataFrame, rng: np.random.Generator) -> dict:
    pool = np.vstack(
        [enc.rows(real, subsample_rows(len(real), 500, rng)), enc.rows(syn, subsample_rows(len(syn), 500, rng))]
    )
    d2 = sq_dists(pool, pool)[np.triu_indices(len(pool), k=1)]
    bandwidth = float(math.sqrt(np.median(d2[d2 > 0]) / 2.0)) if np.any(d2 > 0) else 1.0
    total = min(len(real), len(syn))
    m = min(total, MMD_MAX_ROWS)
    Xr, Xs = enc.rows(real, subsample_rows(len(real), m, rng)), enc.rows(syn, subsample_rows(len(syn), m, rng))
    if m <= MMD_EXACT_MAX:
        return {
            **sample_note(m, total),
            "method": "exact unbiased",
            "bandwidth": bandwidth,
            "mmd2": gaussian_mmd2(Xr, Xs, bandwidth=bandwidth),
        }
    return {
        **sample_note(m, total),
        "method": f"random Fourier features ({MMD_FEATURES})",
        "bandwidth": bandwidth,
        "mmd2": rff_mmd2(Xr, Xs, bandwidth=bandwidth, features=MMD_FEATURES, rng=rng),
    }


def privacy_section(enc: Encoder, real: pd.DataFrame, syn: pd.DataFrame, rng: np.random.Generator) -> dict:
    perm = rng.permutation(len(real))
    half = len(real) // 2
    ref_idx, hold_idx = perm[:half], perm[half:]
    hr = pd.util.hash_pandas_object(real, index=False).to_numpy()
    hs = pd.util.hash_pandas_object(syn[real.columns], index=False).to_numpy()
    ref_set = hr[ref_idx]
    exact_syn_all = float(np.isin(hs, hr).mean())
    exact_syn_ref = float(np.isin(hs, ref_set).mean())
    exact_hold_ref = float(np.isin(hr[hold_idx], ref_set).mean()) if len(hold_idx) else 0.0

    ref = enc.rows(real, ref_idx[subsample_rows(len(ref_idx), DCR_REFERENCE_ROWS, rng)])
    q_syn = enc.rows(syn, subsample_rows(len(syn), DCR_QUERY_ROWS, rng))
    q_hold = enc.rows(real, hold_idx[subsample_rows(len(hold_idx), DCR_QUERY_ROWS, rng)])
    d_syn, d_hold = _closest(q_syn, ref), _closest(q_hold, ref)
    hi = float(max(d_syn.max(initial=0), d_hold.max(initial=0))) or 1.0
    edges = np.linspace(0.0, hi, DCR_BINS + 1)
    p05 = float(np.quantile(d_hold, 0.05)) if len(d_hold) else 0.0
    return {
        "exact_match_rate": exact_syn_all,
        "exact_match_rate_vs_reference": exact_syn_ref,
        "holdout_exact_match_rate": exact_hold_ref,
        "dcr": {
            "reference_rows": len(ref),
            "synthetic_rows": len(q_syn),
            "holdout_rows": len(q_hold),
            "synthetic_median": float(np.median(d_syn)),
            "holdout_median": float(np.median(d_hold)),
            "synthetic_p05": float(np.quantile(d_syn, 0.05)),
            "holdout_p05": p05,
            "synthetic_share_below_holdout_p05": float((d_syn < p05).mean()),
            "histogram": {
                "edges": edges.tolist(),
                "synthetic": np.histogram(d_syn, edges)[0].tolist(),
                "holdout": np.histogram(d_hold, edges)[0].tolist(),
            },
        },
        "note": "empirical sanity check only, NOT a privacy guarantee: the real rows are split in half; "
        "synthetic rows and the other half (holdout) are compared with the same reference half. "
        "Distances on the encoding: numeric in [0,1] of the public range, a different category = 1.",
    }


def _closest(Q: np.ndarray, R: np.ndarray) -> np.ndarray:
    if len(Q) == 0 or len(R) == 0:
        return np.zeros(0)
    rr = (R.astype(np.float64) ** 2).sum(1)
    out = np.empty(len(Q))
    for start in range(0, len(Q), READ_CHUNK):
        q = Q[start : start + READ_CHUNK].astype(np.float64)
        d = (q * q).sum(1)[:, None] + rr[None, :] - 2.0 * q @ R.T.astype(np.float64)
        out[start : start + READ_CHUNK] = np.sqrt(np.maximum(d.min(axis=1), 0.0))
    return out
