"""Private bounds (mechanisms/bounds.py) on the shared tables: the data's range beside the DP estimate
and its coverage, per numeric column. Usage: python -m benchmarks.calibration.dp_bounds [EPSILON]

Reads ../shared/datasets (not part of the test suite). The data's minimum and maximum are printed for
comparison only: they are exactly what the estimate avoids publishing.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]

from mechanisms.bounds import estimate_bounds  # noqa: E402
from mechanisms.noise import Noise  # noqa: E402
from mechanisms.draft import draft_schema  # noqa: E402
from mechanisms.source import read_raw_csv  # noqa: E402

DATA = ROOT.parent / "shared" / "datasets"
TABLES = ("adult", "credit_default_taiwan")
MARKERS = ("", "?", "NA")


def main(epsilon: float) -> None:
    for name in TABLES:
        path = DATA / f"{name}.csv"
        raw = read_raw_csv(path)
        cols = [c.name for c in draft_schema(raw).columns if c.kind in ("integer", "continuous")]
        t0 = time.perf_counter()
        res = estimate_bounds(
            read_raw_csv(path, chunksize=100_000),
            cols,
            epsilon=epsilon,
            noise=Noise.secure_backend(),
            markers=MARKERS,
            n=len(raw),
        )
        print(
            f"{name}: {len(raw)} rows, {len(cols)} numeric columns, epsilon {epsilon} "
            f"({res['epsilon_per_column']:.4g} each), threshold {res['threshold']}, "
            f"{time.perf_counter() - t0:.1f} s"
        )
        for c in cols:
            b = res["columns"][c]
            v = pd.to_numeric(raw[c].str.strip(), errors="coerce").dropna()
            print(
                f"  {c:15s} data [{v.min():g}, {v.max():g}]  DP [{b['lower']}, {b['upper']}]  "
                f"coverage {b['coverage']}  {'used' if b['reliable'] else 'not used'}"
            )


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
