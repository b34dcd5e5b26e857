"""KD-tree performance goals.

1. adaptive: kdtree-adaptive on the G.1 mixture in d = 10, n = 1,000,000: fit + sample 1,000,000 rows,
   SECURE noise (OpenDP), one core, wall time and peak resident memory of the process.
2. grid40: kdtree-grid with 10^40 cells (d = 10, width 1e-4): fit time against n, and against the number
   of surviving empty cells (threshold lowered so that about m empty cells survive).

    python -m benchmarks.reproduce.kdtree_perf            # full (n = 1e6); ~1-2 minutes
    python -m benchmarks.reproduce.kdtree_perf --quick    # n = 1e5
"""

from __future__ import annotations

import argparse
import json
import math
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from benchmarks.reproduce.kdtree_common import G1_BOUNDS, g1_mixture, numeric_schema, numeric_source, timer  # noqa: E402
from benchmarks.harness.memory import peak_rss_mib  # noqa: E402
from mechanisms.synthesizers.kdtree import KDTreeAdaptive, KDTreeGrid, dlap_tail  # noqa: E402
from mechanisms.noise import Noise  # noqa: E402


def bench_adaptive(n: int, d: int = 10, epsilon: float = 1.0, params: dict | None = None) -> dict:
    X = g1_mixture(n, d)
    schema = numeric_schema(d, *G1_BOUNDS)
    src = numeric_source(schema, X)
    del X
    rss0 = peak_rss_mib()
    mech = KDTreeAdaptive(schema, epsilon=epsilon, noise=Noise.secure_backend(), **(params or {}))
    t = timer()
    mech.fit(src)
    t_fit = t()
    syn = mech.sample(n)
    t_all = t()
    rep = mech.report()
    return {
        "bench": "adaptive",
        "params": params or "defaults",
        "n": n,
        "d": d,
        "epsilon": epsilon,
        "noise": "secure (OpenDP)",
        "fit_s": round(t_fit, 2),
        "sample_s": round(t_all - t_fit, 2),
        "fit_plus_sample_s": round(t_all, 2),
        "peak_rss_mib": round(peak_rss_mib(), 1),
        "rss_before_fit_mib": round(rss0, 1),
        "rows": len(syn),
        "noised_values": mech.noise.draws,
        "decision_counts_noised": mech.diagnostics["decision_counts_noised"],
        "nonempty_leaves": mech.diagnostics["nonempty_leaves"],
        "released_cells": rep["released_cells"],
        "h": rep["config"]["levels_independent"],
        "h_adaptive": rep["config"]["levels_adaptive"],
        "tau": round(rep["config"]["tau"], 1),
    }


def atoms_data(n: int, d: int, atoms: int = 50) -> np.ndarray:
    """n rows on `atoms` random points of the unit cube (so some 10^-4-wide cells are heavy)."""
    rs = np.random.RandomState(3)
    return rs.random_sample((atoms, d))[rs.randint(0, atoms, size=n)]


def bench_grid40(n: int, expected_empty: float | None, d: int = 10, epsilon: float = 1.0) -> dict:
    schema = numeric_schema(d, 0.0, 1.0)
    src = numeric_source(schema, atoms_data(n, d))
    params = {"width": 1e-4}
    if expected_empty is not None:  # choose t so that J * P[DLap(2/ε) >= t] ≈ expected_empty
        J = 10**40
        params["threshold"] = 2.0 / epsilon * math.log(J / (2 * expected_empty))
    mech = KDTreeGrid(schema, epsilon=epsilon, noise=Noise.secure_backend(), **params)
    t = timer()
    mech.fit(src)
    t_fit = t()
    rep = mech.report()
    return {
        "bench": "grid40",
        "n": n,
        "cells": rep["config"]["cells"],
        "threshold": round(rep["config"]["threshold"], 1),
        "expected_empty": float(10**40 * dlap_tail(rep["config"]["count_scale"], rep["config"]["T"])),
        "fit_s": round(t_fit, 3),
        "released_cells": rep["released_cells"],
        "released_empty_cells": mech.diagnostics["released_empty_cells"],
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", choices=("adaptive", "grid40"), default=None)
    args = ap.parse_args(argv)
    results = []
    bench_grid40(1000, None)  # warm-up: OpenDP import and first-call costs are not the mechanism's
    if args.only in (None, "grid40"):
        ns = (10_000, 100_000) if args.quick else (10_000, 100_000, 1_000_000)
        for n in ns:
            results.append(bench_grid40(n, None))
            print(json.dumps(results[-1]), flush=True)
        for m in (100, 10_000) if args.quick else (100, 10_000, 100_000):
            results.append(bench_grid40(100_000, m))
            print(json.dumps(results[-1]), flush=True)
    if args.only in (None, "adaptive"):
        for params in (None, {"levels_independent": 40, "levels_adaptive": 5, "split": 0.3}):  # + Fig. 3c's tuning
            results.append(bench_adaptive(100_000 if args.quick else 1_000_000, params=params))
            print(json.dumps(results[-1]), flush=True)


if __name__ == "__main__":
    main()
