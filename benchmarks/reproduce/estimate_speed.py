"""Compile and iteration time of one Private-PGM estimate at XLA optimisation levels 0 and 2
(``pgm.optimisation_level``; the figures in docs/mechanisms/aim.md, "Speed").

    python -m benchmarks.reproduce.estimate_speed [--mib 1 4 20] [--iters 250]

For each size, a model of credit_default_taiwan's public domain (24 columns) with every 1-way
marginal and random pairs added while the junction tree stays under the size (random noisy counts:
no data is read), then, in a fresh process per level and size, pgm.estimate twice on one thread:
compile + ``iters`` iterations, then ``iters`` iterations of the compiled program.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import time

import numpy as np

from benchmarks.harness.compare import ONE_THREAD, ROOT


def one(mib: float, iters: int, level: int) -> dict:
    from mechanisms import pgm
    from mechanisms.schema import Schema

    schema = Schema.from_json((ROOT / "benchmarks" / "schemas" / "credit_default_taiwan.json").read_text())
    names, sizes = schema.names, dict(zip(schema.names, schema.cell_sizes))
    tree = pgm.JunctionTreeSize(names, schema.cell_sizes)
    rng = np.random.default_rng(0)
    pairs = list(itertools.combinations(names, 2))
    rng.shuffle(pairs)
    chosen: list[tuple[str, ...]] = []
    ones = [(a,) for a in names]
    for p in pairs:
        if tree.size_mb(ones + chosen + [p]) <= mib:
            chosen.append(p)
    size = tree.size_mb(ones + chosen)
    pgm.OPTIMISE_MIB_ITERS = 0.0 if level == 2 else float("inf")
    mbi = pgm.load_mbi()
    import jax

    log = pgm.Measurements()
    for cl in ones + chosen:
        k = int(np.prod([sizes[a] for a in cl]))
        log.add(pgm.Measurement(cl, rng.random(k) * 30000 / k, 20.0))
    m0 = pgm.estimate(mbi, sizes, names, log, total=30000, iters=10)
    times = []
    for _ in range(2):
        t = time.perf_counter()
        m0 = pgm.estimate(mbi, sizes, names, log, total=30000, iters=iters, warm_start=m0)
        jax.block_until_ready(m0.marginals)
        times.append(time.perf_counter() - t)
    return {
        "mib": round(size, 2),
        "pairs": len(chosen),
        "iters": iters,
        "level": level,
        "compile_s": round(times[0] - times[1], 2),
        "iterations_s": round(times[1], 2),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", nargs="*", type=float, default=[1.0, 4.0, 20.0])
    ap.add_argument("--iters", type=int, default=250)
    ap.add_argument("--one", nargs=3, type=float, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.one:
        print(json.dumps(one(a.one[0], int(a.one[1]), int(a.one[2]))))
        return 0
    env = {**os.environ, **ONE_THREAD, "PYTHONWARNINGS": "ignore"}
    print("| model MiB | pairs | iterations | level | compile s | iterations s |\n|---|---|---|---|---|---|")
    for mib in a.mib:
        for level in (0, 2):
            out = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "benchmarks.reproduce.estimate_speed",
                    "--one",
                    str(mib),
                    str(a.iters),
                    str(level),
                ],
                env=env,
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=True,
            )
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print(
                f"| {r['mib']} | {r['pairs']} | {r['iters']} | {r['level']} | {r['compile_s']} | {r['iterations_s']} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
