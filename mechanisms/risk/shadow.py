"""The ``shadow_model`` attack: a classifier on the other attacks' scores, trained on a shadow game."""

from __future__ import annotations

import numpy as np

from .game import BASE_ATTACKS


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
