"""Utility evaluation of a synthetic table against the real one.

THIS MODULE IS NOT PRIVATE. Every number it returns is computed from the raw (prepared) real data:
the results are for the data steward only and must never be attached to a download or shown to an
analyst. Its randomness (subsampling, train/test splits, random features) is therefore not privacy
relevant and comes from a seeded numpy Generator created inside :func:`evaluate`.

Both tables are compared on the PUBLIC schema scale: numeric columns clipped to the declared bounds,
categories mapped to the declared list (:meth:`~mechanisms.schema.Schema.prepare`). Metric families,
following SmartNoise Eval, MOSTLY AI's QA report, synthcity and the papers' own measures:

* per column: total variation distance (TVD) over the public cells (:meth:`Schema.to_cells`),
  1-Wasserstein distance for numeric columns (absolute and divided by the public range), mean / std /
  quantiles side by side, and the cell histograms for overlays;
* pairs: TVD of the 2-way cell marginals (a seeded sample when there are more than ``MAX_PAIRS``),
  suppressed / fabricated 2-way combinations (SmartNoise Eval), an association matrix (Pearson for
  numeric-numeric, Cramér's V for categorical-categorical, the correlation ratio eta for mixed pairs)
  for both tables and its difference;
* whole table: pMSE (Snoke et al. 2018; Snoke & Slavković, PSD 2018) with a CART and with a logistic
  regression, each with its null value and the ratio to it; the maximum mean discrepancy (MMD) with a
  Gaussian kernel (exact for small samples, random Fourier features otherwise; DP-MERF uses the same
  features);
* machine learning (when a target is given): train on synthetic, test on real (TSTR) with the twelve
  classifier families of the DP-MERF evaluation (scikit-learn equivalents; HistGradientBoosting stands
  in for XGBoost, which is not installed), beside the train-on-real baseline;
* privacy sanity (empirical, informative only, NOT a privacy guarantee): exact-match rate and distance
  to the closest real record (DCR) of synthetic rows, compared with real holdout rows.

Large tables are subsampled; every subsampled section states the rows used and the fraction.
"""

from __future__ import annotations

import json
import math
import sys
import time
import warnings
from itertools import combinations
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
from scipy.stats import wasserstein_distance
# scikit-learn is imported here, not lazily: threadpool_limits only reaches thread pools (OpenMP,
# BLAS) of libraries already loaded when it is entered.
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.ensemble import (AdaBoostClassifier, BaggingClassifier, GradientBoostingClassifier,
                              HistGradientBoostingClassifier, RandomForestClassifier)
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, average_precision_score, f1_score, roc_auc_score
from sklearn.naive_bayes import BernoulliNB, GaussianNB
from sklearn.neural_network import MLPClassifier
from sklearn.svm import LinearSVC
from sklearn.tree import DecisionTreeClassifier
from threadpoolctl import threadpool_limits

from .schema import MISSING_CATEGORY, Schema, read_raw_csv

ProgressFn = Callable[[float, str], None]

# -- tuning constants (with the reason for their value) ----------------------------------------------
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
MAX_PAIRS = 400  # all pairs up to 29 columns; above that a seeded sample keeps the pair stage < ~5 s
PMSE_MAX_ROWS = 10_000  # rows per side for the pMSE classifiers: CART + logit on 20k rows take < 2 s
PMSE_CART_DEPTH = 5  # the PSD 2018 setting (rpart maxdepth 5); in-sample scores as in synthpop
PMSE_CART_MIN_LEAF = 5  # synthpop's minbucket for the CART utility
PMSE_CART_PERMUTATIONS = 5  # label shuffles for the CART null (synthpop uses 50; 5 keeps it cheap)
MMD_EXACT_MAX = 2_000  # exact unbiased MMD^2 up to this many rows per side (2000^2 kernel entries)
MMD_MAX_ROWS = 20_000  # rows per side for the random-feature estimate (sampling sd << feature sd)
MMD_FEATURES = 1_000  # random Fourier features: the estimate's sd is ~1e-3 at this size
MAX_ONEHOT = 32  # more levels: the 31 most frequent (real) + "rest"; bounds memory (50k rows x 20 cols x 32)
TSTR_MAX_TRAIN = 10_000  # training rows per classifier: 24 fits stay under ~25 s on 2 busy cores
TSTR_MAX_TEST = 20_000  # scoring is cheap
TSTR_FAST_TRAIN = 3_000  # fast mode (web worker): fewer rows ...
TSTR_FAST_TEST = 5_000
TSTR_MIN_ROWS = 100  # fewer real rows than this: no TSTR (a 20-row test split says nothing)
TSTR_HOLDOUT_FRACTION = 0.2  # real rows held out for testing when no test file is given
DCR_QUERY_ROWS = 2_000  # synthetic / holdout rows whose closest-record distance is computed
DCR_REFERENCE_ROWS = 20_000  # real reference rows they are compared with
DCR_BINS = 30
READ_CHUNK = 2_000  # query rows per block in the nearest-neighbour search (2000 x 20000 floats)


# =================================================================================================
# Small, exactly checkable metrics
# =================================================================================================

def tvd(p: np.ndarray, q: np.ndarray) -> float:
    """Total variation distance between two histograms (counts or probabilities, same cells)."""
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    if p.shape != q.shape:
        raise ValueError(f"histograms must have the same cells, got shapes {p.shape} and {q.shape}")
    sp, sq = p.sum(), q.sum()
    if sp <= 0 or sq <= 0:
        raise ValueError(f"histograms must have positive mass, got sums {sp} and {sq}")
    return float(0.5 * np.abs(p / sp - q / sq).sum())


def cramers_v(table: np.ndarray) -> float:
    """Cramér's V of a contingency table (no bias correction). 0 when a margin has one level."""
    t = np.asarray(table, dtype=float)
    t = t[t.sum(axis=1) > 0][:, t.sum(axis=0) > 0]
    r, c = t.shape
    if min(r, c) < 2:
        return 0.0
    n = t.sum()
    expected = np.outer(t.sum(axis=1), t.sum(axis=0)) / n
    chi2 = float(((t - expected) ** 2 / expected).sum())
    return float(math.sqrt(min(1.0, chi2 / (n * (min(r, c) - 1)))))


def correlation_ratio(codes: np.ndarray, values: np.ndarray) -> float:
    """Correlation ratio eta of a numeric variable on a categorical one (0 if values are constant)."""
    codes = np.asarray(codes, dtype=np.int64)
    values = np.asarray(values, dtype=float)
    total = float(((values - values.mean()) ** 2).sum())
    if total <= 0:
        return 0.0
    counts = np.bincount(codes)
    sums = np.bincount(codes, weights=values)
    seen = counts > 0
    means = sums[seen] / counts[seen]
    between = float((counts[seen] * (means - values.mean()) ** 2).sum())
    return float(math.sqrt(min(1.0, between / total)))


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson correlation; 0 when either variable is constant (undefined)."""
    x = np.asarray(x, dtype=float) - np.mean(x)
    y = np.asarray(y, dtype=float) - np.mean(y)
    den = math.sqrt(float((x * x).sum()) * float((y * y).sum()))
    return float((x * y).sum() / den) if den > 0 else 0.0


def gaussian_mmd2(X: np.ndarray, Y: np.ndarray, *, bandwidth: float) -> float:
    """Unbiased MMD^2 with k(x, y) = exp(-|x - y|^2 / (2 bandwidth^2)) (Gretton et al. 2012)."""
    if bandwidth <= 0:
        raise ValueError(f"bandwidth must be positive, got bandwidth={bandwidth}")
    m, n = len(X), len(Y)
    if m < 2 or n < 2:
        raise ValueError(f"MMD needs at least 2 rows per side, got {m} and {n}")
    g = 1.0 / (2.0 * bandwidth ** 2)
    kxx = np.exp(-g * _sq_dists(X, X))
    kyy = np.exp(-g * _sq_dists(Y, Y))
    kxy = np.exp(-g * _sq_dists(X, Y))
    return float((kxx.sum() - np.trace(kxx)) / (m * (m - 1)) + (kyy.sum() - np.trace(kyy)) / (n * (n - 1))
                 - 2.0 * kxy.mean())


def rff_mmd2(X: np.ndarray, Y: np.ndarray, *, bandwidth: float, features: int,
             rng: np.random.Generator) -> float:
    """MMD^2 estimate with random Fourier features of the same Gaussian kernel (Rahimi & Recht 2007)."""
    if bandwidth <= 0:
        raise ValueError(f"bandwidth must be positive, got bandwidth={bandwidth}")
    d = X.shape[1]
    W = rng.normal(scale=1.0 / bandwidth, size=(d, features)).astype(np.float32)
    b = rng.uniform(0.0, 2.0 * math.pi, size=features).astype(np.float32)

    def mean_embedding(Z: np.ndarray) -> np.ndarray:
        acc = np.zeros(features, dtype=np.float64)
        for start in range(0, len(Z), 10_000):
            acc += np.cos(Z[start:start + 10_000].astype(np.float32) @ W + b).sum(axis=0)
        return acc * math.sqrt(2.0 / features) / len(Z)

    diff = mean_embedding(X) - mean_embedding(Y)
    return float(diff @ diff)


def _sq_dists(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    d = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * A @ B.T
    return np.maximum(d, 0.0)


def pmse(scores: np.ndarray, is_synthetic: np.ndarray) -> float:
    """pMSE = mean (p_hat - c)^2 with c the synthetic share (Snoke et al. 2018)."""
    c = float(np.mean(is_synthetic))
    return float(np.mean((np.asarray(scores, dtype=float) - c) ** 2))


# =================================================================================================
# Encodings
# =================================================================================================

class _Encoder:
    """Numeric columns in [0, 1] on the public bounds; categorical columns one-hot scaled by 1/sqrt(2),
    so that a differing category adds 1 to the squared Euclidean distance, like a full-range numeric
    difference. Columns with more than MAX_ONEHOT levels keep the most frequent real levels + "rest"
    (data-derived, which is fine here: evaluation is steward-only, not private)."""

    def __init__(self, schema: Schema, real: pd.DataFrame, exclude: Sequence[str] = ()):
        self.schema = schema
        self.columns = [c for c in schema.kept if c.name not in exclude]
        self.keep: dict[str, np.ndarray] = {}
        for c in self.columns:
            if c.kind == "categorical" and len(c.categories) > MAX_ONEHOT:
                codes = Schema.category_codes(c, real[c.name])
                order = np.argsort(-np.bincount(codes, minlength=len(c.categories)), kind="stable")
                self.keep[c.name] = np.sort(order[:MAX_ONEHOT - 1])

    def rows(self, frame: pd.DataFrame, idx: np.ndarray) -> np.ndarray:
        return self.transform(frame.iloc[idx])

    def transform(self, frame: pd.DataFrame) -> np.ndarray:
        parts = []
        for c in self.columns:
            if c.is_numeric:
                v = (frame[c.name].to_numpy(dtype=float) - c.lower) / (c.upper - c.lower)
                parts.append(v[:, None].astype(np.float32))
                continue
            codes = Schema.category_codes(c, frame[c.name])
            k = len(c.categories)
            if c.name in self.keep:
                kept = self.keep[c.name]
                remap = np.full(k, len(kept), dtype=np.int64)
                remap[kept] = np.arange(len(kept))
                codes, k = remap[codes], len(kept) + 1
            onehot = np.zeros((len(codes), k), dtype=np.float32)
            onehot[np.arange(len(codes)), codes] = 1.0 / math.sqrt(2.0)
            parts.append(onehot)
        return np.hstack(parts) if parts else np.empty((len(frame), 0), dtype=np.float32)


def _subsample(n: int, cap: int, rng: np.random.Generator) -> np.ndarray:
    return np.sort(rng.choice(n, size=cap, replace=False)) if n > cap else np.arange(n)


def _sample_note(used: int, total: int) -> dict:
    return {"rows_used": int(used), "rows_total": int(total), "fraction": round(used / total, 6) if total else 1.0}


# =================================================================================================
# Metric sections
# =================================================================================================

def _columns_section(schema: Schema, real: pd.DataFrame, syn: pd.DataFrame,
                     rc: np.ndarray, sc: np.ndarray) -> list[dict]:
    out = []
    for j, c in enumerate(schema.kept):
        k = c.n_cells
        hr = np.bincount(rc[:, j], minlength=k)
        hs = np.bincount(sc[:, j], minlength=k)
        item: dict[str, Any] = {
            "name": c.name, "kind": c.kind, "tvd": tvd(hr, hs),
            "cells": {"labels": c.cell_labels(), "real": (hr / hr.sum()).tolist(), "synthetic": (hs / hs.sum()).tolist()},
        }
        if c.is_numeric:
            xr = real[c.name].to_numpy(dtype=float)
            xs = syn[c.name].to_numpy(dtype=float)
            w1 = float(wasserstein_distance(xr, xs))
            item.update(wasserstein=w1, wasserstein_normalized=w1 / (c.upper - c.lower),
                        real=_describe(xr), synthetic=_describe(xs))
        out.append(item)
    return out


def _describe(x: np.ndarray) -> dict:
    q = np.quantile(x, QUANTILES)
    d = {"mean": float(x.mean()), "std": float(x.std(ddof=1)) if len(x) > 1 else 0.0,
         "min": float(x.min()), "max": float(x.max())}
    d.update({f"q{int(p * 100):02d}": float(v) for p, v in zip(QUANTILES, q)})
    return d


def _pairs_section(schema: Schema, rc: np.ndarray, sc: np.ndarray, rng: np.random.Generator) -> dict:
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
        "n_pairs_total": total, "n_pairs_evaluated": len(pairs),
        "fraction": round(len(pairs) / total, 6) if total else 1.0,
        "mean_tvd": float(values.mean()) if items else None,
        "max_tvd": float(values.max()) if items else None,
        "worst": worst, "items": items,
        "combinations": {
            "real": real_combos, "synthetic": syn_combos,
            "suppressed": suppressed, "fabricated": fabricated,
            "suppressed_fraction": suppressed / real_combos if real_combos else 0.0,
            "fabricated_fraction": fabricated / syn_combos if syn_combos else 0.0,
        },
    }


def association_matrix(schema: Schema, frame: pd.DataFrame, cells: np.ndarray) -> np.ndarray:
    """Pearson (numeric-numeric), Cramér's V (categorical-categorical), eta (mixed); 1 on the diagonal."""
    cols = schema.kept
    d = len(cols)
    M = np.eye(d)
    values = {c.name: frame[c.name].to_numpy(dtype=float) for c in cols if c.is_numeric}
    for i, j in combinations(range(d), 2):
        ci, cj = cols[i], cols[j]
        if ci.is_numeric and cj.is_numeric:
            v = pearson(values[ci.name], values[cj.name])
        elif not ci.is_numeric and not cj.is_numeric:
            ki, kj = ci.n_cells, cj.n_cells
            table = np.bincount(cells[:, i] * kj + cells[:, j], minlength=ki * kj).reshape(ki, kj)
            v = cramers_v(table)
        elif ci.is_numeric:
            v = correlation_ratio(cells[:, j], values[ci.name])
        else:
            v = correlation_ratio(cells[:, i], values[cj.name])
        M[i, j] = M[j, i] = v
    return M


def _correlation_section(schema: Schema, real, syn, rc, sc) -> dict:
    R = association_matrix(schema, real, rc)
    S = association_matrix(schema, syn, sc)
    D = S - R
    iu = np.triu_indices(len(R), k=1)
    absd = np.abs(D[iu])
    out = {"columns": schema.names, "real": R.tolist(), "synthetic": S.tolist(), "difference": D.tolist(),
           "measures": "Pearson (numeric-numeric, signed), Cramér's V (categorical-categorical), "
                       "correlation ratio eta (mixed)",
           "mean_abs_difference": float(absd.mean()) if len(absd) else 0.0,
           "max_abs_difference": float(absd.max()) if len(absd) else 0.0, "worst": None}
    if len(absd):
        k = int(absd.argmax())
        out["worst"] = {"a": schema.names[iu[0][k]], "b": schema.names[iu[1][k]], "difference": float(D[iu][k])}
    return out


def _pmse_section(enc: _Encoder, real: pd.DataFrame, syn: pd.DataFrame, rng: np.random.Generator) -> dict:
    m = min(len(real), len(syn), PMSE_MAX_ROWS)
    X = np.vstack([enc.rows(real, _subsample(len(real), m, rng)), enc.rows(syn, _subsample(len(syn), m, rng))])
    y = np.r_[np.zeros(m), np.ones(m)]
    N, c = len(y), 0.5

    def cart_scores(labels: np.ndarray) -> np.ndarray:
        tree = DecisionTreeClassifier(max_depth=PMSE_CART_DEPTH, min_samples_leaf=PMSE_CART_MIN_LEAF,
                                      random_state=int(rng.integers(2**31)))
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
        **_sample_note(m, min(len(real), len(syn))),
        "cart": {"pmse": cart, "null": cart_null, "ratio": cart / cart_null if cart_null > 0 else None,
                 "settings": f"max_depth={PMSE_CART_DEPTH}, min_samples_leaf={PMSE_CART_MIN_LEAF}, in-sample scores, "
                             f"null from {PMSE_CART_PERMUTATIONS} label permutations"},
        "logistic": {"pmse": logit_pmse, "null": logit_null,
                     "ratio": logit_pmse / logit_null if logit_null > 0 else None,
                     "settings": "main effects, null = (k-1)(1-c)^2 c / N"},
    }


def _mmd_section(enc: _Encoder, real: pd.DataFrame, syn: pd.DataFrame, rng: np.random.Generator) -> dict:
    pool = np.vstack([enc.rows(real, _subsample(len(real), 500, rng)), enc.rows(syn, _subsample(len(syn), 500, rng))])
    d2 = _sq_dists(pool, pool)[np.triu_indices(len(pool), k=1)]
    bandwidth = float(math.sqrt(np.median(d2[d2 > 0]) / 2.0)) if np.any(d2 > 0) else 1.0
    total = min(len(real), len(syn))
    m = min(total, MMD_MAX_ROWS)
    Xr, Xs = enc.rows(real, _subsample(len(real), m, rng)), enc.rows(syn, _subsample(len(syn), m, rng))
    if m <= MMD_EXACT_MAX:
        return {**_sample_note(m, total), "method": "exact unbiased", "bandwidth": bandwidth,
                "mmd2": gaussian_mmd2(Xr, Xs, bandwidth=bandwidth)}
    return {**_sample_note(m, total), "method": f"random Fourier features ({MMD_FEATURES})",
            "bandwidth": bandwidth,
            "mmd2": rff_mmd2(Xr, Xs, bandwidth=bandwidth, features=MMD_FEATURES, rng=rng)}


def tstr_models(fast: bool, seed: int) -> dict:
    """The twelve classifier families of the DP-MERF evaluation, with fast settings (fewer trees and
    iterations, subsampled bagging / boosting as in the DP-MERF benchmark's tuned specs)."""
    trees = 20 if fast else 50
    return {
        "logistic_regression": LogisticRegression(max_iter=1000),
        "gaussian_nb": GaussianNB(),
        "bernoulli_nb": BernoulliNB(alpha=0.02, binarize=0.25),
        "linear_svm": LinearSVC(max_iter=2000),
        "decision_tree": DecisionTreeClassifier(random_state=seed),
        "lda": LinearDiscriminantAnalysis(solver="lsqr", shrinkage="auto"),
        "adaboost": AdaBoostClassifier(n_estimators=trees, random_state=seed),
        "bagging": BaggingClassifier(n_estimators=10, max_samples=0.5, random_state=seed),
        "random_forest": RandomForestClassifier(n_estimators=trees, random_state=seed),
        "gradient_boosting": GradientBoostingClassifier(n_estimators=trees, subsample=0.5, random_state=seed),
        "mlp": MLPClassifier(hidden_layer_sizes=(100,), max_iter=100 if fast else 200, early_stopping=True,
                             random_state=seed),
        "hist_gradient_boosting (xgboost stand-in)": HistGradientBoostingClassifier(
            max_iter=50, random_state=seed),
    }


def _scores(model, X: np.ndarray) -> np.ndarray:
    if hasattr(model, "predict_proba"):
        return model.predict_proba(X)
    s = model.decision_function(X)
    return s if s.ndim == 2 else np.c_[-s, s]


def _classification_metrics(y: np.ndarray, classes: np.ndarray, model, X: np.ndarray, n_classes: int,
                            binary: bool) -> dict:
    pred = model.predict(X)
    out = {"accuracy": float(accuracy_score(y, pred)),
           "macro_f1": float(f1_score(y, pred, average="macro", labels=np.arange(n_classes), zero_division=0))}
    if binary:
        S = _scores(model, X)
        pos = S[:, list(classes).index(1)] if 1 in classes else np.zeros(len(X))
        if len(np.unique(y)) == 2:
            out["roc_auc"] = float(roc_auc_score(y, pos))
            out["prc_auc"] = float(average_precision_score(y, pos))
    return out


def _ml_section(schema: Schema, real: pd.DataFrame, syn: pd.DataFrame, test: pd.DataFrame | None,
                target: str, *, fast: bool, rng: np.random.Generator, progress: ProgressFn) -> dict:
    col = schema.column(target)
    if col.kind == "excluded" or target not in schema.names:
        raise ValueError(f"target must be a kept column of the schema, got target={target!r}")
    j = schema.names.index(target)
    if test is None:
        perm = rng.permutation(len(real))
        n_test = max(1, int(round(TSTR_HOLDOUT_FRACTION * len(real))))
        test, train_real = real.iloc[perm[:n_test]], real.iloc[perm[n_test:]]
        test_note = (f"{int(TSTR_HOLDOUT_FRACTION * 100)}% of the real rows held out (the synthesizer saw "
                     "them, so the scores are slightly optimistic)")
    else:
        train_real = real
        test_note = "separate real test file"
    max_train = TSTR_FAST_TRAIN if fast else TSTR_MAX_TRAIN
    max_test = TSTR_FAST_TEST if fast else TSTR_MAX_TEST
    syn_tr = syn.iloc[_subsample(len(syn), max_train, rng)]
    real_tr = train_real.iloc[_subsample(len(train_real), max_train, rng)]
    test = test.iloc[_subsample(len(test), max_test, rng)]
    enc = _Encoder(schema, real, exclude=(target,))
    ycell = lambda f: schema.to_cells(f)[:, j]  # noqa: E731  classes = public cells of the target
    yte, yreal = ycell(test), ycell(real_tr)
    classes = np.unique(np.r_[yte, yreal])  # the classes the real data holds
    binary = len(classes) == 2  # positive class: the later one in the schema's order
    Xte, yte = enc.transform(test), np.searchsorted(classes, yte)
    ysyn = ycell(syn_tr)
    known = np.isin(ysyn, classes)  # synthetic rows of a class the real data never holds cannot be scored
    syn_tr, ysyn = syn_tr[known], np.searchsorted(classes, ysyn[known])
    n_classes = len(classes)
    seed = int(rng.integers(2**31))
    results = []
    for name_i, (label, (Xtr, ytr)) in enumerate([("synthetic", (enc.transform(syn_tr), ysyn)),
                                                  ("real", (enc.transform(real_tr), np.searchsorted(classes, yreal)))]):
        models = tstr_models(fast, seed)
        for k, (name, model) in enumerate(models.items()):
            progress((name_i * len(models) + k) / (2 * len(models)), f"TSTR: {name} on {label}")
            row = {"model": name, "train": label}
            if len(np.unique(ytr)) < 2:
                row["error"] = f"the {label} training rows hold a single class"
            else:
                t0 = time.perf_counter()
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        model.fit(Xtr, ytr)
                    row.update(_classification_metrics(yte, model.classes_, model, Xte, n_classes, binary))
                except (ValueError, np.linalg.LinAlgError) as exc:
                    row["error"] = str(exc).splitlines()[0][:200]
                row["seconds"] = round(time.perf_counter() - t0, 3)
            results.append(row)
    metric = "roc_auc" if binary else "macro_f1"

    def mean_of(train: str, key: str) -> float | None:
        v = [r[key] for r in results if r["train"] == train and key in r]
        return float(np.mean(v)) if v else None

    summary = {k: {"synthetic": mean_of("synthetic", k), "real": mean_of("real", k)}
               for k in (("roc_auc", "prc_auc", "accuracy", "macro_f1") if binary else ("accuracy", "macro_f1"))}
    labels = col.cell_labels()
    shares = np.bincount(yte, minlength=n_classes) / max(len(yte), 1)
    return {"target": target, "task": "binary" if binary else f"multiclass ({n_classes} classes)",
            "chance": chance_level(metric, shares.tolist()),
            "classes": [labels[c] for c in classes],
            "synthetic_rows_of_unseen_class": int((~known).sum()),
            "primary_metric": metric, "test": test_note, "fast": fast,
            "train_rows": _sample_note(len(syn_tr), len(syn)), "test_rows": len(test),
            "mean": summary, "models": results,
            "note": "ROC/PRC AUC from predicted scores (the DP-MERF code used hard labels); "
                    "HistGradientBoosting stands in for XGBoost"}


def _privacy_section(enc: _Encoder, real: pd.DataFrame, syn: pd.DataFrame, rng: np.random.Generator) -> dict:
    perm = rng.permutation(len(real))
    half = len(real) // 2
    ref_idx, hold_idx = perm[:half], perm[half:]
    hr = pd.util.hash_pandas_object(real, index=False).to_numpy()
    hs = pd.util.hash_pandas_object(syn[real.columns], index=False).to_numpy()
    ref_set = hr[ref_idx]
    exact_syn_all = float(np.isin(hs, hr).mean())
    exact_syn_ref = float(np.isin(hs, ref_set).mean())
    exact_hold_ref = float(np.isin(hr[hold_idx], ref_set).mean()) if len(hold_idx) else 0.0

    ref = enc.rows(real, ref_idx[_subsample(len(ref_idx), DCR_REFERENCE_ROWS, rng)])
    q_syn = enc.rows(syn, _subsample(len(syn), DCR_QUERY_ROWS, rng))
    q_hold = enc.rows(real, hold_idx[_subsample(len(hold_idx), DCR_QUERY_ROWS, rng)])
    d_syn, d_hold = _closest(q_syn, ref), _closest(q_hold, ref)
    hi = float(max(d_syn.max(initial=0), d_hold.max(initial=0))) or 1.0
    edges = np.linspace(0.0, hi, DCR_BINS + 1)
    p05 = float(np.quantile(d_hold, 0.05)) if len(d_hold) else 0.0
    return {
        "exact_match_rate": exact_syn_all,
        "exact_match_rate_vs_reference": exact_syn_ref,
        "holdout_exact_match_rate": exact_hold_ref,
        "dcr": {
            "reference_rows": len(ref), "synthetic_rows": len(q_syn), "holdout_rows": len(q_hold),
            "synthetic_median": float(np.median(d_syn)), "holdout_median": float(np.median(d_hold)),
            "synthetic_p05": float(np.quantile(d_syn, 0.05)), "holdout_p05": p05,
            "synthetic_share_below_holdout_p05": float((d_syn < p05).mean()),
            "histogram": {"edges": edges.tolist(), "synthetic": np.histogram(d_syn, edges)[0].tolist(),
                          "holdout": np.histogram(d_hold, edges)[0].tolist()},
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
        q = Q[start:start + READ_CHUNK].astype(np.float64)
        d = (q * q).sum(1)[:, None] + rr[None, :] - 2.0 * q @ R.T.astype(np.float64)
        out[start:start + READ_CHUNK] = np.sqrt(np.maximum(d.min(axis=1), 0.0))
    return out


# =================================================================================================
# Plain-language readings and the entry point
# =================================================================================================

def quality_score(columns: Sequence[dict], pair_items: Sequence[dict]) -> dict:
    """One quality score in [0, 1] (1 = the synthetic table reproduces every marginal measured), as
    SDMetrics' QualityReport does: the mean of "column shapes" (1 - TVD of each column's cells) and
    "column pair trends" (1 - TVD of each pair's 2-way cells), each averaged over its items.

    Differences from SDMetrics, stated: numeric columns are compared on their public bins (TVD on cells)
    rather than by the KS complement, and pairs by their 2-way cell TVD rather than by correlation
    similarity; pairs are the evaluated sample when there are more than ``MAX_PAIRS``. With a single
    kept column there are no pairs and the score is the column shapes alone.
    """
    shapes = float(np.mean([1.0 - c["tvd"] for c in columns])) if columns else None
    trends = float(np.mean([1.0 - p["tvd"] for p in pair_items])) if pair_items else None
    parts = [v for v in (shapes, trends) if v is not None]
    return {"score": float(np.mean(parts)) if parts else None, "column_shapes": shapes,
            "column_pair_trends": trends, "n_columns": len(columns), "n_pairs": len(pair_items)}


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def chance_level(metric: str, class_shares: Sequence[float] | None = None) -> float | None:
    """The score of guessing: ROC AUC 0.5; macro F1 of a uniform random guess among K classes, which
    for a class of share p is 2 p (1/K) / (p + 1/K) (precision p, recall 1/K), averaged over classes."""
    if metric == "roc_auc":
        return 0.5
    if metric == "macro_f1" and class_shares:
        k = len(class_shares)
        return float(np.mean([2 * p / k / (p + 1 / k) for p in class_shares]))
    return None


def tstr_reading(metric: str, synthetic: float, real: float, chance: float | None) -> str:
    """TSTR against chance, not as a share of the real score: an AUC of 0.38 is worse than guessing,
    not "43% of the real baseline". The share reported is of the real models' gain over chance."""
    label = metric.replace("_", " ").upper()
    head = f"Models trained on synthetic data reach {label} {synthetic:.3f} on real test rows"
    real_txt = f"models trained on real data reach {real:.3f}"
    if chance is None:
        return f"{head}; {real_txt}."
    if synthetic <= chance:
        return f"{head}: no better than chance ({chance:.3f}); {real_txt}."
    if real <= chance:
        return f"{head}, above chance ({chance:.3f}); {real_txt}, no better than chance."
    gain = (synthetic - chance) / (real - chance)
    return (f"{head}: {_pct(gain)} of the way from chance ({chance:.3f}) to the models trained on real "
            f"data ({real:.3f}).")


def _readings(res: dict) -> list[dict]:
    cols = res["columns"]
    out = []
    q = res.get("quality")
    if q and q["score"] is not None:
        trends = (f", column pair trends {_pct(q['column_pair_trends'])}" if q["column_pair_trends"] is not None
                  else "")
        out.append({"metric": "Quality score", "value": q["score"],
                    "reading": f"Quality {_pct(q['score'])} (100% = every column and pair distribution reproduced): "
                               f"column shapes {_pct(q['column_shapes'])}{trends}."})
    worst = max(cols, key=lambda c: c["tvd"])
    out.append({"metric": "1-way TVD (mean)", "value": res["summary"]["tvd_1way_mean"],
                "reading": f"Single-column distributions within {_pct(res['summary']['tvd_1way_mean'])} on average "
                           f"(worst: {worst['name']}, {_pct(worst['tvd'])})."})
    num = [c for c in cols if "wasserstein" in c]
    if num:
        w = float(np.mean([c["wasserstein_normalized"] for c in num]))
        out.append({"metric": "1-Wasserstein / range (mean)", "value": w,
                    "reading": f"Numeric columns are shifted by {_pct(w)} of their public range on average."})
    pairs = res["pairs"]
    if pairs["items"]:
        wp = pairs["worst"]
        sampled = "" if pairs["fraction"] == 1 else f" (a sample of {_pct(pairs['fraction'])} of the pairs)"
        out.append({"metric": "2-way TVD (mean)", "value": pairs["mean_tvd"],
                    "reading": f"2-way marginals within {_pct(pairs['mean_tvd'])} on average{sampled} "
                               f"(worst: {wp['a']} x {wp['b']}, {_pct(wp['tvd'])})."})
        cb = pairs["combinations"]
        out.append({"metric": "Suppressed 2-way combinations", "value": cb["suppressed_fraction"],
                    "reading": f"{_pct(cb['suppressed_fraction'])} of the 2-way combinations seen in the real data "
                               "never appear in the synthetic data."})
        out.append({"metric": "Fabricated 2-way combinations", "value": cb["fabricated_fraction"],
                    "reading": f"{_pct(cb['fabricated_fraction'])} of the synthetic 2-way combinations never occur "
                               "in the real data."})
        co = res["correlation"]
        out.append({"metric": "Association difference (mean |diff|)", "value": co["mean_abs_difference"],
                    "reading": f"Correlations / associations differ by {co['mean_abs_difference']:.3f} on average"
                               + (f" (largest: {co['worst']['a']} / {co['worst']['b']}, "
                                  f"{co['worst']['difference']:+.2f})." if co["worst"] else ".")})
    pm = res.get("pmse")
    if pm:
        for kind in ("cart", "logistic"):
            r = pm[kind]["ratio"]
            verdict = ("hard to tell apart" if r is not None and r < 3 else
                       "noticeably different" if r is not None and r < 30 else "easy to tell apart")
            out.append({"metric": f"pMSE ({kind})", "value": pm[kind]["pmse"],
                        "reading": f"A {'CART' if kind == 'cart' else 'logistic'} classifier separating real from "
                                   f"synthetic rows: pMSE {pm[kind]['pmse']:.4f} (0 = indistinguishable, 0.25 = "
                                   f"perfectly separated), {r:.1f}x its null value: {verdict}." if r is not None else
                                   f"pMSE {pm[kind]['pmse']:.4f} (0 = indistinguishable, 0.25 = perfectly separated)."})
    mm = res.get("mmd")
    if mm:
        out.append({"metric": "MMD^2 (Gaussian kernel)", "value": mm["mmd2"],
                    "reading": f"Kernel distance between the two tables MMD^2 = {mm['mmd2']:.4f} "
                               "(0 = same distribution; compare releases of the same table)."})
    ml = res.get("ml")
    if ml:
        key = ml["primary_metric"]
        s, r = ml["mean"][key]["synthetic"], ml["mean"][key]["real"]
        if s is not None and r is not None:
            out.append({"metric": f"TSTR {key} (mean of 12 models)", "value": s,
                        "reading": tstr_reading(key, s, r, ml.get("chance", chance_level(key)))})
    pv = res.get("privacy")
    if pv:
        dcr = pv["dcr"]
        out.append({"metric": "Exact-match rate", "value": pv["exact_match_rate_vs_reference"],
                    "reading": f"{_pct(pv['exact_match_rate_vs_reference'])} of synthetic rows copy a real reference "
                               f"row exactly (real holdout rows: {_pct(pv['holdout_exact_match_rate'])})."})
        out.append({"metric": "DCR share below holdout 5th percentile", "value": dcr["synthetic_share_below_holdout_p05"],
                    "reading": f"{_pct(dcr['synthetic_share_below_holdout_p05'])} of synthetic rows are closer to a real "
                               "row than 95% of real holdout rows are (about 5% expected if synthetic rows are no "
                               "closer than new real rows); median DCR "
                               f"{dcr['synthetic_median']:.3f} vs {dcr['holdout_median']:.3f} for holdout rows."})
    return out


def evaluate(schema: Schema, real: pd.DataFrame, synthetic: pd.DataFrame, *, target: str | None = None,
             test: pd.DataFrame | None = None, seed: int = 0, fast: bool = False,
             progress: ProgressFn | None = None) -> dict:
    """Compare PREPARED real and synthetic frames (:meth:`Schema.prepare` output) on the public scale.

    Returns plain JSON-ready data (see the module docstring). ``test`` (prepared) is a real held-out
    table for TSTR; without it, a share of the real rows is held out. ``fast`` trains the TSTR models
    on fewer rows with fewer trees (web worker). NOT PRIVATE: steward-only output.
    """
    # One thread for BLAS / OpenMP: workers run one job per core, and on a loaded machine threaded
    # kernels spin-wait (measured: 3-4x wall time over CPU time with two threads at load 10).
    with threadpool_limits(limits=1):
        return _evaluate(schema, real, synthetic, target=target, test=test, seed=seed, fast=fast,
                         progress=progress or (lambda f, s: None))


def _evaluate(schema: Schema, real: pd.DataFrame, synthetic: pd.DataFrame, *, target: str | None,
              test: pd.DataFrame | None, seed: int, fast: bool, progress: ProgressFn) -> dict:
    if len(real) < 2 or len(synthetic) < 2:
        raise ValueError(f"need at least 2 real and 2 synthetic rows, got {len(real)} and {len(synthetic)}")
    for label, frame in (("real", real), ("synthetic", synthetic)):
        missing = [n for n in schema.names if n not in frame.columns]
        if missing:
            raise ValueError(f"the {label} table lacks column(s) {missing}")
    if target is not None and target not in schema.names:
        raise ValueError(f"target must be a kept column of the schema, got target={target!r}")
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    timings: dict[str, float] = {}

    def stage(name: str, frac: float, fn):
        progress(frac, name)
        t = time.perf_counter()
        value = fn()
        timings[name] = round(time.perf_counter() - t, 3)
        return value

    real, synthetic = _normalise(schema, real), _normalise(schema, synthetic)
    rc, sc = schema.to_cells(real), schema.to_cells(synthetic)
    res: dict[str, Any] = {"version": 1, "n_real": len(real), "n_synthetic": len(synthetic), "seed": seed,
                           "not_private": "computed from the raw data: steward-only, never part of a download"}
    res["columns"] = stage("columns", 0.0, lambda: _columns_section(schema, real, synthetic, rc, sc))
    res["pairs"] = stage("pairs", 0.1, lambda: _pairs_section(schema, rc, sc, rng))
    res["correlation"] = stage("correlation", 0.2, lambda: _correlation_section(schema, real, synthetic, rc, sc))
    enc = _Encoder(schema, real)  # rows are encoded only where a (subsampled) section needs them
    res["pmse"] = stage("pmse", 0.3, lambda: _pmse_section(enc, real, synthetic, rng))
    res["mmd"] = stage("mmd", 0.4, lambda: _mmd_section(enc, real, synthetic, rng))
    res["privacy"] = stage("privacy", 0.45, lambda: _privacy_section(enc, real, synthetic, rng))
    res["ml"] = None
    if target is not None and len(real) < TSTR_MIN_ROWS:
        res["ml_skipped"] = f"TSTR needs at least {TSTR_MIN_ROWS} real rows, got {len(real)}"
    elif target is not None:
        tst = _normalise(schema, test) if test is not None else None
        sub = lambda f, s: progress(0.5 + 0.5 * f, s)  # noqa: E731
        res["ml"] = stage("ml", 0.5, lambda: _ml_section(schema, real, synthetic, tst, target, fast=fast,
                                                         rng=rng, progress=sub))
    ml = res["ml"]
    res["quality"] = quality_score(res["columns"], res["pairs"]["items"])
    res["summary"] = {
        "quality": res["quality"]["score"],
        "tvd_1way_mean": float(np.mean([c["tvd"] for c in res["columns"]])),
        "tvd_2way_mean": res["pairs"]["mean_tvd"],
        "wasserstein_normalized_mean": (float(np.mean([c["wasserstein_normalized"] for c in res["columns"]
                                                       if "wasserstein" in c]))
                                        if any("wasserstein" in c for c in res["columns"]) else None),
        "association_diff_mean": res["correlation"]["mean_abs_difference"],
        "pmse_cart": res["pmse"]["cart"]["pmse"], "pmse_logistic": res["pmse"]["logistic"]["pmse"],
        "mmd2": res["mmd"]["mmd2"],
        "tstr": ml["mean"][ml["primary_metric"]]["synthetic"] if ml else None,
        "trtr": ml["mean"][ml["primary_metric"]]["real"] if ml else None,
        "exact_match_rate": res["privacy"]["exact_match_rate"],
    }
    res["readings"] = _readings(res)
    res["timings"] = timings
    res["seconds"] = round(time.perf_counter() - t0, 3)
    progress(1.0, "evaluation done")
    return to_jsonable(res)


def _normalise(schema: Schema, frame: pd.DataFrame) -> pd.DataFrame:
    """Kept columns only, numeric as float, categorical as str (synthetic integers may be int64)."""
    return pd.DataFrame({c.name: (frame[c.name].to_numpy(dtype=float) if c.is_numeric
                                  else frame[c.name].astype(str).to_numpy(dtype=object)) for c in schema.kept})


def to_jsonable(obj: Any) -> Any:
    """numpy scalars to Python, NaN / inf to None (strict JSON)."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if math.isfinite(f) else None
    return obj


# =================================================================================================
# CLI
# =================================================================================================

def undo_formula_guard(schema: Schema, raw: pd.DataFrame) -> pd.DataFrame:
    """Strip the quote :func:`mechanisms.io.spreadsheet_safe` put before risky categorical cells (a
    cell that is itself a declared category is left alone), so either download can be evaluated."""
    from .io import FORMULA_PREFIXES

    out = raw.copy()
    names = {c.name for c in schema.columns}
    out.columns = [str(c)[1:] if str(c).startswith("'") and str(c)[1:] in names and str(c)[1:].startswith(
        FORMULA_PREFIXES) else c for c in out.columns]  # the header row is guarded too
    for c in schema.kept:
        if c.kind == "categorical" and c.name in out:
            s = out[c.name]
            mask = s.str.startswith("'") & s.str[1:].str.startswith(FORMULA_PREFIXES) & ~s.isin(c.categories)
            if mask.any():
                out[c.name] = s.where(~mask, s.str[1:])
    return out


def load_prepared(schema: Schema, path: str, *, synthetic: bool = False) -> pd.DataFrame:
    try:
        raw = read_raw_csv(path)
    except OSError as exc:
        raise ValueError(f"cannot read {path!r}: {exc.strerror}") from None
    return prepare_table(schema, raw, synthetic=synthetic)


def prepare_table(schema: Schema, raw: pd.DataFrame, *, synthetic: bool) -> pd.DataFrame:
    """A table (CSV strings, a prepared frame or a mechanism's output) on the public scale. Excluded
    columns, which are never synthesized and dropped by preparation, are filled with blanks first;
    for a synthetic table the CSV formula guard is undone."""
    raw = raw.astype(str)
    if synthetic:
        raw = undo_formula_guard(schema, raw)
        marks = {schema.missing_text.strip(), ""}  # the output marker (mechanisms.io); empty cells of older files
        for c in schema.kept:
            if c.kind == "categorical" and MISSING_CATEGORY in c.categories and c.name in raw:
                raw[c.name] = raw[c.name].where(~raw[c.name].str.strip().isin(marks), MISSING_CATEGORY)
    for c in schema.columns:
        if c.kind == "excluded" and c.name not in raw:
            raw[c.name] = ""
    return schema.prepare(raw)


def cli(args) -> int:
    """``python -m mechanisms evaluate``: print a short summary (the whole evaluation as JSON with --json)."""
    try:
        with open(args.schema, encoding="utf-8") as fh:
            schema = Schema.from_json(fh.read())
    except OSError as exc:
        raise ValueError(f"cannot read schema {args.schema!r}: {exc.strerror}") from None
    if args.test and not args.target:
        raise ValueError("--test needs --target")
    real = load_prepared(schema, args.real)
    syn = load_prepared(schema, args.synthetic, synthetic=True)
    test = load_prepared(schema, args.test) if args.test else None
    res = evaluate(schema, real, syn, target=args.target, test=test, seed=getattr(args, "seed", 0) or 0,
                   fast=bool(getattr(args, "fast", False)))
    if getattr(args, "json", False) or getattr(args, "compact", False):
        json.dump(res, sys.stdout, indent=None if getattr(args, "compact", False) else 1, allow_nan=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(summary_text(res) + "\n")
    return 0


def summary_text(res: dict) -> str:
    """The evaluation in a few lines for a terminal: sizes, then one line per reading."""
    head = (f"Real rows {res['n_real']:,}, synthetic rows {res['n_synthetic']:,}; "
            f"evaluated in {res['seconds']:.1f} s. NOT PRIVATE: computed from the raw data.")
    width = max(len(r["metric"]) for r in res["readings"]) + 2
    lines = [head, ""] + [f"{r['metric']:<{width}}{_short_value(r['value'])}  {r['reading']}" for r in res["readings"]]
    lines += ["", "Every number and the per-column detail: add --json"]
    return "\n".join(lines)


def _short_value(v) -> str:
    return f"{v:>8.4f}" if isinstance(v, (int, float)) else f"{'n/a':>8}"
