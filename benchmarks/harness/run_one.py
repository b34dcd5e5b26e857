"""Run ONE dpportal release in its own process and report time and peak memory (used by compare.py).

python -m benchmarks.harness.run_one MECH --data D.csv --schema S.json --epsilon E [--delta D]
    [--param k=v ...] --rows N --out OUT.csv
"""

from __future__ import annotations

import argparse
import json
import time

from benchmarks.harness.memory import AnonPeak, peak_rss_mib
from mechanisms.io import write_synthetic_csv
from mechanisms.noise import Noise
from mechanisms.runner import build, run
from mechanisms.schema import Schema
from mechanisms.source import TableSource


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("mechanism")
    p.add_argument("--data", required=True)
    p.add_argument("--schema", required=True)
    p.add_argument("--epsilon", type=float, required=True)
    p.add_argument("--delta", type=float, default=0.0)
    p.add_argument("--param", action="append", default=[])
    p.add_argument("--rows", type=int, required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    anon = AnonPeak()
    schema = Schema.from_json(open(a.schema).read())
    params = dict(kv.split("=", 1) for kv in a.param)
    mech = build(a.mechanism, schema, epsilon=a.epsilon, delta=a.delta, params=params, noise=Noise.secure_backend())
    t0 = time.perf_counter()
    release = run(mech, TableSource(schema, path=a.data), a.rows)
    seconds = time.perf_counter() - t0
    write_synthetic_csv(release.synthetic, a.out, schema)
    print(
        json.dumps(
            {
                "cpu_seconds": time.process_time(),
                "seconds": seconds,
                "fit_seconds": release.seconds_fit,
                "peak_rss_mib": peak_rss_mib(),
                "rss": "hwm",
                "peak_anon_mib": anon.mib(),
            }
        )
    )


if __name__ == "__main__":
    main()
