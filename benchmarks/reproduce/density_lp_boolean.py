"""density-lp: reproduce Bojkovic & Loh App. C-C (Boolean data, uniform vs perturbed-histogram mu).

Setup as in the paper: X uniform on {0,1}^p, F = all marginals up to degree d = 2, eps = 0.2,
delta = 0.5, gamma = 0.25; n, k, m at the lower bounds of Theorem B.1 (uniform mu, eps-DP) and
Corollary III.1.1 (histogram mu, 2 eps-DP), with |F| = C(p, <=2) as the paper counts it and the
unknown constants C1 = C2 = 1 in K. n reaches 1e8 for p = 8, so the data enter as cell counts
(a multinomial draw; ``DensityLP.fit_counts``).

Per p and mu: fit seconds (all of Algorithm 1), LP seconds, LP size, t*, and the error of the
synthetic data: max over all degree <= 2 marginal cells of |synthetic mean - data mean| for the k rows
the theorem asks for (``err_k``) and for 200,000 rows (``err_h``, i.e. of h* itself). The paper's LP
has one variable per reference point; ours merges points with equal cells (an equivalent LP): both
are timed ("paper LP" up to PAPER_LP_MAX_M points).

    python -m benchmarks.reproduce.density_lp_boolean [--quick]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import mechanisms.synthesizers.density_lp as dlp  # noqa: E402
from mechanisms.noise import Noise  # noqa: E402
from mechanisms.schema import Column, Schema  # noqa: E402

EPS, DELTA, GAMMA, DEGREE = 0.2, 0.5, 0.25, 2
PAPER_LP_MAX_M = 60_000
OUT = Path("benchmarks/out")


def sizes_for(p: int, mu: str) -> dict:
    f = sum(math.comb(p, j) for j in range(DEGREE + 1))  # |F| = C(p, <= d), as in the paper
    omega = 2**p
    log_f = math.log(f / GAMMA)
    n_dp = 2 * f / (EPS * DELTA) * log_f
    k = math.ceil(log_f / DELTA**2)
    if mu == "uniform":  # Theorem B.1
        n = max(n_dp, k)
        m = omega * f / (DELTA**2 * GAMMA)
    else:  # Corollary III.1.1
        lfd = math.log(f / DELTA)
        n = max(
            n_dp,
            (8 * omega**3 + 16 * omega**2 * math.log(1 / GAMMA)) / (GAMMA * lfd),
            16 * DELTA * omega**2 * math.log(omega) / (GAMMA * lfd),
            k,
        )
        K = math.sqrt(1 + math.sqrt(2 * math.log(1 / GAMMA) / n) + math.sqrt(omega / n)) * math.sqrt(
            1 + 2 * DELTA * omega * math.log(omega) / (GAMMA * n * lfd)
        )
        m = 2 * K * f / (DELTA**2 * GAMMA)
    return {"F_paper": f, "n": math.ceil(n), "k": k, "m": math.ceil(m)}


def max_marginal_error(rows: np.ndarray, cells: np.ndarray, counts: np.ndarray, sizes, tables) -> float:
    true = dlp.marginal_counts(cells, sizes, tables, weights=counts) / counts.sum()
    syn = dlp.marginal_counts(rows, sizes, tables) / len(rows)
    return float(np.max(np.abs(true - syn)))


def run_one(p: int, mu: str, seed: int, paper_lp: bool) -> dict:
    sz = sizes_for(p, mu)
    schema = Schema(columns=tuple(Column(name=f"b{j}", kind="categorical", categories=("0", "1")) for j in range(p)))
    rng = np.random.default_rng(seed)
    omega = 2**p
    counts_all = rng.multinomial(sz["n"], np.full(omega, 1.0 / omega))
    keep = counts_all > 0
    cells = np.column_stack(np.unravel_index(np.flatnonzero(keep), [2] * p)).astype(np.int64)
    counts = counts_all[keep]
    eps_total = EPS if mu == "uniform" else 2 * EPS  # the paper's 2 eps for the histogram variant
    out = {"p": p, "mu": mu, "epsilon_total": eps_total, **sz}
    for label, grouped in (("ours", True), ("paper_lp", False)):
        if label == "paper_lp" and (not paper_lp or sz["m"] > PAPER_LP_MAX_M):
            continue
        mech = dlp.DensityLP(
            schema, epsilon=eps_total, noise=Noise.seeded(seed), reference=mu, m=sz["m"], degree=DEGREE, split=0.5
        )
        mech.group_reference = grouped
        t0 = time.perf_counter()
        mech.fit_counts(cells, counts)
        fit_s = time.perf_counter() - t0
        rep = mech.report()
        out[f"{label}_fit_s"] = round(fit_s, 3)
        out[f"{label}_lp_s"] = rep["solve_seconds"]
        out[f"{label}_lp_columns"] = rep["lp_columns"]
        out[f"{label}_t_star"] = round(rep["t_star"], 4)
        if grouped:
            tables = mech.tables
            rows_k = mech.schema.to_cells(mech.sample(sz["k"]))
            rows_h = mech.schema.to_cells(mech.sample(200_000))
            out["err_k"] = round(max_marginal_error(rows_k, cells, counts, [2] * p, tables), 4)
            out["err_h"] = round(max_marginal_error(rows_h, cells, counts, [2] * p, tables), 4)
            out["mean_noise_scale"] = rep["marginal_mean_scale"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="p in 2..5, one repetition")
    ap.add_argument("--reps", type=int, default=None)
    args = ap.parse_args()
    ps = range(2, 6) if args.quick else range(2, 9)
    reps = args.reps or (1 if args.quick else 2)
    results = []
    for p in ps:
        for mu in ("uniform", "histogram"):
            for r in range(reps):
                res = run_one(p, mu, seed=100 * p + r, paper_lp=True)
                results.append(res)
                print(json.dumps(res), flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    name = "density_lp_boolean" + ("_quick" if args.quick else "")
    (OUT / f"{name}.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
