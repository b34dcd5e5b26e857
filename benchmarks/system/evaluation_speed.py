"""Benchmark: evaluation of a 100k-row, 20-column release (goal: < 60 s).

    nice .venv/bin/python -m benchmarks.system.evaluation_speed [--rows 100000] [--fast] [--no-target]

Builds a correlated table (10 numeric, 10 categorical columns, a binary target among them) and a
"synthetic" table from a perturbed version of the same generator, then times
:func:`mechanisms.evaluation.utility.evaluate` with the target set (TSTR included). Prints JSON with the total
and per-stage seconds.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pandas as pd

from mechanisms.evaluation.utility import evaluate
from mechanisms.schema import Column, Schema

N_NUMERIC = 10
N_CATEGORICAL = 10
LEVELS = 8


def make_schema() -> Schema:
    cols = [
        Column(name=f"x{i}", kind="continuous" if i % 2 else "integer", lower=0.0, upper=100.0, bins=20)
        for i in range(N_NUMERIC)
    ]
    cols += [
        Column(name=f"c{i}", kind="categorical", categories=tuple(f"v{k}" for k in range(LEVELS)))
        for i in range(N_CATEGORICAL - 1)
    ]
    cols.append(Column(name="label", kind="categorical", categories=("no", "yes")))
    return Schema(columns=tuple(cols))


def make_table(schema: Schema, n: int, rng: np.random.Generator, shift: float = 0.0) -> pd.DataFrame:
    z = rng.normal(size=(n, 3))
    out = {}
    for i in range(N_NUMERIC):
        v = 50 + 15 * (z[:, i % 3] + shift) + 5 * rng.normal(size=n)
        out[f"x{i}"] = np.clip(np.rint(v) if i % 2 == 0 else v, 0, 100)
    for i in range(N_CATEGORICAL - 1):
        u = z[:, i % 3] + rng.normal(size=n)
        codes = np.clip(((u + 3) / 6 * LEVELS).astype(int), 0, LEVELS - 1)
        out[f"c{i}"] = np.array([f"v{k}" for k in range(LEVELS)], dtype=object)[codes]
    out["label"] = np.where(z[:, 0] + z[:, 1] + rng.normal(size=n) > 0.5, "yes", "no").astype(object)
    return pd.DataFrame(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--fast", action="store_true")
    ap.add_argument("--no-target", action="store_true")
    args = ap.parse_args()
    schema = make_schema()
    rng = np.random.default_rng(0)
    real = make_table(schema, args.rows, rng)
    syn = make_table(schema, args.rows, rng, shift=0.1)
    t0, c0 = time.perf_counter(), time.process_time()
    res = evaluate(schema, real, syn, target=None if args.no_target else "label", fast=args.fast)
    total, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(
        json.dumps(
            {
                "rows": args.rows,
                "columns": len(schema.names),
                "fast": args.fast,
                "target": not args.no_target,
                "seconds": round(total, 2),
                "cpu_seconds": round(cpu, 2),
                "stages": res["timings"],
                "tstr_model_seconds": {
                    f"{m['model']} ({m['train']})": m.get("seconds") for m in (res["ml"] or {}).get("models", [])
                },
                "summary": res["summary"],
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
