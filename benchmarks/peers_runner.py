"""Runs one SmartNoise Synth peer on a table of public cell indices (runs in the BENCHMARK venv).

Called by benchmarks/compare.py as a subprocess with the separate environment that has
`smartnoise-synth` (the product never depends on it). Input: a CSV of integer cell indices produced
by dpportal's public schema (numeric columns cut into the schema's public bins), so the peer spends
no epsilon on bounds or binning (preprocessor_eps=0). Output: synthetic cell indices, decoded by the
caller through the same schema.

    python benchmarks/peers_runner.py --synth mst --cells in.csv --epsilon 1 --delta 1e-5 --rows N --out out.csv
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # runs as a script in the bench venv
from memory import peak_rss_mib  # noqa: E402

# Named non-default settings. MWEM's default builds ONE histogram over all columns (10^15 cells and more
# on these tables: it fails to allocate); its docstring's example split_factor=3 groups the columns in
# threes, one histogram per group (independent across groups).
VARIANTS = {"mwem-split3": ("mwem", {"split_factor": 3})}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--synth", required=True)
    p.add_argument("--cells", required=True)
    p.add_argument("--epsilon", type=float, required=True)
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--rows", type=int, required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    from snsynth import Synthesizer

    df = pd.read_csv(a.cells)
    t0 = time.perf_counter()
    name, options = VARIANTS.get(a.synth, (a.synth, {}))
    kw = {"epsilon": a.epsilon, "verbose": False, **options}
    if name in ("mst", "aim", "dpctgan", "patectgan"):
        kw["delta"] = a.delta
    synth = Synthesizer.create(name, **kw)
    synth.fit(df, preprocessor_eps=0.0, categorical_columns=list(df.columns))
    out = synth.sample(a.rows)
    out.to_csv(a.out, index=False)
    print(json.dumps({"seconds": time.perf_counter() - t0,
                      "peak_rss_mib": peak_rss_mib(), "rss": "hwm"}))


if __name__ == "__main__":
    main()
