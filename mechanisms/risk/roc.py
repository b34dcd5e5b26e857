"""ROC statistics of an attack's scores: AUC, TPR at a fixed FPR, the membership advantage."""

from __future__ import annotations

import numpy as np


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
