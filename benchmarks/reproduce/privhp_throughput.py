"""PrivHP throughput and peak memory (goal: >= 1,000,000 rows/s for d <= 4, one core).

For d in (1, 2, 4): a stream of n rows (default 10,000,000) on [0,1]^d is fed to ``PrivHP.fit`` through a
TableSource-like object that yields PREPARED chunks (the CSV parsing of ``TableSource`` is not part of
the mechanism). The chunks are generated once (8 distinct chunks, cycled) so that generation is not
timed. Each d runs in its own subprocess; the table reports

* stream rows/s: rows / seconds spent in the per-chunk update (Algorithm 1 lines 4-8),
* fit rows/s: rows / whole ``fit`` seconds (noise drawn with the SEEDED backend, pass, consistency, growing),
* peak RSS of the subprocess (VmHWM, ``benchmarks/harness/memory.py``), and PrivHP's own ``memory_estimate``.

Secure (OpenDP) noise for the initial structure is timed once separately (it does not depend on n).
``--csv`` also times the file path the web worker uses (a CSV of n/5 rows read by ``TableSource.chunks``).

    python -m benchmarks.reproduce.privhp_throughput            # n = 10,000,000
    python -m benchmarks.reproduce.privhp_throughput --quick    # n = 1,000,000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

CHILD = r"""
import json, sys, time
import numpy as np, pandas as pd
from benchmarks.harness.memory import peak_rss_mib
from mechanisms.noise import Noise
from mechanisms.synthesizers.privhp import PrivHP
from mechanisms.schema import Column, Schema

d, n, chunk, secure = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
schema = Schema(columns=tuple(Column(f"x{i}", "continuous", lower=0.0, upper=1.0) for i in range(d)))
rng = np.random.default_rng(0)
pool = [pd.DataFrame({f"x{i}": rng.beta(2, 8, chunk) for i in range(d)}) for _ in range(8)]
base_rss_mib = peak_rss_mib()

class Prepared:
    def __init__(self): self.n, self.schema = n, schema
    def frame(self): raise AssertionError("frame() must not be called")
    def chunks(self, size):
        assert size == chunk
        for s in range(0, n, chunk):
            yield pool[(s // chunk) % len(pool)].iloc[: min(chunk, n - s)]

mech = PrivHP(schema, epsilon=1.0, noise=Noise.secure_backend() if secure else Noise.seeded(1), chunk_rows=chunk)
timing = {"update": 0.0}
update = mech._update
def timed(state, frame):
    t = time.perf_counter(); update(state, frame); timing["update"] += time.perf_counter() - t
mech._update = timed
t0 = time.perf_counter()
mech.fit(Prepared())
fit = time.perf_counter() - t0
print(json.dumps({"d": d, "n": n, "chunk_rows": chunk, "secure_noise": secure, "fit_s": round(fit, 2),
                  "stream_s": round(timing["update"], 2), "stream_rows_per_s": round(n / timing["update"]),
                  "fit_rows_per_s": round(n / fit), "peak_rss_mb": round(peak_rss_mib(), 1),
                  "rss_before_fit_mb": round(base_rss_mib, 1),
                  "memory_estimate_mb": round(PrivHP.memory_estimate(schema, n, {"chunk_rows": chunk}) / 2**20, 1),
                  "plan": {k: v for k, v in mech.plan.to_dict().items() if k != "sigma"}}))
"""


def run(d: int, n: int, chunk: int, secure: bool) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(d), str(n), str(chunk), "1" if secure else "0"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


CSV_CHILD = r"""
import sys, tempfile, time, os
import numpy as np, pandas as pd
from benchmarks.harness.memory import peak_rss_mib
from mechanisms.noise import Noise
from mechanisms.synthesizers.privhp import PrivHP
from mechanisms.schema import Column, Schema
from mechanisms.source import TableSource
n = int(sys.argv[1])
schema = Schema(
    columns=(Column("x", "continuous", lower=0.0, upper=1.0), Column("y", "continuous", lower=0.0, upper=1.0))
)
path = os.path.join(tempfile.mkdtemp(), "stream.csv")
rng = np.random.default_rng(0)
for s in range(0, n, 1_000_000):
    m = min(1_000_000, n - s)
    chunk = pd.DataFrame({"x": rng.beta(2, 8, m).round(6), "y": rng.random(m).round(6)})
    chunk.to_csv(path, mode="a", header=s == 0, index=False)
mech = PrivHP(schema, epsilon=1.0, noise=Noise.seeded(1))
t = time.perf_counter()
mech.fit(TableSource(schema, path=path, n=n))
dt = time.perf_counter() - t
os.remove(path)
print(f"| 2 | {n:,} | CSV via TableSource.chunks (pandas parse + prepare), chunk 100,000 | {n / dt:,.0f} rows/s | "
      f"fit {dt:.1f} s | peak RSS {peak_rss_mib():.0f} MiB |")
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--chunk", type=int, default=1_000_000)
    ap.add_argument("--csv", action="store_true", help="also time the CSV path (TableSource) on n/5 rows")
    args = ap.parse_args()
    n = 1_000_000 if args.quick else 10_000_000
    rows = [run(d, n, args.chunk, secure=False) for d in (1, 2, 4)]
    rows.append(run(2, n, args.chunk, secure=True))
    csv_line = None
    if args.csv:
        out = subprocess.run(
            [sys.executable, "-c", CSV_CHILD, str(n // 5)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONPATH": os.getcwd()},
        )
        csv_line = out.stdout.strip()
    print(
        "| d | rows | noise | stream rows/s | fit rows/s | fit s | peak RSS MB (before fit) | estimate MB | r, L*, "
        "k, w, j |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        p = r["plan"]
        print(
            f"| {r['d']} | {r['n']:,} | {'secure' if r['secure_noise'] else 'seeded'} | {r['stream_rows_per_s']:,} | "
            f"{r['fit_rows_per_s']:,} | {r['fit_s']} | {r['peak_rss_mb']} ({r['rss_before_fit_mb']}) | "
            f"{r['memory_estimate_mb']} | {p['depth']}, {p['pruning_level']}, {p['k']}, {p['width']}, "
            f"{p['sketch_depth']} |"
        )
    if csv_line:
        print()
        print(csv_line)
    print(json.dumps(rows))


if __name__ == "__main__":
    t = time.perf_counter()
    main()
    print(f"total {time.perf_counter() - t:.1f} s", file=sys.stderr)
