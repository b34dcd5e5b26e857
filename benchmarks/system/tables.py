"""The tables release on a real table: coverage of its 95% intervals and its error per cell, against measuring
each table on its own with the Gaussian mechanism, dpportal's sampler and OpenDP's, at the same budget.

    .venv/bin/python -m benchmarks.system.tables --runs 200 --epsilon 0.1 1 --out docs/data/tables.json

(``make bench-tables``; docs/benchmarks/tables.md shows the figures.) Every run measures the same tables of
UCI Adult (32,561 rows) afresh; the true counts are known, so each run's 95% intervals either contain them or
not. Compared, per cell, at the same (epsilon, delta) under replace-one neighbours, all accounted in zCDP:

* ``residual``: the tables release (ResidualPlanner, mechanisms/tables/residual.py), dpportal's seeded
  Gaussian sampler; the secure backend samples the same law through OpenDP: its coverage is measured on
  ``--secure-runs`` more runs, and one secure run is timed;
* ``per-table``: each of the k tables measured on its own with discrete Gaussian noise, rho / k each
  (sigma = sqrt(k / rho): L2 sensitivity sqrt(2));
* ``opendp``: OpenDP's own histogram measurement, ``make_count_by_categories >> then_gaussian``, its scale found
  by OpenDP's ``binary_search_param`` so that its own privacy map at a replaced record (symmetric distance 2)
  spends rho / k per table (OpenDP bounds that L2 sensitivity by 2, not sqrt(2)). The counts are computed once
  and OpenDP's Gaussian measurement is invoked on them each run (the same law as the chain).

Seeded noise (benchmarks only): reruns give the same figures, except OpenDP's draws (its own entropy).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from benchmarks.harness.datasets import dataset_path
from mechanisms.accounting import zcdp_rho
from mechanisms.noise import Noise
from mechanisms.pgm import CellTable
from mechanisms.schema import Schema
from mechanisms.source import read_raw_csv
from mechanisms.tables import TablesRelease
from mechanisms.tables.cells import Z95
from mechanisms.tables.residual import measure_residuals

ROOT = Path(__file__).resolve().parents[2]
TABLES = "sex,income;education,income;age,sex,income;race,sex;hours-per-week/2,sex,income"


def _setup(epsilon: float, delta: float, tables: str):
    schema = Schema.from_json((ROOT / "benchmarks" / "schemas" / "adult.json").read_text())
    raw = read_raw_csv(dataset_path("adult.csv"))
    mech = TablesRelease(schema, epsilon=epsilon, delta=delta, tables=tables)
    cells = schema.to_cells(schema.prepare(raw))
    spec, columns = mech.spec, mech.spec.columns
    mapped = np.column_stack([spec.cell_map(schema, c)[cells[:, schema.names.index(c)]] for c in columns])
    sizes = spec.sizes(schema)
    return schema, mech, CellTable(mapped, columns, [sizes[c] for c in columns])


def _opendp_scale(categories: int, rho: float) -> float:
    import opendp.prelude as dp

    dp.enable_features("contrib")
    cats = [str(i) for i in range(categories)]
    domain = dp.vector_domain(dp.atom_domain(T=str))
    count = dp.t.make_count_by_categories(
        domain, dp.symmetric_distance(), categories=cats, null_category=False, MO="L2Distance<int>", TOA=int
    )
    return float(dp.binary_search_param(lambda s: count >> dp.m.then_gaussian(s), d_in=2, d_out=rho))


def _opendp_gaussian(scale: float):
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp.m.make_gaussian(dp.vector_domain(dp.atom_domain(T=int)), dp.l2_distance(T=int), scale=scale)


def run(epsilon: float, delta: float, runs: int, tables: str, secure_runs: int = 40) -> dict:
    schema, mech, table = _setup(epsilon, delta, tables)
    rho = zcdp_rho(epsilon, delta)
    sigmas, sizes = mech.noise_plan(), mech.spec.sizes(schema)
    k = len(mech.spec.tables)
    truth = {t: table.counts(t).astype(float) for t in mech.spec.tables}
    per_table_sigma = math.sqrt(k / rho)
    opendp_scale = {t: _opendp_scale(truth[t].size, rho / k) for t in mech.spec.tables}
    opendp = {t: _opendp_gaussian(s) for t, s in opendp_scale.items()}

    t0 = time.perf_counter()
    secure = measure_residuals(table.counts, sizes, sigmas, table.n, Noise.secure_backend())
    secure_seconds = time.perf_counter() - t0
    assert abs(secure.table(mech.spec.tables[0]).sum() - table.n) < 1e-6
    secure_hits = secure_cells = 0  # the production sampler (OpenDP's): the same law, checked on fewer runs
    for _ in range(secure_runs):
        res = measure_residuals(table.counts, sizes, sigmas, table.n, Noise.secure_backend())
        for t in truth:
            ok = np.abs(res.table(t).ravel() - truth[t]) <= Z95 * math.sqrt(res.variance(t))
            secure_hits, secure_cells = secure_hits + int(ok.sum()), secure_cells + ok.size

    sq = {name: {t: 0.0 for t in truth} for name in ("residual", "per-table", "opendp")}
    hits = {t: 0 for t in truth}
    run_coverage = []
    margin_gap = 0.0
    t0 = time.perf_counter()
    for r in range(runs):
        res = measure_residuals(table.counts, sizes, sigmas, table.n, Noise.seeded(r))
        noise = Noise.seeded(10_000 + r)
        inside = cells = 0
        for t in truth:
            est, se = res.table(t).ravel(), math.sqrt(res.variance(t))
            ok = np.abs(est - truth[t]) <= Z95 * se
            hits[t] += int(ok.sum())
            inside, cells = inside + int(ok.sum()), cells + ok.size
            sq["residual"][t] += float(((est - truth[t]) ** 2).sum())
            pt = noise.gaussian_int(truth[t].astype(np.int64), scale=per_table_sigma)
            sq["per-table"][t] += float(((pt - truth[t]) ** 2).sum())
            od = np.asarray(opendp[t](truth[t].astype(np.int64).tolist()), dtype=float)
            sq["opendp"][t] += float(((od - truth[t]) ** 2).sum())
        run_coverage.append(inside / cells)
        sex_income = res.table(("sex", "income"))
        for t in mech.spec.tables:  # every table that holds sex and income, summed down to them
            if {"sex", "income"} <= set(t) and t != ("sex", "income"):
                other = res.table(t)
                axes = tuple(i for i, c in enumerate(t) if c not in ("sex", "income"))
                margin_gap = max(margin_gap, float(np.abs(other.sum(axis=axes) - sex_income).max()))
    seconds = time.perf_counter() - t0

    per_table = []
    for t in truth:
        n_cells = truth[t].size * runs
        per_table.append(
            {
                "table": ",".join(t),
                "cells": int(truth[t].size),
                "coverage": hits[t] / n_cells,
                "stated_se": math.sqrt(secure.variance(t)),
                "rmse_residual": math.sqrt(sq["residual"][t] / n_cells),
                "rmse_per_table": math.sqrt(sq["per-table"][t] / n_cells),
                "rmse_opendp": math.sqrt(sq["opendp"][t] / n_cells),
                "opendp_scale": opendp_scale[t],
            }
        )
    all_cells = sum(truth[t].size for t in truth) * runs
    cov = np.array(run_coverage)
    return {
        "dataset": "adult",
        "rows": table.n,
        "tables": mech.spec.text(),
        "epsilon": epsilon,
        "delta": delta,
        "rho": rho,
        "runs": runs,
        "coverage": sum(hits.values()) / all_cells,
        "coverage_run_spread": [float(cov.min()), float(cov.max())],
        "coverage_95ci_over_runs": [
            float(cov.mean() - 1.96 * cov.std(ddof=1) / math.sqrt(runs)),
            float(cov.mean() + 1.96 * cov.std(ddof=1) / math.sqrt(runs)),
        ],
        "rmse_residual": math.sqrt(sum(sq["residual"].values()) / all_cells),
        "rmse_per_table": math.sqrt(sum(sq["per-table"].values()) / all_cells),
        "rmse_opendp": math.sqrt(sum(sq["opendp"].values()) / all_cells),
        "per_table_sigma": per_table_sigma,
        "largest_shared_margin_gap": margin_gap,
        "secure_runs": secure_runs,
        "secure_coverage": secure_hits / secure_cells if secure_cells else None,
        "seconds_per_run": seconds / runs,
        "seconds_secure_run": secure_seconds,
        "per_table": per_table,
    }


def markdown(result: dict) -> str:
    r = result
    lines = [
        f"adult ({r['rows']:,} rows), tables `{r['tables']}`, epsilon {r['epsilon']:g}, delta {r['delta']:g} "
        f"(rho {r['rho']:.5f}), {r['runs']} runs: coverage {r['coverage']:.4f} "
        f"(95% CI over runs {r['coverage_95ci_over_runs'][0]:.4f}-{r['coverage_95ci_over_runs'][1]:.4f}); "
        f"RMSE per cell {r['rmse_residual']:.2f} (per-table Gaussian {r['rmse_per_table']:.2f}, OpenDP "
        f"{r['rmse_opendp']:.2f}); largest shared-margin gap {r['largest_shared_margin_gap']:.1e}; coverage with "
        f"the secure (OpenDP) sampler over {r['secure_runs']} runs {r['secure_coverage']:.4f}",
        "",
        "| table | cells | coverage | stated SE | RMSE residual | RMSE per-table Gaussian | RMSE OpenDP (scale) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for t in r["per_table"]:
        lines.append(
            f"| {t['table']} | {t['cells']} | {t['coverage']:.4f} | {t['stated_se']:.2f} | {t['rmse_residual']:.2f} | "
            f"{t['rmse_per_table']:.2f} | {t['rmse_opendp']:.2f} ({t['opendp_scale']:.2f}) |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--secure-runs", type=int, default=40, help="runs with the production (OpenDP) sampler")
    p.add_argument("--epsilon", type=float, nargs="+", default=[1.0])
    p.add_argument("--delta", type=float, default=1e-6)
    p.add_argument("--tables", default=TABLES)
    p.add_argument("--out", default=None, help="write the results as JSON")
    a = p.parse_args(argv)
    results = [run(eps, a.delta, a.runs, a.tables, a.secure_runs) for eps in a.epsilon]
    for r in results:
        print(markdown(r), end="\n\n")
    if a.out:
        Path(a.out).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
