"""Rows of a table as vectors for the classifiers, kernels and distances, and the subsampling of rows
every subsampled section states."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd

from ..schema import Schema

MAX_ONEHOT = 32  # more levels: the 31 most frequent (real) + "rest"; bounds memory (50k rows x 20 cols x 32)


class Encoder:
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
                self.keep[c.name] = np.sort(order[: MAX_ONEHOT - 1])

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


def subsample_rows(n: int, cap: int, rng: np.random.Generator) -> np.ndarray:
    return np.sort(rng.choice(n, size=cap, replace=False)) if n > cap else np.arange(n)


def sample_note(used: int, total: int) -> dict:
    return {"rows_used": int(used), "rows_total": int(total), "fraction": round(used / total, 6) if total else 1.0}
