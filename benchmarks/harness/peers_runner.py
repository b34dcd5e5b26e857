"""Runs one SmartNoise Synth peer on a table of public cell indices (runs in the BENCHMARK venv).

Called by benchmarks/harness/compare.py as a subprocess with the separate environment that has
`smartnoise-synth` (the product never depends on it). Input: a CSV of integer cell indices produced
by dpportal's public schema (numeric columns cut into the schema's public bins), so the peer spends
no epsilon on bounds or binning (preprocessor_eps=0). Output: synthetic cell indices, decoded by the
caller through the same schema.

    .venv-bench/bin/python -m benchmarks.harness.peers_runner --synth mst --cells in.csv --epsilon 1 \
        --delta 1e-5 --rows N --out out.csv
"""

from __future__ import annotations

import argparse
import json
import time

import pandas as pd

from benchmarks.harness.memory import AnonPeak, peak_rss_mib

# Named non-default settings. MWEM's default builds ONE histogram over all columns (10^15 cells and more
# on these tables: it fails to allocate); its docstring's example split_factor=3 groups the columns in
# threes, one histogram per group (independent across groups).
#
# "-r1" variants: MST and AIM calibrated for dpportal's neighbour relation (replace one record), a
# side experiment. Both are rho-zCDP for ADD/REMOVE neighbours. Under replace-one, (a) a Gaussian
# measurement of marginals has L2 sensitivity sqrt(2) instead of 1, so its rho doubles; (b) an
# exponential-mechanism selection (score: L1 error of a marginal) has sensitivity 2 instead of 1, and
# its zCDP cost eps^2/8 quadruples. MST spends rho/3 on 1-way measurements, rho/3 on selection and
# rho/3 on 2-way measurements: 2/3 + 4/3 + 2/3 = 8/3 rho under replace-one. AIM spends 0.9 of each
# round on measurement and 0.1 on selection (its initial 1-way measurements are Gaussian):
# at most 0.9 * 2 + 0.1 * 4 = 2.2 rho. The variants therefore pass the epsilon whose rho (SmartNoise's
# own cdp_rho at the same delta) is the requested one divided by that factor: the requested (epsilon,
# delta) then holds for replace-one neighbours, as it does for dpportal's mechanisms.
VARIANTS = {"mwem-split3": ("mwem", {"split_factor": 3}), "mst-r1": ("mst", {}), "aim-r1": ("aim", {})}
REPLACE_ONE_FACTOR = {"mst-r1": 8 / 3, "aim-r1": 2.2}


def replace_one_epsilon(epsilon: float, delta: float, factor: float) -> float:
    """The epsilon whose SmartNoise zCDP budget is that of ``epsilon`` divided by ``factor`` (bisection)."""
    from snsynth.utils import cdp_rho

    target = cdp_rho(epsilon, delta) / factor
    lo, hi = 0.0, epsilon
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdp_rho(mid, delta) < target else (lo, mid)
    return lo


def public_domain_transformer(df: pd.DataFrame, cardinalities: str | None):
    """A transformer fitted on the PUBLIC domain (every cell index 0..k-1 of every column), not on the data.

    SmartNoise's default (``transformer=None``) fits a label encoder on the private table, so its domain is
    the set of values that occur in the data: a fact dpportal's mechanisms may not use (they know only the
    steward's public bins, where some cells are empty). Fitting the same encoder on a frame that lists the
    public cells gives SmartNoise exactly dpportal's domain.
    """
    if not cardinalities:
        return None
    from snsynth.transform.table import TableTransformer

    sizes = [int(k) for k in cardinalities.split(",")]
    if len(sizes) != df.shape[1]:
        raise SystemExit(f"--cardinalities has {len(sizes)} sizes for {df.shape[1]} columns")
    import numpy as np

    rows = max(sizes)
    domain = pd.DataFrame({c: np.arange(rows) % k for c, k in zip(df.columns, sizes)})
    tt = TableTransformer.create(domain, style="cube", categorical_columns=list(df.columns))
    tt.fit(domain, epsilon=0.0)
    return tt


def raw_table_transformer(df: pd.DataFrame, schema_path: str):
    """SmartNoise's own transformers on the raw table: each numeric column in 10 equal-width bins over the
    PUBLIC bounds of dpportal's schema (BinTransformer, decoded to bin midpoints), each categorical column
    through its LabelTransformer (which learns the category set from the data, as SmartNoise does)."""
    from snsynth.transform import BinTransformer, LabelTransformer
    from snsynth.transform.table import TableTransformer

    schema = json.load(open(schema_path))
    kinds = {c["name"]: c for c in schema["columns"]}
    parts = []
    for name in df.columns:
        c = kinds[name]
        if c["kind"] in ("integer", "continuous"):
            parts.append(BinTransformer(bins=10, lower=c["lower"], upper=c["upper"]))
        else:
            parts.append(LabelTransformer(nullable=False))
    return TableTransformer(parts)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--synth", required=True)
    p.add_argument("--cells", help="a CSV of public cell indices (dpportal's bins)")
    p.add_argument("--raw", help="a raw CSV (kept columns only) with --schema: SmartNoise's own transformers")
    p.add_argument("--schema", help="dpportal schema JSON: public bounds for --raw")
    p.add_argument("--epsilon", type=float, required=True)
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--rows", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument(
        "--cardinalities",
        help="comma-separated public domain size of each column (cells 0..k-1); "
        "without it SmartNoise learns each column's category set from the data",
    )
    a = p.parse_args()
    anon = AnonPeak()
    from snsynth import Synthesizer

    if a.raw:
        df = pd.read_csv(a.raw, dtype=str, keep_default_na=False)
        kinds = {c["name"]: c["kind"] for c in json.load(open(a.schema))["columns"]}
        for name in df.columns:
            if kinds[name] in ("integer", "continuous"):
                df[name] = pd.to_numeric(df[name])
        transformer = raw_table_transformer(df, a.schema)
    else:
        df = pd.read_csv(a.cells)
        transformer = public_domain_transformer(df, a.cardinalities)
    t0 = time.perf_counter()
    name, options = VARIANTS.get(a.synth, (a.synth, {}))
    factor = REPLACE_ONE_FACTOR.get(a.synth)
    epsilon = replace_one_epsilon(a.epsilon, a.delta, factor) if factor else a.epsilon
    kw = {"epsilon": epsilon, "verbose": False, **options}
    if name in ("mst", "aim", "dpctgan", "patectgan"):
        kw["delta"] = a.delta
    synth = Synthesizer.create(name, **kw)
    synth.fit(df, preprocessor_eps=0.0, categorical_columns=list(df.columns), transformer=transformer)
    out = synth.sample(a.rows)
    out.to_csv(a.out, index=False)
    print(
        json.dumps(
            {
                "cpu_seconds": time.process_time(),
                "seconds": time.perf_counter() - t0,
                "epsilon_passed": epsilon,
                "peak_rss_mib": peak_rss_mib(),
                "rss": "hwm",
                "peak_anon_mib": anon.mib(),
            }
        )
    )


if __name__ == "__main__":
    main()
