"""The ``marginal_ratio`` attack: DOMIAS's density ratio with histogram densities on the public cells."""

from __future__ import annotations

import numpy as np


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
