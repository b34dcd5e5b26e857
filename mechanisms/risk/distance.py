"""Gower distances on the public encoding, and the two attacks read off them: the distance to the
closest synthetic record (``dcr``) and DOMIAS's density ratio (``density_ratio``), computed in one
distance pass per table."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..schema import Schema

CHUNK_CELLS = 2_000_000  # distance matrix entries per block


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


def row_blocks(n_rows: int, n_other: int):
    """Slices of ``n_rows`` rows whose distance matrix to ``n_other`` rows holds about CHUNK_CELLS entries."""
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
    for sl in row_blocks(len(A), len(B)):
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
    for sl in row_blocks(len(targets), len(reference)):
        D = gower_block(targets[sl], reference, numeric)
        ref_dist[sl] = D.min(axis=1)
        blocks.append((sl, D))
    h = max(float(np.median(ref_dist)), 0.01)
    for sl, D in blocks:
        log_ref[sl] = _lse_mean(-D / h)
    del blocks
    dcr = np.empty(len(targets))
    log_syn = np.empty(len(targets))
    for sl in row_blocks(len(targets), len(synthetic)):
        D = gower_block(targets[sl], synthetic, numeric)
        dcr[sl] = D.min(axis=1)
        log_syn[sl] = _lse_mean(-D / h)
    return {"dcr": -dcr, "density_ratio": log_syn - log_ref}
