"""DP-MERF: generator training speed on adult (D = 1000) with 1 vs all torch threads.

The default generator for adult is tiny ((56, 28) hidden units), so intra-op threading has little to
split; on a machine shared with other jobs, torch's spinning worker threads can make 2 threads much
SLOWER than 1. This measures seconds per training step (wall and CPU) for each thread count, with
the load average at the time (the numbers only mean something next to it).

    python -m benchmarks.reproduce.dpmerf_threads              # 300 steps per setting
    python -m benchmarks.reproduce.dpmerf_threads --quick      # 50 steps
"""

from __future__ import annotations

import argparse
import json
import os
import time

from benchmarks.reproduce.dpmerf_table1 import load
from mechanisms.synthesizers.dpmerf import DPMERF, THREADS_ENV
from mechanisms.noise import Noise
from mechanisms.source import TableSource


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=300)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    epochs = 50 if args.quick else args.epochs
    schema, raw, _ = load("adult")
    cores = len(os.sched_getaffinity(0))
    rows = []
    for threads in sorted({1, cores}):
        os.environ[THREADS_ENV] = str(threads)
        mech = DPMERF(schema, epsilon=1.0, delta=1e-5, noise=Noise.seeded(0), target="income", epochs=epochs)
        mech.fit(TableSource.from_frame(schema, raw))
        t0, c0 = time.perf_counter(), time.process_time()
        mech._train()  # training only (post-processing), timed alone
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        rows.append(
            {
                "threads": threads,
                "steps": epochs,
                "wall_s_per_step": wall / epochs,
                "cpu_s_per_step": cpu / epochs,
                "load_average": os.getloadavg(),
            }
        )
        print(json.dumps(rows[-1]), flush=True)


if __name__ == "__main__":
    main()
