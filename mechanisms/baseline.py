"""Baseline: independent noisy one-way marginals.

Each kept column's histogram over its PUBLIC cells (categories, or the schema's numeric bins) gets
discrete Laplace noise; the budget is split evenly across the d columns; negative counts are
clipped to zero; synthetic columns are sampled independently (numeric values uniform within a bin).

Privacy (replace-one neighbours, n public): replacing one record moves one unit of count out of one
cell and into another in each column's histogram, so each histogram has L1 sensitivity 2. With
epsilon/d per column and discrete Laplace scale 2/(epsilon/d) = 2d/epsilon each histogram is
(epsilon/d)-DP; by basic composition over the d histograms the release is epsilon-DP (pure).
Clipping, normalising and sampling are post-processing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .accounting import PrivacyCost
from .base import Mechanism
from .noise import laplace_scale
from .schema import TableSource

SENSITIVITY = 2  # L1 sensitivity of one histogram under replace-one


class Baseline(Mechanism):
    name = "baseline"
    title = "Independent noisy marginals (baseline)"
    paper = "Reference baseline: per-column discrete-Laplace histograms, columns sampled independently"
    params = ()

    def _fit(self, source: TableSource) -> None:
        cells = self.schema.to_cells(source.frame())
        d = cells.shape[1]
        scale = laplace_scale(sensitivity=SENSITIVITY, epsilon=self.epsilon / d)
        self.noisy_counts = []
        for j, size in enumerate(self.schema.cell_sizes):
            counts = np.bincount(cells[:, j], minlength=size)
            self.noisy_counts.append(self.noise.laplace_int(counts, scale=scale))
            self.progress((j + 1) / d, f"noisy marginal {j + 1}/{d}")
        self.scale = scale

    def sample(self, n: int) -> pd.DataFrame:
        n = self._check_rows(n)
        rng = self.noise.rng
        cols = []
        for counts in self.noisy_counts:
            w = np.clip(counts, 0, None).astype(float)
            p = w / w.sum() if w.sum() > 0 else np.full(len(w), 1.0 / len(w))
            cols.append(rng.choice(len(p), size=n, p=p))
        return self.schema.from_cells(np.column_stack(cols), rng)

    def privacy_cost(self) -> PrivacyCost:
        d = len(self.schema.kept)
        return PrivacyCost(
            epsilon=self.epsilon, delta=0.0, guarantee="pure",
            caveats=("columns are synthesised independently: correlations between columns are not preserved",),
            details={"per_column_epsilon": self.epsilon / d, "histogram_l1_sensitivity": SENSITIVITY,
                     "discrete_laplace_scale": 2 * d / self.epsilon},
        )

    def summary(self) -> dict[str, Any]:
        return {f"counts_{j}": c for j, c in enumerate(self.noisy_counts)}

    def _load_summary(self, summary: dict[str, Any]) -> None:
        self.noisy_counts = [np.asarray(summary[f"counts_{j}"]) for j in range(len(self.schema.kept))]
