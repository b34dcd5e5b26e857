"""Tables with error bars: the crosstabs a release publishes, each cell with its noisy count, a consistent
estimate, a standard error and a 95% interval.

* ``measured`` -- :func:`measured_tables`: the noisy marginals a fitted baseline, MST or AIM release
  already measured, with the model's answer beside each cell (post-processing: no privacy cost).
* ``residual`` -- ResidualPlanner (Xiao, He, Zhang & Kifer, NeurIPS 2023): the least-noise Gaussian
  measurement of a set of marginal tables, its exact replace-one cost and the exact variance of every cell.
* ``spec`` -- the steward's list of tables, checked against the schema; ``cells`` -- the tables' JSON form
  and the exact intervals of discrete noise.
* :class:`TablesRelease` -- the tables release (registered as ``crosstabs``): the named tables measured by
  ResidualPlanner, published with exact standard errors and intervals, and a synthetic file drawn from a
  Private-PGM model fitted to the same tables (post-processing).

Privacy of the tables release (replace-one neighbours, n public): the residual measurements are rho-zCDP
with rho the largest that converts to the requested (epsilon, delta) (:func:`~mechanisms.accounting.zcdp_rho`);
the derivation of the exact replace-one cost of the residuals is in ``residual``. The tables, the
non-negative tables, the model and the synthetic rows are computed from the noisy residuals and the public
n only (post-processing).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ..accounting import PrivacyCost, ZCDPEvent, zcdp_epsilon, zcdp_rho
from ..base import Mechanism, NoisyQuery, ParamSpec
from ..source import TableSource
from . import guide
from .cells import Z95, table_json
from .measured import measured_tables
from .residual import Residuals, allocate, coordinates, helmert, measure_residuals, replace_one_rho
from .spec import TableSpec, parse_tables

__all__ = ["measured_tables", "TablesRelease", "parse_tables", "TableSpec", "tables_json"]

# the pseudo-measurement that keeps a column no table names in the model: uniform, with a noise std this many
# times n (it carries no information; its columns are drawn evenly)
UNINFORMED_SIGMA_ROWS = 1e6
MAX_MODEL_MIB = 80.0  # the consistent model's junction tree (AIM's default limit): estimation time and memory

INTERVAL = (
    "lo/hi: exact 95% interval for the true count: noisy +- 1.96 se (noisy is the unbiased linear estimate "
    "from the Gaussian residual measurements, se its exact standard deviation)"
)
INTERVAL_NONNEGATIVE = (
    INTERVAL + "; lo is raised to 0 where negative (a count is never negative: the coverage is unchanged); "
    "estimate is the non-negative consistent model's count, the interval is that of the unconstrained estimate"
)


class TablesRelease(Mechanism):
    """The steward's crosstabs measured by ResidualPlanner (``residual``): ``fit`` measures the residuals,
    :meth:`tables` publishes them, :meth:`sample` draws a synthetic file from the Private-PGM model fitted to
    the published tables (post-processing). The summary keeps the noisy residuals, so the tables can be
    published again from a stored release."""

    name = "crosstabs"
    title = "Crosstabs with error bars (ResidualPlanner)"
    paper = "Xiao, He, Zhang & Kifer, NeurIPS 2023 (ResidualPlanner); Private-PGM for the consistent synthetic file"
    needs_delta = True
    guide = guide  # public inputs only: the default tables' file accuracy, run time, steward help
    speed_rank = 9
    target_structure = "independent"  # the default tables (each column alone); named tables are joint
    params = (
        ParamSpec(
            "tables",
            "str",
            None,
            "Crosstabs to publish, 1-3 columns each: tables separated by ';', columns by ',' (e.g. "
            "'sex,income;age/5,education'); 'column/k' groups a numeric column's cells k at a time; empty: every "
            "column on its own",
            optional=True,
            empty_means="every column on its own",
        ),
        ParamSpec(
            "nonnegative",
            "bool",
            False,
            "Publish non-negative counts (the consistent Private-PGM model's tables); the intervals are those of "
            "the unconstrained estimate",
        ),
        ParamSpec(
            "iters",
            "int",
            1000,
            "Mirror-descent iterations of the Private-PGM model the synthetic file and non-negative tables come "
            "from (no privacy cost)",
            50,
            100_000,
        ),
    )

    def __init__(self, schema, **kw):
        super().__init__(schema, **kw)
        self.spec = parse_tables(self.params["tables"], schema)

    # -- plan: public inputs only ------------------------------------------------------------------
    def noise_plan(self) -> dict[tuple[str, ...], float]:
        """Noise std of every residual (ResidualPlanner's allocation at this epsilon and delta)."""
        sizes = self.spec.sizes(self.schema)
        return allocate(self.spec.tables, sizes, zcdp_rho(self.epsilon, self.delta), self.spec.columns)

    def standard_errors(self) -> dict[tuple[str, ...], float]:
        """Every table's cell standard error, before any data is read (public: schema, tables, budget)."""
        plan = Residuals(self.spec.sizes(self.schema), self.noise_plan(), {}, 0)
        return {t: math.sqrt(plan.variance(t)) for t in self.spec.tables}

    def check_plan(self, n: int) -> None:
        """Refuse, before any budget, tables whose consistent model (the synthetic file's) would exceed
        ``MAX_MODEL_MIB`` (tables that form a cycle join into larger cliques). Public inputs only."""
        from ..pgm import JunctionTreeSize

        sizes = {c: self.schema.column(c).n_cells for c in self.schema.names}
        sizes.update(self.spec.sizes(self.schema))
        names = self.schema.names
        mib = JunctionTreeSize(names, [sizes[c] for c in names]).size_mb(list(self.spec.tables))
        if mib > MAX_MODEL_MIB:
            raise ValueError(
                f"crosstabs: the model the synthetic file is drawn from would need {mib:,.0f} MiB for the tables "
                f"{self.spec.text()!r}, above the limit of {MAX_MODEL_MIB:g} MiB: tables that form a cycle are "
                "joined into larger cells; name fewer tables, fewer columns, or group numeric columns (column/k)"
            )

    # -- fit: the only step that reads private data ------------------------------------------------
    def _fit(self, source: TableSource) -> None:
        from ..pgm import CellTable

        cells = self.schema.to_cells(source.frame())
        columns = self.spec.columns
        mapped = np.column_stack(
            [self.spec.cell_map(self.schema, c)[cells[:, self.schema.names.index(c)]] for c in columns]
        )
        sizes = self.spec.sizes(self.schema)
        table = CellTable(mapped, columns, [sizes[c] for c in columns])
        self.progress(0.1, "measuring the tables' residuals")
        self.residuals = measure_residuals(table.counts, sizes, self.noise_plan(), table.n, self.noise)
        self.measured_rows = table.n
        self._model = None
        self._noisy_queries = [
            NoisyQuery(
                coordinates(self.residuals.values[a], [self.residuals.sizes[c] for c in a]).ravel(),
                s,
                "gaussian",
                dense=lambda frame, a=a: self._contributions(frame, a),
            )
            for a, s in self.residuals.sigmas.items()
        ]
        self.progress(1.0, "tables measured")

    def _contributions(self, frame: pd.DataFrame, attrs: tuple[str, ...]) -> np.ndarray:
        """Each record's contribution to the residual coordinates U_A^T x_A (rows x coordinates): the Kronecker
        product of the Helmert rows of its cells. For the risk report's implementation check
        (:meth:`noisy_queries`); public maps of the record only."""
        cells = self.schema.to_cells(frame)
        out = np.ones((len(frame), 1))
        for c in attrs:
            idx = self.spec.cell_map(self.schema, c)[cells[:, self.schema.names.index(c)]]
            rows = helmert(self.residuals.sizes[c])[idx]
            out = (out[:, :, None] * rows[:, None, :]).reshape(len(frame), -1)
        return out

    # -- post-processing -------------------------------------------------------------------------
    def tables(self) -> dict:
        """The published tables in the tables' JSON contract (mechanisms/tables/cells.py)."""
        if getattr(self, "residuals", None) is None:
            raise RuntimeError("tables() needs fit() (or from_summary()) first")
        return tables_json(self)

    def model(self):
        """The Private-PGM model fitted to the published tables (each table's unbiased estimate with its exact
        standard error, the public n as total): what the synthetic file and non-negative tables come from."""
        if getattr(self, "_model", None) is None:
            from ..pgm import Measurement, Measurements, ModelTables, estimate, load_mbi, release_programs

            mbi = load_mbi()
            sizes = {c: self.schema.column(c).n_cells for c in self.schema.names}
            sizes.update(self.residuals.sizes)
            log = Measurements()
            for t in self.spec.tables:
                se = math.sqrt(self.residuals.variance(t)) or 1.0
                log.add(Measurement(t, self.residuals.table(t).ravel(), se))
            n = self.residuals.rows
            for c in self.schema.names:
                if c not in self.residuals.sizes:
                    log.add(Measurement((c,), np.full(sizes[c], n / sizes[c]), UNINFORMED_SIGMA_ROWS * max(n, 1)))
            fitted = estimate(mbi, sizes, self.schema.names, log, total=n, iters=self.params["iters"])
            self._model = ModelTables.from_model(mbi, fitted, self.schema.names, sizes)
            release_programs()
        return self._model

    def sample(self, n: int) -> pd.DataFrame:
        n = self._check_rows(n)
        rng = self.noise.rng
        cells = self.model().sample(n, rng)
        for j, c in enumerate(self.schema.names):  # a grouped column: a coarse cell decodes to one of its cells
            if c in self.residuals.sizes and self.spec.group[c] > 1:
                cmap = self.spec.cell_map(self.schema, c)
                coarse, pick = cells[:, j].copy(), rng.random(n)
                for g in range(self.residuals.sizes[c]):
                    members, rows = np.flatnonzero(cmap == g), coarse == g
                    cells[rows, j] = members[(pick[rows] * members.size).astype(np.int64)]
        return self.schema.from_cells(cells, rng)

    def privacy_cost(self) -> PrivacyCost:
        rho = zcdp_rho(self.epsilon, self.delta)
        sigmas = self.noise_plan()
        sizes = self.spec.sizes(self.schema)
        return PrivacyCost(
            epsilon=self.epsilon,
            delta=self.delta,
            guarantee="approximate",
            caveats=(
                f"accounted in zero-concentrated DP inside the release: rho = {rho:.6g} for the Gaussian residual "
                "measurements, converted to the requested (epsilon, delta) by the Canonne-Kamath-Steinke bound",
                "the tables' intervals are exact for the mechanism (Gaussian noise of known covariance); the "
                "synthetic file is drawn from a model fitted to the tables: its other relations come from the "
                "model's conditional-independence assumptions; columns no table names are drawn evenly over their "
                "cells",
            ),
            details={
                "zcdp_rho": rho,
                "epsilon_from_rho": zcdp_epsilon(rho, self.delta),
                "replace_one_rho_of_plan": replace_one_rho(sigmas, sizes) if sigmas else 0.0,
                "tables": self.spec.text(),
                "residual_sigmas": {",".join(a): s for a, s in sigmas.items()},
                "cell_standard_errors": {",".join(t): s for t, s in self.standard_errors().items()},
            },
            events=(ZCDPEvent(replace_one_rho(sigmas, sizes), label="Gaussian residual measurements"),)
            if sigmas
            else (),
        )

    def report(self) -> dict:
        errors = {",".join(t): s for t, s in self.standard_errors().items()}
        return {"tables": self.spec.text(), "cell_standard_errors": errors}

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "residual_cliques": [list(a) for a in self.residuals.values],
            "residual_sigmas": [self.residuals.sigmas[a] for a in self.residuals.values],
            "residual_sizes": self.residuals.sizes,
            "rows": self.residuals.rows,
        }
        for i, y in enumerate(self.residuals.values.values()):
            out[f"residual_{i}"] = y
        out.update(self.model().to_summary())
        return out

    def _load_summary(self, summary: dict[str, Any]) -> None:
        from ..pgm import ModelTables

        cliques = [tuple(a) for a in summary["residual_cliques"]]
        sizes = {c: int(k) for c, k in summary["residual_sizes"].items()}
        self.residuals = Residuals(
            sizes,
            dict(zip(cliques, (float(s) for s in summary["residual_sigmas"]))),
            {a: np.asarray(summary[f"residual_{i}"], dtype=np.float64) for i, a in enumerate(cliques)},
            int(summary["rows"]),
        )
        self.measured_rows = self.residuals.rows
        full = {c: self.schema.column(c).n_cells for c in self.schema.names}
        full.update(sizes)
        self._model = ModelTables.from_summary(summary, self.schema.names, full)


def tables_json(mech: TablesRelease) -> dict:
    """The tables release's tables: for each table every cell's unbiased estimate (``noisy``), the published
    ``estimate`` (the same, or the non-negative model's count), its exact standard error and 95% interval."""
    res, spec, nonneg = mech.residuals, mech.spec, mech.params["nonnegative"]
    model = mech.model() if nonneg else None
    out = []
    for t in spec.tables:
        noisy = res.table(t).ravel()
        se = math.sqrt(res.variance(t))
        estimate = model.marginal(t).ravel() * res.rows if nonneg else noisy
        lo, hi = noisy - Z95 * se, noisy + Z95 * se
        values = _labels(mech, t)
        out.append(
            table_json(
                t,
                values,
                noisy=noisy,
                estimate=estimate,
                se=se,
                lo=np.maximum(lo, 0.0) if nonneg else lo,
                hi=hi,
                noise={
                    "distribution": "gaussian",
                    "sigma": se,
                    "what": "the cell estimate's exact standard deviation (ResidualPlanner's residuals "
                    "measured with Gaussian noise; the estimate is a linear combination of them)",
                    "residual_sigmas": {",".join(a): s for a, s in res.sigmas.items() if set(a) <= set(t)},
                },
                interval=INTERVAL_NONNEGATIVE if nonneg else INTERVAL,
            )
        )
    return {
        "tables": out,
        "epsilon": mech.epsilon,
        "delta": mech.delta,
        "mechanism": mech.name,
        "rows": res.rows,
        "nonnegative": bool(nonneg),
        "cost": "the release's own epsilon and delta: these tables are what it measured",
    }


def _labels(mech: TablesRelease, table: tuple[str, ...]) -> list[list[str]]:
    import itertools

    per = [mech.spec.labels(mech.schema, c) for c in table]
    return [list(v) for v in itertools.product(*per)]
