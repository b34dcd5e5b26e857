"""Baseline: independent noisy one-way marginals.

Each kept column's histogram over its PUBLIC cells (categories, or the schema's numeric bins) gets
discrete Laplace noise; the budget is split evenly across the d columns; each noisy histogram is fitted
to non-negative counts with the public n as total by least squares (``mechanisms.pgm.nonneg``: cells whose
noisy count falls below the fitted threshold get nothing, where clipping negatives would keep every positive
noise draw); synthetic columns are sampled independently (numeric values uniform within a bin).

Privacy (replace-one neighbours, n public): replacing one record moves one unit of count out of one
cell and into another in each column's histogram, so each histogram has L1 sensitivity 2. With
epsilon/d per column and discrete Laplace scale 2/(epsilon/d) = 2d/epsilon each histogram is
(epsilon/d)-DP; by basic composition over the d histograms the release is epsilon-DP (pure).
Fitting, normalising and sampling are post-processing.

Gaussian mode (``noise_type="gaussian"``, needs a delta): each histogram's L2 sensitivity is sqrt(2);
discrete Gaussian noise of std sigma on it is 2/(2 sigma^2) = 1/sigma^2-zCDP (Canonne, Kamath &
Steinke 2020), so the d histograms with sigma = sqrt(d / rho) are rho-zCDP together, rho being the
largest that converts to the requested (epsilon, delta) (:func:`~mechanisms.accounting.zcdp_rho`).
The noise then grows like sqrt(d) / sqrt(rho) instead of 2d / epsilon.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

import math

from ...accounting import GaussianEvent, LaplaceEvent, PrivacyCost, zcdp_rho
from ...base import NOISE_MODE, Mechanism, NoisyQuery
from ...noise import laplace_scale
from ...pgm.nonneg import nonnegative_shares
from ...source import TableSource
from . import guide

SENSITIVITY = 2  # L1 sensitivity of one histogram under replace-one


class Baseline(Mechanism):
    name = "baseline"
    title = "Independent noisy marginals (baseline)"
    paper = "Reference baseline: per-column discrete-Laplace histograms, columns sampled independently"
    cell_tables = 0  # reads source.cells() (chunked encoding) and counts its columns
    gaussian_mode = True
    guide = guide  # public inputs only: accuracy and near-uniform rule, run time, steward help, model quality
    speed_rank = 0
    target_structure = "independent"
    params = (NOISE_MODE,)

    def noise_scale(self) -> float:
        """Discrete Laplace scale 2d/epsilon, or discrete Gaussian std sqrt(d / rho) (module docstring)."""
        d = len(self.schema.kept)
        if self.params["noise_type"] == "gaussian":
            return math.sqrt(d / zcdp_rho(self.epsilon, self.delta))
        return laplace_scale(sensitivity=SENSITIVITY, epsilon=self.epsilon / d)

    def _fit(self, source: TableSource) -> None:
        cells = source.cells()
        d = cells.shape[1]
        scale = self.noise_scale()
        draw = self.noise.gaussian_int if self.params["noise_type"] == "gaussian" else self.noise.laplace_int
        self.noisy_counts = []
        for j, size in enumerate(self.schema.cell_sizes):
            counts = np.bincount(cells[:, j], minlength=size)
            self.noisy_counts.append(draw(counts, scale=scale))
            self.progress((j + 1) / d, f"noisy marginal {j + 1}/{d}")
        self.scale = scale
        self.measured_rows = int(cells.shape[0])  # public n: mechanisms.tables reads the noisy counts with it
        kind = "gaussian" if self.params["noise_type"] == "gaussian" else "laplace"
        self._noisy_queries = [
            NoisyQuery(np.asarray(y, float), scale, kind, cells=lambda c, j=j: c[:, j])
            for j, y in enumerate(self.noisy_counts)
        ]

    def sample(self, n: int) -> pd.DataFrame:
        n = self._check_rows(n)
        rng = self.noise.rng
        cols = []
        rows = getattr(self, "measured_rows", None)  # the public n (absent from older summaries)
        for counts in self.noisy_counts:
            total = rows if rows is not None else float(np.clip(counts, 0, None).sum())
            cols.append(rng.choice(len(counts), size=n, p=nonnegative_shares(counts, total)))
        return self.schema.from_cells(np.column_stack(cols), rng)

    def privacy_cost(self) -> PrivacyCost:
        d = len(self.schema.kept)
        independent = "columns are synthesised independently: correlations between columns are not preserved"
        if self.params["noise_type"] == "gaussian":
            rho = zcdp_rho(self.epsilon, self.delta)
            return PrivacyCost(
                epsilon=self.epsilon,
                delta=self.delta,
                guarantee="approximate",
                caveats=(
                    independent,
                    f"accounted in zero-concentrated DP: rho = {rho:.6g} for the d histograms, "
                    "converted to the requested (epsilon, delta) by the Canonne-Kamath-Steinke bound",
                ),
                details={
                    "zcdp_rho": rho,
                    "histogram_l2_sensitivity": "sqrt(2)",
                    "discrete_gaussian_sigma": self.noise_scale(),
                },
                events=(
                    GaussianEvent(
                        self.noise_scale(), math.sqrt(2), count=d, discrete=True, label="one histogram per column"
                    ),
                ),
            )
        return PrivacyCost(
            epsilon=self.epsilon,
            delta=0.0,
            guarantee="pure",
            caveats=(independent,),
            details={
                "per_column_epsilon": self.epsilon / d,
                "histogram_l1_sensitivity": SENSITIVITY,
                "discrete_laplace_scale": 2 * d / self.epsilon,
            },
            events=(
                LaplaceEvent(self.noise_scale(), SENSITIVITY, count=d, discrete=True, label="one histogram per column"),
            ),
        )

    def summary(self) -> dict[str, Any]:
        return {f"counts_{j}": c for j, c in enumerate(self.noisy_counts)} | {"measured_rows": self.measured_rows}

    def _load_summary(self, summary: dict[str, Any]) -> None:
        self.noisy_counts = [np.asarray(summary[f"counts_{j}"]) for j in range(len(self.schema.kept))]
        self.measured_rows = summary.get("measured_rows")
