"""Train on synthetic, test on real (TSTR): the twelve classifier families of the DP-MERF evaluation,
beside the train-on-real baseline (NOT PRIVATE: computed from the raw data, steward-only)."""

from __future__ import annotations

import time
import warnings
from typing import Callable

import numpy as np
import pandas as pd
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.ensemble import (
    AdaBoostClassifier,
    BaggingClassifier,
    GradientBoostingClassifier,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, average_precision_score, f1_score, roc_auc_score
from sklearn.naive_bayes import BernoulliNB, GaussianNB
from sklearn.neural_network import MLPClassifier
from sklearn.svm import LinearSVC
from sklearn.tree import DecisionTreeClassifier

from ..schema import Schema
from .encoding import Encoder, sample_note, subsample_rows
from .readings import chance_level

ProgressFn = Callable[[float, str], None]

TSTR_MAX_TRAIN = 10_000  # training rows per classifier: 24 fits stay under ~25 s on 2 busy cores
TSTR_MAX_TEST = 20_000  # scoring is cheap
TSTR_FAST_TRAIN = 3_000  # fast mode (web worker): fewer rows ...
TSTR_FAST_TEST = 5_000
TSTR_MIN_ROWS = 100  # fewer real rows than this: no TSTR (a 20-row test split says nothing)
TSTR_HOLDOUT_FRACTION = 0.2  # real rows held out for testing when no test file is given


# The twelve classifier families of the DP-MERF evaluation (HistGradientBoosting stands in for XGBoost,
# which is not installed): the one list TSTR and the papers' reproductions build their models from.
CLASSIFIER_FAMILIES: dict[str, type] = {
    "logistic_regression": LogisticRegression,
    "gaussian_nb": GaussianNB,
    "bernoulli_nb": BernoulliNB,
    "linear_svm": LinearSVC,
    "decision_tree": DecisionTreeClassifier,
    "lda": LinearDiscriminantAnalysis,
    "adaboost": AdaBoostClassifier,
    "bagging": BaggingClassifier,
    "random_forest": RandomForestClassifier,
    "gradient_boosting": GradientBoostingClassifier,
    "mlp": MLPClassifier,
    "hist_gradient_boosting (xgboost stand-in)": HistGradientBoostingClassifier,
}
SEEDED_FAMILIES = frozenset(
    ("decision_tree", "adaboost", "bagging", "random_forest", "gradient_boosting", "mlp")
    + ("hist_gradient_boosting (xgboost stand-in)",)
)  # the families given random_state=seed


def classifiers(
    settings: dict[str, dict] | None = None,
    *,
    seed: int = 0,
    scaled: tuple[str, ...] = (),
    only: tuple[str, ...] | None = None,
) -> dict:
    """One model per family of ``CLASSIFIER_FAMILIES`` (``only``: a subset, in that order), built with
    ``settings[family]`` as keyword arguments (scikit-learn's defaults otherwise), ``random_state=seed``
    for the families in ``SEEDED_FAMILIES``, and the families in ``scaled`` behind a StandardScaler."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    settings = settings or {}
    unknown = set(settings) | set(scaled) | set(only or ())
    unknown -= set(CLASSIFIER_FAMILIES)
    if unknown:
        raise ValueError(f"unknown classifier families {sorted(unknown)}: known are {list(CLASSIFIER_FAMILIES)}")
    out = {}
    for name in only or tuple(CLASSIFIER_FAMILIES):
        kw = ({"random_state": seed} if name in SEEDED_FAMILIES else {}) | settings.get(name, {})
        model = CLASSIFIER_FAMILIES[name](**kw)
        out[name] = make_pipeline(StandardScaler(), model) if name in scaled else model
    return out


def tstr_models(fast: bool, seed: int) -> dict:
    """The twelve classifier families with fast settings (fewer trees and iterations, subsampled
    bagging / boosting as in the DP-MERF benchmark's tuned specs)."""
    trees = 20 if fast else 50
    return classifiers(
        {
            "logistic_regression": {"max_iter": 1000},
            "bernoulli_nb": {"alpha": 0.02, "binarize": 0.25},
            "linear_svm": {"max_iter": 2000},
            "lda": {"solver": "lsqr", "shrinkage": "auto"},
            "adaboost": {"n_estimators": trees},
            "bagging": {"n_estimators": 10, "max_samples": 0.5},
            "random_forest": {"n_estimators": trees},
            "gradient_boosting": {"n_estimators": trees, "subsample": 0.5},
            "mlp": {"hidden_layer_sizes": (100,), "max_iter": 100 if fast else 200, "early_stopping": True},
            "hist_gradient_boosting (xgboost stand-in)": {"max_iter": 50},
        },
        seed=seed,
    )


def _scores(model, X: np.ndarray) -> np.ndarray:
    if hasattr(model, "predict_proba"):
        return model.predict_proba(X)
    s = model.decision_function(X)
    return s if s.ndim == 2 else np.c_[-s, s]


def _classification_metrics(
    y: np.ndarray, classes: np.ndarray, model, X: np.ndarray, n_classes: int, binary: bool
) -> dict:
    pred = model.predict(X)
    out = {
        "accuracy": float(accuracy_score(y, pred)),
        "macro_f1": float(f1_score(y, pred, average="macro", labels=np.arange(n_classes), zero_division=0)),
    }
    if binary:
        S = _scores(model, X)
        pos = S[:, list(classes).index(1)] if 1 in classes else np.zeros(len(X))
        if len(np.unique(y)) == 2:
            out["roc_auc"] = float(roc_auc_score(y, pos))
            out["prc_auc"] = float(average_precision_score(y, pos))
    return out


def ml_section(
    schema: Schema,
    real: pd.DataFrame,
    syn: pd.DataFrame,
    test: pd.DataFrame | None,
    target: str,
    *,
    fast: bool,
    rng: np.random.Generator,
    progress: ProgressFn,
) -> dict:
    col = schema.column(target)
    if col.kind == "excluded" or target not in schema.names:
        raise ValueError(f"target must be a kept column of the schema, got target={target!r}")
    j = schema.names.index(target)
    if test is None:
        perm = rng.permutation(len(real))
        n_test = max(1, int(round(TSTR_HOLDOUT_FRACTION * len(real))))
        test, train_real = real.iloc[perm[:n_test]], real.iloc[perm[n_test:]]
        test_note = (
            f"{int(TSTR_HOLDOUT_FRACTION * 100)}% of the real rows held out (the synthesizer saw "
            "them, so the scores are slightly optimistic)"
        )
    else:
        train_real = real
        test_note = "separate real test file"
    max_train = TSTR_FAST_TRAIN if fast else TSTR_MAX_TRAIN
    max_test = TSTR_FAST_TEST if fast else TSTR_MAX_TEST
    syn_tr = syn.iloc[subsample_rows(len(syn), max_train, rng)]
    real_tr = train_real.iloc[subsample_rows(len(train_real), max_train, rng)]
    test = test.iloc[subsample_rows(len(test), max_test, rng)]
    enc = Encoder(schema, real, exclude=(target,))
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
    for name_i, (label, (Xtr, ytr)) in enumerate(
        [
            ("synthetic", (enc.transform(syn_tr), ysyn)),
            ("real", (enc.transform(real_tr), np.searchsorted(classes, yreal))),
        ]
    ):
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

    summary = {
        k: {"synthetic": mean_of("synthetic", k), "real": mean_of("real", k)}
        for k in (("roc_auc", "prc_auc", "accuracy", "macro_f1") if binary else ("accuracy", "macro_f1"))
    }
    labels = col.cell_labels()
    shares = np.bincount(yte, minlength=n_classes) / max(len(yte), 1)
    return {
        "target": target,
        "task": "binary" if binary else f"multiclass ({n_classes} classes)",
        "chance": chance_level(metric, shares.tolist()),
        "classes": [labels[c] for c in classes],
        "synthetic_rows_of_unseen_class": int((~known).sum()),
        "primary_metric": metric,
        "test": test_note,
        "fast": fast,
        "train_rows": sample_note(len(syn_tr), len(syn)),
        "test_rows": len(test),
        "mean": summary,
        "models": results,
        "note": "ROC/PRC AUC from predicted scores (the DP-MERF code used hard labels); "
        "HistGradientBoosting stands in for XGBoost",
    }
