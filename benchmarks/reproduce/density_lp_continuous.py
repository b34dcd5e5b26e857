"""density-lp: the continuous case (Bojkovic & Loh Section IV), Bernstein mu vs uniform mu on [0,1]^2.

Data: n = 20,000 points from a smooth, correlated density on [0,1]^2 bounded away from 0 (the
theorem's tau > 0): with probability 0.9 a point (u, clip(0.35 + 0.5 u + 0.1 N(0,1))) with u ~
Beta(2,3), else uniform. Schema: two continuous columns on [0,1], 10 public bins each; F = all
1- and 2-way marginal cells (degree 2, i.e. the 10 x 10 joint histogram). m = 20,000, 20,000 synthetic
rows, eps in {0.5, 1, 2} (half on mu for bernstein).

Measures: t*; max cell error of the 10 x 10 LP histogram; TVD on finer 20 x 20 and 40 x 40 grids (what mu adds
inside the LP's bins); mean 1-D Wasserstein-1 distance of the two coordinates; fit seconds.

    python -m benchmarks.reproduce.density_lp_continuous [--quick]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy.stats import wasserstein_distance  # noqa: E402

from mechanisms.synthesizers.density_lp import DensityLP  # noqa: E402
from mechanisms.noise import Noise  # noqa: E402
from mechanisms.schema import Column, Schema  # noqa: E402
from mechanisms.source import TableSource  # noqa: E402

N, M, ROWS = 20_000, 20_000, 20_000
OUT = Path("benchmarks/out")
SCHEMA = Schema(columns=tuple(Column(name=f"x{j}", kind="continuous", lower=0.0, upper=1.0, bins=10) for j in range(2)))


def smooth_data(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    u = rng.beta(2, 3, n)
    v = np.clip(0.35 + 0.5 * u + 0.1 * rng.normal(size=n), 0, 1)
    noise_rows = rng.random(n) < 0.1
    x = np.column_stack([u, v])
    x[noise_rows] = rng.random((noise_rows.sum(), 2))
    return x


def grid_tvd(a: np.ndarray, b: np.ndarray, bins: int) -> float:
    ha = np.histogram2d(a[:, 0], a[:, 1], bins=bins, range=[[0, 1], [0, 1]])[0] / len(a)
    hb = np.histogram2d(b[:, 0], b[:, 1], bins=bins, range=[[0, 1], [0, 1]])[0] / len(b)
    return float(0.5 * np.abs(ha - hb).sum())


def run_one(reference: str, epsilon: float, seed: int, x: np.ndarray) -> dict:
    raw = pd.DataFrame({"x0": x[:, 0].astype(str), "x1": x[:, 1].astype(str)})
    mech = DensityLP(SCHEMA, epsilon=epsilon, noise=Noise.seeded(seed), reference=reference, m=M)
    t0 = time.perf_counter()
    mech.fit(TableSource.from_frame(SCHEMA, raw))
    fit_s = time.perf_counter() - t0
    y = mech.sample(ROWS).to_numpy(dtype=float)
    h10 = np.histogram2d(x[:, 0], x[:, 1], bins=10, range=[[0, 1], [0, 1]])[0] / len(x)
    s10 = np.histogram2d(y[:, 0], y[:, 1], bins=10, range=[[0, 1], [0, 1]])[0] / len(y)
    rep = mech.report()
    return {
        "reference": reference,
        "epsilon": epsilon,
        "seed": seed,
        "t_star": round(rep["t_star"], 4),
        "max_cell_err_10x10": round(float(np.abs(h10 - s10).max()), 4),
        "tvd_20x20": round(grid_tvd(x, y, 20), 4),
        "tvd_40x40": round(grid_tvd(x, y, 40), 4),
        "w1_mean": round(float(np.mean([wasserstein_distance(x[:, j], y[:, j]) for j in range(2)])), 4),
        "fit_s": round(fit_s, 2),
        "lattice": rep.get("bernstein_lattice"),
        "bandwidth": rep.get("bernstein_bandwidth"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="eps = 1 only, one seed")
    args = ap.parse_args()
    epsilons = (1.0,) if args.quick else (0.5, 1.0, 2.0)
    seeds = (0,) if args.quick else (0, 1)
    results = []
    for seed in seeds:
        x = smooth_data(N, seed)
        for eps in epsilons:
            for reference in ("uniform", "bernstein"):
                res = run_one(reference, eps, seed, x)
                results.append(res)
                print(json.dumps(res), flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / ("density_lp_continuous" + ("_quick" if args.quick else "") + ".json")).write_text(
        json.dumps(results, indent=1)
    )


if __name__ == "__main__":
    main()
