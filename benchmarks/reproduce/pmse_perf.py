"""pMSE mechanism performance: the target release and scaling in n and d (one core).

1. Target: ε = 1, n = 5000, d = 2, paper-mode trees of depth 5 (cp 0.01), m = 5, burn-in 1000
   (strict-utility warm-up, annealed) + 1500 depth-5 iterations; and the default strict release
   (burn-in 1000 + 2000 iterations). Fit seconds, split-half mixing statistic, where time goes.
2. Scaling: seconds per utility evaluation (median of a few) for n ∈ {5000, 50000} and
   d ∈ {2, 5, 10}, strict (pairwise features) and paper depth 5; a default chain is
   burn_in + iterations = 3000 evaluations.

    OMP_NUM_THREADS=1 python -m benchmarks.reproduce.pmse_perf [--quick]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks.reproduce.pmse_common import ols, paper_data, release, split_half_gap, write_markdown  # noqa: E402
from mechanisms.synthesizers.pmse import LinearGaussianModel, PMSEUtility, tree_settings  # noqa: E402


def utility_seconds(n: int, d: int, tree: str, m: int = 5, evals: int = 3) -> tuple[float, float]:
    """Median CPU seconds per utility evaluation and the share spent generating synthetic data."""
    rng = np.random.default_rng(d)
    A = rng.normal(size=(d, d)) / np.sqrt(d)
    X = np.clip(0.5 + 0.12 * rng.normal(size=(n, d)) @ A, 0, 1)
    model = LinearGaussianModel(d, lambda v, j: np.clip(v, 0.0, 1.0))
    Z = rng.standard_normal((m, n, d))
    depth, alpha = tree_settings(tree, 5, 0.01, n)
    u = PMSEUtility(X, model, Z, depth=depth, alpha=alpha, pairwise=(tree == "strict"))
    theta = model.initial()
    theta[:d] = 0.5
    theta[-d:] = np.log(0.12**2)
    times, gen = [], []
    for _ in range(evals):  # CPU time of this (single-threaded) process
        t0 = time.process_time()
        model.generate(theta, Z)
        t1 = time.process_time()
        u(theta)
        t2 = time.process_time()
        times.append(t2 - t1)
        gen.append(t1 - t0)
    return float(np.median(times)), float(np.median(gen) / np.median(times))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="shorter chains, scaling at n = 5000 only")
    args = ap.parse_args(argv)
    lines = [
        "pMSE mechanism performance (shared 2-core machine, one thread; CPU seconds of the process, "
        "and wall-clock for the fits)",
        "",
    ]
    df = paper_data(5000, np.random.default_rng(0))
    runs = [
        (
            "paper depth 5, cp 0.01, burn-in 1000 + 1500",
            dict(tree="paper", depth=5, features="columns", burn_in=1000, iterations=1500),
        ),
        ("strict + pairwise (defaults), burn-in 1000 + 2000", dict()),
    ]
    if args.quick:
        runs = [(lab + " [quick: 200+100]", dict(p, burn_in=200, iterations=100)) for lab, p in runs]
    lines += [
        "Target release: ε = 1, n = 5000, d = 2, m = 5",
        "",
        "| configuration | fit CPU s | fit wall s | split-half gap | slope (true 0.5) |",
        "|---|---|---|---|---|",
    ]
    for label, params in runs:
        mech, secs = release(df, 1.0, seed=1, **params)
        slope = ols(mech.sample(50_000))[1]
        gap = split_half_gap(mech.diagnostics["trace"])
        lines.append(f"| {label} | {mech.cpu_seconds:.1f} | {secs:.1f} | {gap:.2f} | {slope:.3f} |")
        print(lines[-1], flush=True)
    lines += [
        "",
        "CPU seconds per utility evaluation (m = 5; median of 3), share generating synthetic data; "
        "a default strict chain is 3000 evaluations",
        "",
        "| n | d | strict+pairwise s/eval | gen share | paper depth 5 s/eval | gen share |",
        "|---|---|---|---|---|---|",
    ]
    for n in (5000,) if args.quick else (5000, 50_000):
        for d in (2, 5, 10):
            s_t, s_g = utility_seconds(n, d, "strict")
            p_t, p_g = utility_seconds(n, d, "paper")
            lines.append(f"| {n} | {d} | {s_t:.3f} | {s_g:.0%} | {p_t:.3f} | {p_g:.0%} |")
            print(lines[-1], flush=True)
    print("\n".join(lines))
    print("written", write_markdown("pmse_perf.md", lines))


if __name__ == "__main__":
    main()
